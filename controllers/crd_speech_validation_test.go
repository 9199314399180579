package controllers_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

// An agent's speech server, as kubectl apply checks it (issue 27).
func TestKubectlApplySpeechServer(t *testing.T) {
	suite.Need(t)
	kc := controlPlane.Kubectl(t)
	ns := newOrganization(t)
	agent := func(name, speech string) string {
		return "apiVersion: switchboard.dev/v1alpha1\nkind: Agent\nmetadata:\n  name: " + name +
			"\nspec:\n  fromNumber: \"+14155550100\"\n  speech:\n" + speech
	}
	refused := []struct{ name, speech, want string }{
		{"speech-unknown-protocol", "    url: https://asr.example.com/v1\n    protocol: grpc\n", `Unsupported value: "grpc"`},
		{"speech-openai-websocket", "    url: wss://asr.example.com\n    protocol: openai\n", "an openai server's url is https://, a vosk server's wss://"},
		{"speech-vosk-https", "    url: https://asr.example.com\n    protocol: vosk\n", "an openai server's url is https://, a vosk server's wss://"},
		{"speech-not-a-url", "    url: https://\n    protocol: openai\n", "url must be an absolute URL with a host"},
		{"speech-timeout-zero", "    url: https://asr.example.com/v1\n    protocol: openai\n    timeoutMilliseconds: 0\n", "spec.speech.timeoutMilliseconds"},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			res := kc.Apply(t, ns, agent(tt.name, tt.speech))
			g.Expect(res.ExitCode).NotTo(BeZero(), "kubectl apply accepted %s:\n%s", tt.name, res)
			g.Expect(res.Stderr).To(ContainSubstring(tt.want), res.String())
			testsupport.ExpectAbsent(t, k8s, &switchboardv1.Agent{}, ns, tt.name)
		})
	}

	g := NewWithT(t)
	res := kc.Apply(t, ns, agent("speech-vosk", "    url: wss://asr.example.com\n    protocol: vosk\n    apiKeySecretRef: {name: asr}\n"))
	g.Expect(res.ExitCode).To(BeZero(), res.String())
	var a switchboardv1.Agent
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "speech-vosk"}, &a)).To(Succeed())
	g.Expect(a.Spec.Speech.APIKeySecretRef.Name).To(Equal("asr"))
	// The API server filled the default timeout.
	g.Expect(a.Spec.Speech.TimeoutMilliseconds).To(BeEquivalentTo(2000))
}
