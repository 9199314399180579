package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/directory"
	"github.com/switchboard-dev/switchboard/internal/telephony"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip/engine"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip/publicaddr"
	"github.com/switchboard-dev/switchboard/internal/telephony/speech"
	"github.com/switchboard-dev/switchboard/internal/telephony/tts"
	"github.com/switchboard-dev/switchboard/internal/webhook"
)

// SIPOptions configure real telephony over SIP trunks.
type SIPOptions struct {
	// Disabled opens no SIP listener: calls of agents with a trunkRef fail
	// with dispatch_failed.
	Disabled bool
	// BindHost is the IP address SIP and RTP bind to (127.0.0.1 when
	// empty); ExternalHost, when set, is the address put in SIP headers and
	// SDP instead (behind NAT).
	BindHost, ExternalHost string
	// BindPort is the SIP port (UDP and TCP); ephemeral when zero.
	BindPort int
	// RTPPorts is the UDP range of calls' media, two ports a call;
	// ephemeral ports when zero.
	RTPPorts engine.PortRange
	// ExternalService ("namespace/name"), when set, is the Service whose
	// external address is announced (ExternalHost read from the cluster):
	// a pod behind a LoadBalancer Service of its own.
	ExternalService string
	// ExternalNode, when set, is the node whose ExternalIP is announced, if
	// it reports one: a pod on the host network of a cloud node whose
	// public address is translated to its interface's.
	ExternalNode string
	// SpoolDir holds recordings of calls in progress; it should survive a
	// container restart (an emptyDir does) so a call cut off keeps its
	// audio. Defaults to a directory under the OS temporary directory.
	SpoolDir string
	// Flite is the text-to-speech binary ("flite" on PATH when empty).
	Flite string
	// TTSTimeout bounds one flite run (tts.DefaultTimeout when zero).
	TTSTimeout time.Duration
	// ProbeInterval is how often each trunk is sent OPTIONS (default 60 s).
	ProbeInterval time.Duration
	// RecordingMaxBytes bounds each call's recording (set from
	// Options.RecordingMaxBytes).
	RecordingMaxBytes int64
	// Streams builds the streams of agents that stream to a bot (set
	// from the webhook policy: ws:// and private addresses only with --dev).
	Streams sip.StreamSource
	// Speech configures the embedded speech recognizer, which hears the
	// callees of agents without a speech server of their own.
	Speech speech.EmbeddedOptions
	// ModelPolicy guards agents' speech servers' URLs (set from the
	// webhook options: private addresses only in trusted networks).
	ModelPolicy webhook.URLPolicy
	// PrivateNetworks are the private networks trunks (and their media)
	// may be in: the operator's own PBXs (--sip-private-networks). Other
	// trunks must be public, unless AddressPolicy allows any address.
	PrivateNetworks webhook.TrustedHosts
	// AddressPolicy decides where SIP and RTP may go (set from the webhook
	// options, as every outbound address is: any address with --dev, and
	// PrivateNetworks).
	AddressPolicy webhook.URLPolicy
}

// DefaultSIPOptions are the SIP settings of the binary's flags.
var DefaultSIPOptions = SIPOptions{Flite: "flite", TTSTimeout: tts.DefaultTimeout, ProbeInterval: time.Minute,
	Speech: speech.EmbeddedOptions{ModelDir: speech.DefaultModelDir, Decoders: runtime.NumCPU()}}

// BindFlags binds the SIP settings to fs, each defaulting to its value in o
// (DefaultSIPOptions for the binary; the process resolves an empty
// BindHost: 127.0.0.1 with --dev, else env POD_IP, else the first IPv4 address).
func (o *SIPOptions) BindFlags(fs *flag.FlagSet) {
	fs.Var(enabled{&o.Disabled}, "sip", "Place the calls of agents with a trunkRef over their SIP trunk.")
	fs.StringVar(&o.BindHost, "sip-bind-host", o.BindHost, "IP address SIP and RTP bind to (default 127.0.0.1 with --dev, else env POD_IP, else the first non-loopback IPv4 address).")
	fs.StringVar(&o.ExternalHost, "sip-external-host", o.ExternalHost, "Address announced in SIP headers and SDP when it differs from --sip-bind-host (behind NAT).")
	fs.IntVar(&o.BindPort, "sip-port", o.BindPort, "SIP port (UDP and TCP) on --sip-bind-host, also announced with --sip-external-host; 0: an ephemeral port.")
	fs.Func("rtp-ports", "UDP ports of calls' media, FIRST-LAST (e.g. 20000-20399): an even first port and two ports a call; default: ephemeral ports.",
		func(s string) (err error) { o.RTPPorts, err = engine.ParsePortRange(s); return err })
	fs.StringVar(&o.ExternalService, "sip-external-service", o.ExternalService,
		"namespace/name of a Service of this pod (a LoadBalancer, or with externalIPs) whose address is announced in SIP headers and SDP, read at start-up (instead of --sip-external-host).")
	fs.StringVar(&o.ExternalNode, "sip-external-node", o.ExternalNode,
		"Name of this pod's node (with hostNetwork): its ExternalIP address, if it reports one, is announced in SIP headers and SDP, read at start-up.")
	fs.StringVar(&o.SpoolDir, "sip-spool-dir", o.SpoolDir, "Where recordings of calls in progress are written (default <recording-dir>/.spool); keep it on a volume that survives a container restart.")
	fs.StringVar(&o.Flite, "flite", o.Flite, "The flite text-to-speech binary that speaks agents' scripts.")
	fs.DurationVar(&o.TTSTimeout, "tts-timeout", o.TTSTimeout, "How long flite may take to speak one text before it is killed and the call fails (more than 0).")
	fs.Func("sip-private-networks", "Private networks, in CIDR notation and comma-separated (10.20.0.0/16), where SIPTrunks and "+
		"their media may be: the operator's own PBXs (default none: trunks must be public, unless --dev). Every organization's trunks may use them.",
		func(v string) error {
			h, err := webhook.ParseTrustedHosts(v)
			if err == nil && len(h.Names) > 0 {
				err = fmt.Errorf("--sip-private-networks takes networks in CIDR notation, not host names (%s): a trunk's address is checked after DNS", strings.Join(h.Names, ", "))
			}
			o.PrivateNetworks = h
			return err
		})
	fs.DurationVar(&o.ProbeInterval, "sip-probe-interval", o.ProbeInterval, "How often each SIPTrunk is sent OPTIONS to check it is reachable (more than 0).")
	fs.StringVar(&o.Speech.ModelDir, "speech-model-dir", o.Speech.ModelDir,
		"The embedded speech recognizer's model (PocketSphinx's US English model, Debian's pocketsphinx-en-us).")
	fs.IntVar(&o.Speech.Decoders, "speech-decoders", o.Speech.Decoders,
		"Utterances the embedded recognizer hears at once; each decoder holds the model in memory, about 90 MB (at least 1).")
}

// enabled is a boolean flag that says "on" for a field that says "off".
type enabled struct{ disabled *bool }

func (e enabled) String() string {
	if e.disabled == nil {
		return "true"
	}
	return strconv.FormatBool(!*e.disabled)
}

func (e enabled) Set(v string) error {
	on, err := strconv.ParseBool(v)
	*e.disabled = !on
	return err
}

func (enabled) IsBoolFlag() bool { return true }

// Validate refuses durations of zero, which would fail every script or
// probe trunks without pause.
func (o SIPOptions) Validate() error {
	if o.TTSTimeout <= 0 || o.ProbeInterval <= 0 {
		return fmt.Errorf("--tts-timeout and --sip-probe-interval must be more than 0, got %s and %s", o.TTSTimeout, o.ProbeInterval)
	}
	if o.BindPort < 0 || o.BindPort > 65535 {
		return fmt.Errorf("--sip-port must be 0 to 65535, got %d", o.BindPort)
	}
	announced := 0
	for _, source := range []string{o.ExternalHost, o.ExternalService, o.ExternalNode} {
		if source != "" {
			announced++
		}
	}
	if announced > 1 {
		return errors.New("--sip-external-host, --sip-external-service and --sip-external-node each name the announced address: give one")
	}
	if o.ExternalService != "" {
		if _, err := publicaddr.ParseService(o.ExternalService); err != nil {
			return err
		}
	}
	if o.Speech.Decoders <= 0 {
		return fmt.Errorf("--speech-decoders must be more than 0, got %d", o.Speech.Decoders)
	}
	return nil
}

// sipStack is the SIP side of the process: the engine, the dialer, and the
// channels through which they wake the reconcilers.
type sipStack struct {
	engine    *engine.Engine
	dialer    *sip.Dialer
	callWake  chan event.GenericEvent
	trunkWake chan event.GenericEvent
}

// newSIPStack starts the SIP user agent; its calls end when ctx does.
func newSIPStack(ctx context.Context, mgr manager.Manager, dir *directory.Directory, worker string, opts SIPOptions,
	log logr.Logger) (*sipStack, error) {
	// The engine outlives ctx: on shutdown the calls hang up (BYE) through
	// it, and sip.EngineCloser (the sip-engine runnable) closes it once they have.
	external, err := publicaddr.Announced(ctx, mgr.GetAPIReader(),
		publicaddr.Sources{Host: opts.ExternalHost, Service: opts.ExternalService, Node: opts.ExternalNode}, log)
	if err != nil {
		return nil, err
	}
	eng, err := engine.NewEngine(context.WithoutCancel(ctx), engine.EngineConfig{BindHost: opts.BindHost, ExternalHost: external,
		BindPort: opts.BindPort, RTPPorts: opts.RTPPorts, Logger: slog.New(logr.ToSlogHandler(log.WithName("sip").V(1))),
		Guard: engine.AddressGuard{Allow: opts.AddressPolicy.AllowedAddr}})
	if err != nil {
		return nil, err
	}
	spool := opts.SpoolDir
	if spool == "" {
		spool = filepath.Join(os.TempDir(), "switchboard-spool")
	}
	s := &sipStack{engine: eng, callWake: make(chan event.GenericEvent, 1024),
		trunkWake: make(chan event.GenericEvent, 64)}
	s.dialer, err = sip.New(ctx, sip.Config{
		Engine: eng,
		Trunks: sip.ClusterTrunks{Cache: mgr.GetClient(), Secrets: mgr.GetAPIReader()},
		Script: &sip.ScriptRenderer{Speaker: &tts.Flite{Binary: opts.Flite, Timeout: opts.TTSTimeout}, ConfigMaps: mgr.GetAPIReader(),
			Streams: opts.Streams},
		Backlog:           sip.WorkerBacklog(dir.QueuedOnTrunk, worker),
		SpoolDir:          spool,
		RecordingMaxBytes: opts.RecordingMaxBytes,
		Recognizer:        recognizers(ctx, mgr, opts, log),
		WakeCall:          func(c types.NamespacedName) { wake(s.callWake, &switchboardv1.Call{ObjectMeta: meta(c)}) },
		TrunkChanged:      func(t types.NamespacedName) { wake(s.trunkWake, &switchboardv1.SIPTrunk{ObjectMeta: meta(t)}) },
		Log:               log.WithName("sip-dialer"),
	})
	if err != nil {
		_ = eng.Close()
		return nil, fmt.Errorf("SIP dialer: %w", err)
	}
	return s, nil
}

func meta(n types.NamespacedName) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: n.Namespace, Name: n.Name}
}

// wake queues a reconcile of o without ever blocking the caller (a SIP
// call's goroutine, say): a full channel is waited on in the background,
// for a while (the controller may have stopped; the reconciler's own
// periodic check is the fallback).
func wake(ch chan event.GenericEvent, o client.Object) {
	ev := event.GenericEvent{Object: o}
	select {
	case ch <- ev:
	default:
		go func() {
			select {
			case ch <- ev:
			case <-time.After(time.Minute):
			}
		}()
	}
}

// recognizers chooses each call's speech recognizer: the agent's server,
// else the embedded one (loaded at the first call that needs it).
func recognizers(ctx context.Context, mgr manager.Manager, opts SIPOptions, log logr.Logger) func(telephony.Request) speech.Recognizer {
	agents := &speech.Agents{Secrets: mgr.GetAPIReader(), Policy: opts.ModelPolicy, Embedded: opts.Speech, Log: log.WithName("speech")}
	return func(req telephony.Request) speech.Recognizer { return agents.For(ctx, req.Agent) }
}
