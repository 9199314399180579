package controllers_test

// The Agent reconciler's probe of the agent's voice server: the
// VoiceServerReachable condition, which leaves Ready alone.

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	. "github.com/onsi/gomega/gstruct"
	"github.com/onsi/gomega/types"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/telephony/tts/ttstest"
	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

// voiceProbeInterval is how often the suite's Agent reconciler probes a
// voice server.
const voiceProbeInterval = 2 * time.Second

// voiceCondition reads the Agent's VoiceServerReachable condition, nil
// when absent; Ready must stay True whatever it says.
func voiceCondition(agent *switchboardv1.Agent) func(Gomega) *metav1.Condition {
	return func(g Gomega) *metav1.Condition {
		g.Expect(k8s.Get(context.Background(), client.ObjectKeyFromObject(agent), agent)).To(Succeed())
		ready := testsupport.Ready(g, agent.Status.Conditions)
		g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), ready.Message)
		g.Expect(agent.Status.ObservedGeneration).To(Equal(agent.Generation))
		return apimeta.FindStatusCondition(agent.Status.Conditions, switchboardv1.VoiceServerReachableCondition)
	}
}

func voiceReachable() types.GomegaMatcher {
	return PointTo(And(HaveField("Status", metav1.ConditionTrue),
		HaveField("Reason", switchboardv1.ReasonVoiceServerReachable)))
}

func voiceUnreachable(says ...string) types.GomegaMatcher {
	m := []types.GomegaMatcher{HaveField("Status", metav1.ConditionFalse),
		HaveField("Reason", switchboardv1.ReasonVoiceServerUnreachable)}
	for _, s := range says {
		m = append(m, HaveField("Message", ContainSubstring(s)))
	}
	return PointTo(And(m...))
}

// setVoiceServer points the agent at url (nil voice when url is "").
func setVoiceServer(t *testing.T, agent *switchboardv1.Agent, url string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(agent), agent); err != nil {
			return err
		}
		agent.Spec.Voice = nil
		if url != "" {
			agent.Spec.Voice = &switchboardv1.AgentVoice{Server: &switchboardv1.VoiceServer{URL: url, Voice: "af_heart"}}
		}
		return k8s.Update(context.Background(), agent)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// closedURL is the URL of a server that no longer listens.
func closedURL() string {
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	return srv.URL
}

func TestAgentVoiceServerReachability(t *testing.T) {
	suite.Need(t)
	g := NewWithT(t)
	ns := newOrganization(t)
	// The stand-in answers GET /v1/models with 404: reachable all the same.
	live := ttstest.New(t, ttstest.Behaviour{})
	agent := testsupport.CreateAgent(t, k8s, ns, "voiced", func(s *switchboardv1.AgentSpec) {
		s.Voice = &switchboardv1.AgentVoice{Server: &switchboardv1.VoiceServer{URL: live.URL, Voice: "af_heart"}}
	})
	g.Eventually(voiceCondition(agent), resWait, resPoll).Should(voiceReachable())
	g.Expect(live.Requests()).To(BeEmpty(), "the probe made the server speak")

	// A closed port: unreachable, the message naming the host and error
	// but neither the path nor the query.
	dead := closedURL()
	setVoiceServer(t, agent, dead+"/secret-path/v1?key=hunter2")
	g.Eventually(voiceCondition(agent), resWait, resPoll).Should(voiceUnreachable(
		dead[len("http://"):], "connection refused", "embedded voice"))
	msg := apimeta.FindStatusCondition(agent.Status.Conditions, switchboardv1.VoiceServerReachableCondition).Message
	g.Expect(msg).NotTo(Or(ContainSubstring("secret-path"), ContainSubstring("hunter2")))

	// While nothing changes, nothing is written, though the probe repeats.
	rv := agent.ResourceVersion
	g.Consistently(func(g Gomega) string {
		voiceCondition(agent)(g)
		return agent.ResourceVersion
	}, 2*voiceProbeInterval+time.Second, 250*time.Millisecond).Should(Equal(rv))

	// Back to the live server: reachable again.
	setVoiceServer(t, agent, live.URL)
	g.Eventually(voiceCondition(agent), resWait, resPoll).Should(voiceReachable())

	// The server goes away without the Agent changing: the periodic probe
	// notices.
	live.Close()
	g.Eventually(voiceCondition(agent), 3*voiceProbeInterval+resWait, resPoll).Should(voiceUnreachable("embedded voice"))

	// Without a server, no condition.
	setVoiceServer(t, agent, "")
	g.Eventually(voiceCondition(agent), resWait, resPoll).Should(BeNil())
}

// A URL the policy refuses (the suite's allows http and loopback, not
// credentials) is unreachable, before any connection.
func TestAgentVoiceServerRefusedURL(t *testing.T) {
	suite.Need(t)
	g := NewWithT(t)
	ns := newOrganization(t)
	agent := testsupport.CreateAgent(t, k8s, ns, "refused", func(s *switchboardv1.AgentSpec) {
		s.Voice = &switchboardv1.AgentVoice{Server: &switchboardv1.VoiceServer{
			URL: "http://user:hunter2@127.0.0.1:9/v1", Voice: "alloy"}}
	})
	g.Eventually(voiceCondition(agent), resWait, resPoll).Should(voiceUnreachable("URL is refused", "credentials"))
	g.Expect(agent.Status.Conditions).NotTo(ContainElement(HaveField("Message", ContainSubstring("hunter2"))))
}
