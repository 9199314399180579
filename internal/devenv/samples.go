package devenv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The samples point at peers on this machine: the example stream bot
// (Agent stream-echo), the stand-in model (Agent reservations-llm) and a
// SIP callee (SIPTrunk local-pbx). Each address can be moved, and the
// samples follow.
const (
	// StreamBotAddrEnv moves the example stream bot, and the sample Agent
	// that streams to it.
	StreamBotAddrEnv = "SWITCHBOARD_STREAMBOT_ADDR"
	// SampleTrunkAddrEnv moves the sample SIPTrunk's callee.
	SampleTrunkAddrEnv = "SWITCHBOARD_SAMPLE_TRUNK_ADDR"
	// StandInModelAddrEnv moves the stand-in model server, and the sample
	// Agent that converses with it.
	StandInModelAddrEnv = "SWITCHBOARD_STANDIN_MODEL_ADDR"
	// DefaultStreamBotAddr and DefaultSampleTrunkAddr are the addresses the
	// sample files name.
	DefaultStreamBotAddr    = "127.0.0.1:8090"
	DefaultSampleTrunkAddr  = "127.0.0.1:5070"
	DefaultStandInModelAddr = "127.0.0.1:8091"
)

// SampleAddrs are where the samples' local peers listen (host:port).
type SampleAddrs struct {
	StreamBot    string `json:"streamBot"`
	SIPTrunk     string `json:"sipTrunk"`
	StandInModel string `json:"standInModel"`
}

// SampleAddrsFromEnv reads the addresses from the environment, defaulting
// to the sample files' own.
func SampleAddrsFromEnv(getenv func(string) string) SampleAddrs {
	return SampleAddrs{StreamBot: orDefault(getenv(StreamBotAddrEnv), DefaultStreamBotAddr),
		SIPTrunk:     orDefault(getenv(SampleTrunkAddrEnv), DefaultSampleTrunkAddr),
		StandInModel: orDefault(getenv(StandInModelAddrEnv), DefaultStandInModelAddr)}
}

func orDefault(s, def string) string {
	if s = strings.TrimSpace(s); s != "" {
		return s
	}
	return def
}

// samplePeer is a field of a sample that names a local peer's address.
type samplePeer struct {
	kind  string
	field []string
	// sampleAddr is the address the sample file names; addr picks the
	// running one.
	sampleAddr string
	addr       func(SampleAddrs) string
}

var samplePeers = []samplePeer{
	{"Agent", []string{"spec", "stream", "url"}, DefaultStreamBotAddr, func(a SampleAddrs) string { return a.StreamBot }},
	{"SIPTrunk", []string{"spec", "address"}, DefaultSampleTrunkAddr, func(a SampleAddrs) string { return a.SIPTrunk }},
	{"Agent", []string{"spec", "conversation", "llm", "url"}, DefaultStandInModelAddr, func(a SampleAddrs) string { return a.StandInModel }},
}

// pointAt rewrites o's peer fields from the sample's addresses to addrs';
// a field that names another address (not the sample's) is left alone.
func pointAt(o *unstructured.Unstructured, addrs SampleAddrs) {
	for _, p := range samplePeers {
		v, _, _ := unstructured.NestedString(o.Object, p.field...)
		if o.GetKind() == p.kind && strings.Contains(v, p.sampleAddr) {
			_ = unstructured.SetNestedField(o.Object, strings.Replace(v, p.sampleAddr, p.addr(addrs), 1), p.field...)
		}
	}
}

// addrsFile records the addresses the samples were last pointed at, so
// that a restart with other addresses moves them, and only them.
const addrsFile = "sample-addresses.json"

// followAddrs points the samples still naming the addresses of the last
// run at addrs: a restart with SWITCHBOARD_STREAMBOT_ADDR set moves the
// Agent to the bot. A sample the user deleted or pointed elsewhere is left
// as it is. State folders from before the record hold the files' own.
func followAddrs(ctx context.Context, c client.Client, opts Options, fresh bool) error {
	path := filepath.Join(opts.StateDir, addrsFile)
	last := SampleAddrs{StreamBot: DefaultStreamBotAddr, SIPTrunk: DefaultSampleTrunkAddr, StandInModel: DefaultStandInModelAddr}
	if raw, err := os.ReadFile(path); err == nil {
		if err := json.Unmarshal(raw, &last); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if !fresh && last != opts.SampleAddrs {
		if err := moveSamples(ctx, c, opts, last); err != nil {
			return err
		}
	}
	raw, _ := json.Marshal(opts.SampleAddrs)
	return os.WriteFile(path, raw, 0o600)
}

// moveSamples updates the live samples that still name the last run's
// addresses.
func moveSamples(ctx context.Context, c client.Client, opts Options, last SampleAddrs) error {
	objs, err := readSamples(opts.SamplesDir)
	if err != nil {
		return err
	}
	for _, sample := range objs {
		was, now := sample.DeepCopy(), sample.DeepCopy()
		pointAt(was, last)
		pointAt(now, opts.SampleAddrs)
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(sample.GroupVersionKind())
		err := c.Get(ctx, client.ObjectKey{Namespace: opts.Namespace, Name: sample.GetName()}, live)
		if apierrors.IsNotFound(err) {
			continue
		} else if err != nil {
			return err
		}
		if moved := movePeers(live, was, now); moved {
			if err := c.Update(ctx, live); err != nil {
				return fmt.Errorf("pointing sample %s %s at its peer: %w", live.GetKind(), live.GetName(), err)
			}
		}
	}
	return nil
}

// movePeers sets live's peer fields that still hold was's value to now's.
func movePeers(live, was, now *unstructured.Unstructured) bool {
	moved := false
	for _, p := range samplePeers {
		if live.GetKind() != p.kind {
			continue
		}
		cur, _, _ := unstructured.NestedString(live.Object, p.field...)
		old, _, _ := unstructured.NestedString(was.Object, p.field...)
		next, _, _ := unstructured.NestedString(now.Object, p.field...)
		if old != "" && cur == old && next != old {
			_ = unstructured.SetNestedField(live.Object, next, p.field...)
			moved = true
		}
	}
	return moved
}
