package controllers_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

// An Agent's conversation (issue 39) is checked at kubectl apply.
func TestKubectlApplyChecksAgentConversations(t *testing.T) {
	suite.Need(t)
	kc := controlPlane.Kubectl(t)
	ns := newOrganization(t)
	agent := func(name, spec string) string {
		return "apiVersion: switchboard.dev/v1alpha1\nkind: Agent\nmetadata:\n  name: " + name +
			"\nspec:\n  fromNumber: \"+14155550100\"\n" + spec
	}
	const llm = "    llm:\n      url: https://llm.example/v1\n      model: m\n"
	for _, tt := range []struct{ name, spec, want string }{
		{"conversation-and-script", "  script:\n  - say: Hi\n  conversation:\n" + llm,
			"an agent has at most one of script, stream and conversation"},
		{"no-engine", "  conversation:\n    systemPrompt: hi\n", "exactly one response engine"},
		{"two-engines", "  conversation:\n" + llm + "    llmWebSocket:\n      url: wss://bot.example/llm\n",
			"exactly one response engine"},
		{"retell-with-prompt", "  conversation:\n    llmWebSocket:\n      url: wss://bot.example/llm\n    systemPrompt: hi\n",
			"a Retell custom-LLM server writes its own prompt"},
		{"transfer", "  conversation:\n" + llm + "    tools:\n      builtIn: [transfer_call]\n", "the transfer_call tool needs transfer.destinations"},
		{"unknown-tool", "  conversation:\n" + llm + "    tools:\n      builtIn: [send_sms]\n", "Unsupported value"},
		{"same-function-twice", "  conversation:\n" + llm + "    tools:\n      functions:\n" +
			"      - {name: f, description: d, url: https://f.example/a}\n      - {name: f, description: e, url: https://f.example/b}\n",
			"Duplicate value"},
		{"function-named-like-a-built-in", "  conversation:\n" + llm + "    tools:\n      builtIn: [end_call]\n      functions:\n" +
			"      - {name: end_call, description: d, url: https://f.example/a}\n", "may not take a built-in tool's name"},
		{"websocket-http", "  conversation:\n    llmWebSocket:\n      url: https://bot.example/llm\n", "llmWebSocket url must be wss://"},
		{"temperature", "  conversation:\n    llm:\n      url: https://llm.example/v1\n      model: m\n      temperature: \"3\"\n", "temperature"},
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
	res := kc.Apply(t, ns, agent("talker", "  conversation:\n"+llm+"    systemPrompt: Call {{customer_name}}.\n"+
		"    tools:\n      builtIn: [end_call, press_digit]\n      functions:\n"+
		"      - name: check_availability\n        description: Free tables on a day\n        url: https://api.example/tools\n"+
		"        parameters: {type: object, properties: {day: {type: string}}, required: [day]}\n"))
	g.Expect(res.ExitCode).To(BeZero(), res.String())
	var a switchboardv1.Agent
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "talker"}, &a)).To(Succeed())
	c := a.Spec.Conversation
	g.Expect(c.LLM.MaxTokens).To(BeEquivalentTo(250), "the default token limit")
	g.Expect(c.LLM.FirstTokenTimeoutMs).To(BeEquivalentTo(5000))
	g.Expect(c.MaxTurns).To(BeEquivalentTo(200))
	g.Expect(c.FallbackLine).NotTo(BeEmpty())
	g.Expect(c.Tools.Functions[0].TimeoutMs).To(BeEquivalentTo(5000))
	g.Expect(string(c.Tools.Functions[0].Parameters.Raw)).To(ContainSubstring(`"required":["day"]`), "the schema kept whole")
}
