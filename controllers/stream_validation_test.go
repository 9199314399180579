package controllers_test

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

// An Agent's stream (issue 26) is checked at kubectl apply.
func TestKubectlApplyChecksAgentStreams(t *testing.T) {
	suite.Need(t)
	kc := controlPlane.Kubectl(t)
	ns := newOrganization(t)
	agent := func(name, spec string) string {
		return "apiVersion: switchboard.dev/v1alpha1\nkind: Agent\nmetadata:\n  name: " + name +
			"\nspec:\n  fromNumber: \"+14155550100\"\n" + spec
	}
	for _, tt := range []struct{ name, spec, want string }{
		{"stream-and-script", "  script:\n  - say: Hi\n  stream:\n    url: wss://bot.example/media\n",
			"an agent has at most one of script, stream and conversation"},
		{"stream-http", "  stream:\n    url: https://bot.example/media\n", "stream url must be wss://host/path"},
		{"stream-credentials", "  stream:\n    url: wss://user:pw@bot.example/media\n", "must not contain credentials"},
		{"stream-slow", "  stream:\n    url: wss://bot.example/media\n    connectTimeoutSeconds: 60\n", "connectTimeoutSeconds"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			res := kc.Apply(t, ns, agent(tt.name, tt.spec))
			g.Expect(res.ExitCode).NotTo(BeZero(), "kubectl apply accepted %s:\n%s", tt.name, res)
			g.Expect(res.Stderr).To(ContainSubstring(tt.want), res.String())
			testsupport.ExpectAbsent(t, k8s, &switchboardv1.Agent{}, ns, tt.name)
		})
	}

	g := NewWithT(t)
	res := kc.Apply(t, ns, agent("bot", "  stream:\n    url: wss://bot.example/media\n    customParameters: {customer: \"{{customer_name}}\"}\n    authSecretRef: {name: bot-auth}\n"))
	g.Expect(res.ExitCode).To(BeZero(), res.String())
	var a switchboardv1.Agent
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "bot"}, &a)).To(Succeed())
	g.Expect(a.Spec.Stream.ConnectTimeoutSeconds).To(BeEquivalentTo(5), "the default connect timeout")
	g.Expect(strings.Join([]string{a.Spec.Stream.URL, a.Spec.Stream.CustomParameters["customer"], a.Spec.Stream.AuthSecretRef.Name}, " ")).
		To(Equal("wss://bot.example/media {{customer_name}} bot-auth"))
}
