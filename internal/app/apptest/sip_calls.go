package apptest

// Calls placed through the REST API over SIP trunks to real sipp callees.

import (
	"context"
	"encoding/binary"
	"math"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/telephony/audio"
	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

// ScenarioFile is a sipp scenario of the SIP engine's tests.
func ScenarioFile(name string) string {
	return filepath.Join(RepoRoot, "internal", "telephony", "sip", "engine", "testdata", name)
}

// ApplyTrunk creates a SIPTrunk to the sipp at addr.
func ApplyTrunk(t testing.TB, ns, name, addr string, mutate func(*switchboardv1.SIPTrunkSpec)) *switchboardv1.SIPTrunk {
	t.Helper()
	tr := &switchboardv1.SIPTrunk{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: switchboardv1.SIPTrunkSpec{Address: "sip:" + addr, Transport: switchboardv1.SIPTransportUDP, RingTimeoutSeconds: 20}}
	if mutate != nil {
		mutate(&tr.Spec)
	}
	NewWithT(t).Expect(K8s.Create(context.Background(), tr)).To(Succeed())
	testsupport.DeleteOnCleanup(t, K8s, tr)
	return tr
}

// SIPOrg is an organization whose agent calls over a trunk to the sipp at
// addr, with script as its script.
func SIPOrg(t *testing.T, addr string, trunk func(*switchboardv1.SIPTrunkSpec), agent func(*switchboardv1.AgentSpec)) *Org {
	t.Helper()
	o := NewOrg(t)
	ApplyTrunk(t, o.Ns, "carrier", addr, trunk)
	a := CreateAgent(t, o.Ns, "sip-agent", func(s *switchboardv1.AgentSpec) {
		s.TrunkRef = &switchboardv1.LocalObjectReference{Name: "carrier"}
		s.Greeting = ""
		if agent != nil {
			agent(s)
		}
	})
	o.Agent, o.AgentID = a, a.ResolvedID()
	return o
}

func CallResource(t *testing.T, ns, id string) *switchboardv1.Call {
	t.Helper()
	var c switchboardv1.Call
	NewWithT(t).Expect(K8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: CallName(id)}, &c)).To(Succeed())
	return &c
}

// StereoEnergy is the mean absolute amplitude of each channel of a stereo
// 16-bit WAV.
func StereoEnergy(t *testing.T, wav []byte) (left, right float64) {
	t.Helper()
	g := NewWithT(t)
	g.Expect(len(wav)).To(BeNumerically(">", 44))
	g.Expect(string(wav[:4])).To(Equal("RIFF"))
	g.Expect(binary.LittleEndian.Uint16(wav[22:])).To(Equal(uint16(2)), "channels")
	g.Expect(binary.LittleEndian.Uint32(wav[24:])).To(Equal(uint32(8000)), "sample rate")
	g.Expect(binary.LittleEndian.Uint16(wav[34:])).To(Equal(uint16(16)), "bits per sample")
	data := wav[44:]
	g.Expect(int(binary.LittleEndian.Uint32(wav[40:]))).To(Equal(len(data)), "data chunk size")
	var l, r float64
	n := len(data) / 4
	for i := range n {
		l += Abs(float64(int16(binary.LittleEndian.Uint16(data[4*i:]))))   //nolint:gosec // PCM samples
		r += Abs(float64(int16(binary.LittleEndian.Uint16(data[4*i+2:])))) //nolint:gosec // PCM samples
	}
	return l / float64(n), r / float64(n)
}

func Abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// WaitAnswered waits until the Call's status records the answer.
func WaitAnswered(t *testing.T, ns, id string) {
	t.Helper()
	NewWithT(t).Eventually(func() *metav1.MicroTime { return CallResource(t, ns, id).Status.AnsweredAt },
		15*time.Second, 20*time.Millisecond).ShouldNot(BeNil(), "call %s was never answered", id)
}

// ToneWAV is a 16-bit 8 kHz mono WAV of a loud 440 Hz tone.
func ToneWAV(d time.Duration) []byte {
	n := int(d.Seconds() * 8000)
	pcm := make([]int16, n)
	for i := range pcm {
		pcm[i] = int16(12000 * math.Sin(2*math.Pi*440*float64(i)/8000))
	}
	return audio.Mono(pcm)
}
