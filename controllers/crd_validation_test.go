package controllers_test

// What a platform team learns at apply time: the CRDs' validation, through
// the real kubectl binary.

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

func TestKubectlApplyRejectsInvalidResources(t *testing.T) {
	suite.Need(t)
	kc := controlPlane.Kubectl(t)
	ns := newOrganization(t)
	tests := []struct {
		name     string
		obj      client.Object
		manifest string
		// stderr must contain all of these.
		want []string
	}{
		{
			name: "agent-from-number-not-e164", obj: &switchboardv1.Agent{},
			manifest: `apiVersion: switchboard.dev/v1alpha1
kind: Agent
metadata:
  name: agent-from-number-not-e164
spec:
  fromNumber: "555-1234"
`,
			want: []string{"spec.fromNumber", "555-1234", "should match"},
		},
		{
			name: "numberlist-type-allowlist", obj: &switchboardv1.NumberList{},
			manifest: `apiVersion: switchboard.dev/v1alpha1
kind: NumberList
metadata:
  name: numberlist-type-allowlist
spec:
  type: Allowlist
  numbers: ["+14155550199"]
`,
			want: []string{"spec.type", "Allowlist", "DoNotCall", "Blocked"},
		},
		{
			name: "agent-extracted-type-date", obj: &switchboardv1.Agent{},
			manifest: `apiVersion: switchboard.dev/v1alpha1
kind: Agent
metadata:
  name: agent-extracted-type-date
spec:
  fromNumber: "+14155550100"
  extractedData:
  - name: appointment
    type: date
`,
			want: []string{"spec.extractedData[0].type", "date", "string", "number", "boolean"},
		},
		{
			name: "agent-extracted-duplicate-names", obj: &switchboardv1.Agent{},
			manifest: `apiVersion: switchboard.dev/v1alpha1
kind: Agent
metadata:
  name: agent-extracted-duplicate-names
spec:
  fromNumber: "+14155550100"
  extractedData:
  - name: confirmed
    type: boolean
  - name: party_size
    type: number
  - name: confirmed
    type: string
`,
			want: []string{"spec", "extractedData names must be unique"},
		},
		{
			name: "numberlist-empty", obj: &switchboardv1.NumberList{},
			manifest: `apiVersion: switchboard.dev/v1alpha1
kind: NumberList
metadata:
  name: numberlist-empty
spec:
  type: DoNotCall
`,
			want: []string{"spec", "a NumberList needs at least one number or prefix"},
		},
		{
			name: "numberlist-empty-lists", obj: &switchboardv1.NumberList{},
			manifest: `apiVersion: switchboard.dev/v1alpha1
kind: NumberList
metadata:
  name: numberlist-empty-lists
spec:
  type: Blocked
  numbers: []
  prefixes: []
`,
			want: []string{"spec", "a NumberList needs at least one number or prefix"},
		},
		{
			name: "trunk-address-without-scheme", obj: &switchboardv1.SIPTrunk{},
			manifest: `apiVersion: switchboard.dev/v1alpha1
kind: SIPTrunk
metadata:
  name: trunk-address-without-scheme
spec:
  address: carrier.example:5060
`,
			want: []string{"spec.address", "should match"},
		},
		{
			name: "trunk-unknown-transport", obj: &switchboardv1.SIPTrunk{},
			manifest: `apiVersion: switchboard.dev/v1alpha1
kind: SIPTrunk
metadata:
  name: trunk-unknown-transport
spec:
  address: sip:carrier.example
  transport: ws
`,
			want: []string{"spec.transport", `"ws"`, "udp", "tcp", "tls"},
		},
		{
			name: "trunk-registration-short-expiry", obj: &switchboardv1.SIPTrunk{},
			manifest: `apiVersion: switchboard.dev/v1alpha1
kind: SIPTrunk
metadata:
  name: trunk-registration-short-expiry
spec:
  address: sip:carrier.example
  registration: {user: office, expiresSeconds: 30, registrar: "registrar.example"}
`,
			want: []string{"spec.registration.expiresSeconds", "greater than or equal to 60",
				"spec.registration.registrar", "should match"},
		},
		{
			name: "trunk-registration-without-user", obj: &switchboardv1.SIPTrunk{},
			manifest: `apiVersion: switchboard.dev/v1alpha1
kind: SIPTrunk
metadata:
  name: trunk-registration-without-user
spec:
  address: sip:carrier.example
  registration: {}
`,
			want: []string{"spec.registration needs a user"},
		},
		{
			name: "trunk-tls-block-over-udp", obj: &switchboardv1.SIPTrunk{},
			manifest: `apiVersion: switchboard.dev/v1alpha1
kind: SIPTrunk
metadata:
  name: trunk-tls-block-over-udp
spec:
  address: sip:carrier.example
  transport: udp
  tls: {serverName: carrier.example}
`,
			want: []string{"spec.tls needs transport tls"},
		},
		{
			name: "trunk-sips-over-tcp", obj: &switchboardv1.SIPTrunk{},
			manifest: `apiVersion: switchboard.dev/v1alpha1
kind: SIPTrunk
metadata:
  name: trunk-sips-over-tcp
spec:
  address: sips:carrier.example
  transport: tcp
`,
			want: []string{"a sips: address needs transport tls"},
		},
		{
			name: "trunk-srtp-in-clear", obj: &switchboardv1.SIPTrunk{},
			manifest: `apiVersion: switchboard.dev/v1alpha1
kind: SIPTrunk
metadata:
  name: trunk-srtp-in-clear
spec:
  address: sip:carrier.example
  media: srtp-required
`,
			want: []string{"srtp media needs transport tls", "only TLS keeps secret"},
		},
		{
			name: "trunk-unknown-media", obj: &switchboardv1.SIPTrunk{},
			manifest: `apiVersion: switchboard.dev/v1alpha1
kind: SIPTrunk
metadata:
  name: trunk-unknown-media
spec:
  address: sips:carrier.example
  media: zrtp
`,
			want: []string{"spec.media", "rtp", "srtp-preferred", "srtp-required"},
		},
		{
			name: "agent-step-two-kinds", obj: &switchboardv1.Agent{},
			manifest: `apiVersion: switchboard.dev/v1alpha1
kind: Agent
metadata:
  name: agent-step-two-kinds
spec:
  fromNumber: "+14155550100"
  script:
  - say: Hello
    hangup: {}
`,
			want: []string{"a script step has exactly one of say, play, gather, pressDigits, transfer, hangup"},
		},
		{
			name: "agent-gather-unknown-field", obj: &switchboardv1.Agent{},
			manifest: `apiVersion: switchboard.dev/v1alpha1
kind: Agent
metadata:
  name: agent-gather-unknown-field
spec:
  fromNumber: "+14155550100"
  extractedData:
  - name: confirmed
    type: boolean
  script:
  - gather:
      field: party_size
`,
			want: []string{"a gather step's field must be one of extractedData"},
		},
		{
			name: "agent-gather-without-answer", obj: &switchboardv1.Agent{},
			manifest: `apiVersion: switchboard.dev/v1alpha1
kind: Agent
metadata:
  name: agent-gather-without-answer
spec:
  fromNumber: "+14155550100"
  script:
  - gather:
      prompt: What would you like?
`,
			want: []string{"a gather needs choices, a capture type or a field"},
		},
		{
			name: "agent-next-names-nothing", obj: &switchboardv1.Agent{},
			manifest: `apiVersion: switchboard.dev/v1alpha1
kind: Agent
metadata:
  name: agent-next-names-nothing
spec:
  fromNumber: "+14155550100"
  script:
  - id: ask
    gather:
      prompt: Shall we book it?
      choices:
      - value: "yes"
        next: book
      - value: "no"
`,
			want: []string{"a choice's next must name a script step's id"},
		},
		{
			name: "agent-no-input-next-names-nothing", obj: &switchboardv1.Agent{},
			manifest: `apiVersion: switchboard.dev/v1alpha1
kind: Agent
metadata:
  name: agent-no-input-next-names-nothing
spec:
  fromNumber: "+14155550100"
  script:
  - gather:
      capture: number
      noInput: {next: goodbye}
  - id: good-bye
    say: Goodbye.
`,
			want: []string{"a gather's next (or its noMatch's or noInput's) must name a script step's id"},
		},
		{
			name: "agent-choice-field-unknown", obj: &switchboardv1.Agent{},
			manifest: `apiVersion: switchboard.dev/v1alpha1
kind: Agent
metadata:
  name: agent-choice-field-unknown
spec:
  fromNumber: "+14155550100"
  extractedData:
  - name: confirmed
    type: boolean
  script:
  - gather:
      field: slot
      choices:
      - {value: morning}
      - {value: afternoon}
`,
			want: []string{"a gather step's field must be one of extractedData"},
		},
		{
			name: "agent-duplicate-step-ids", obj: &switchboardv1.Agent{},
			manifest: `apiVersion: switchboard.dev/v1alpha1
kind: Agent
metadata:
  name: agent-duplicate-step-ids
spec:
  fromNumber: "+14155550100"
  script:
  - {id: hello, say: Hello.}
  - {id: hello, say: Hello again.}
`,
			want: []string{"script step ids must be unique"},
		},
		{
			name: "agent-speech-without-choices", obj: &switchboardv1.Agent{},
			manifest: `apiVersion: switchboard.dev/v1alpha1
kind: Agent
metadata:
  name: agent-speech-without-choices
spec:
  fromNumber: "+14155550100"
  extractedData:
  - name: pin
    type: string
  script:
  - gather:
      field: pin
      input: [speech]
`,
			want: []string{"speech input needs choices or a capture type"},
		},
		{
			name: "agent-duplicate-choices", obj: &switchboardv1.Agent{},
			manifest: `apiVersion: switchboard.dev/v1alpha1
kind: Agent
metadata:
  name: agent-duplicate-choices
spec:
  fromNumber: "+14155550100"
  script:
  - gather:
      choices:
      - {value: "yes", phrases: ["yeah"]}
      - {value: "yes", phrases: ["sure"]}
`,
			want: []string{"spec.script[0].gather.choices[1]", "Duplicate value"},
		},
		{
			// Issue 36: two choices one key selects were accepted (the first
			// won, silently).
			name: "agent-choices-same-digits", obj: &switchboardv1.Agent{},
			manifest: `apiVersion: switchboard.dev/v1alpha1
kind: Agent
metadata:
  name: agent-choices-same-digits
spec:
  fromNumber: "+14155550100"
  script:
  - say: Hello.
  - gather:
      choices:
      - {value: "yes", digits: "1"}
      - {value: "no", digits: "2"}
      - {value: "maybe", digits: "1"}
`,
			want: []string{"spec.script[1].gather", "two choices of a gather have the same digits"},
		},
		{
			name: "agent-capture-unknown", obj: &switchboardv1.Agent{},
			manifest: `apiVersion: switchboard.dev/v1alpha1
kind: Agent
metadata:
  name: agent-capture-unknown
spec:
  fromNumber: "+14155550100"
  script:
  - gather:
      capture: colour
`,
			want: []string{"spec.script[0].gather.capture", `"colour"`, "yes_no"},
		},
		{
			name: "agent-leave-message-without-message", obj: &switchboardv1.Agent{},
			manifest: `apiVersion: switchboard.dev/v1alpha1
kind: Agent
metadata:
  name: agent-leave-message-without-message
spec:
  fromNumber: "+14155550100"
  voicemail:
    action: leave_message
`,
			want: []string{"leave_message needs a message"},
		},
		{
			name: "agent-analysis-bad", obj: &switchboardv1.Agent{},
			manifest: `apiVersion: switchboard.dev/v1alpha1
kind: Agent
metadata:
  name: agent-analysis-bad
spec:
  fromNumber: "+14155550100"
  analysis:
    url: llm.example.com/v1
    model: ""
    timeoutSeconds: 600
`,
			want: []string{"spec.analysis.url", "spec.analysis.model", "spec.analysis.timeoutSeconds"},
		},
		{
			name: "agent-gather-confidence-over-100", obj: &switchboardv1.Agent{},
			manifest: `apiVersion: switchboard.dev/v1alpha1
kind: Agent
metadata:
  name: agent-gather-confidence-over-100
spec:
  fromNumber: "+14155550100"
  script:
  - gather: {field: party_size, capture: number, minConfidencePercent: 150}
`,
			want: []string{"minConfidencePercent", "less than or equal to 100"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			res := kc.Apply(t, ns, tt.manifest)
			g.Expect(res.ExitCode).NotTo(BeZero(), "kubectl apply accepted an invalid %s:\n%s", tt.name, res)
			t.Logf("kubectl apply: exit %d: %s", res.ExitCode, strings.TrimSpace(res.Stderr))
			g.Expect(res.Stderr).To(ContainSubstring("is invalid"), res.String())
			for _, w := range tt.want {
				g.Expect(res.Stderr).To(ContainSubstring(w), res.String())
			}
			testsupport.ExpectAbsent(t, k8s, tt.obj, ns, tt.name)
		})
	}
}

func TestKubectlApplyCallSpecIsImmutable(t *testing.T) {
	suite.Need(t)
	g := NewWithT(t)
	kc := controlPlane.Kubectl(t)
	ns := newOrganization(t)
	agentID := testsupport.CreateAgent(t, k8s, ns, "reminder", func(*switchboardv1.AgentSpec) {}).ResolvedID()
	manifest := func(to, labels string) string {
		return `apiVersion: switchboard.dev/v1alpha1
kind: Call
metadata:
  name: trunk-check` + labels + `
spec:
  agentID: ` + agentID + `
  toNumber: "` + to + `"
  variables:
    customer_name: Ada
`
	}
	res := kc.Apply(t, ns, manifest("+14155551234", ""))
	g.Expect(res.ExitCode).To(BeZero(), res.String())
	g.Expect(res.Stdout).To(ContainSubstring("call.switchboard.dev/trunk-check created"))

	// Re-applying the same file, or changing only metadata, is fine:
	// `self == oldSelf` must hold for the defaulted spec.
	res = kc.Apply(t, ns, manifest("+14155551234", ""))
	g.Expect(res.ExitCode).To(BeZero(), res.String())
	g.Expect(res.Stdout).To(ContainSubstring("unchanged"))
	res = kc.Apply(t, ns, manifest("+14155551234", "\n  labels:\n    team: platform"))
	g.Expect(res.ExitCode).To(BeZero(), res.String())
	g.Expect(res.Stdout).To(ContainSubstring("configured"))

	// Changing the spec is refused with the rule's message.
	res = kc.Apply(t, ns, manifest("+14155559876", "\n  labels:\n    team: platform"))
	g.Expect(res.ExitCode).NotTo(BeZero(), "kubectl apply changed a Call's spec:\n%s", res)
	g.Expect(res.Stderr).To(ContainSubstring(`Call "trunk-check" is invalid`), res.String())
	g.Expect(res.Stderr).To(ContainSubstring("spec"), res.String())
	g.Expect(res.Stderr).To(ContainSubstring("a Call's spec cannot be changed (only spec.stop can be set); create a new Call instead"), res.String())

	// So is changing the variables alone (schemaless, compared as a whole).
	res = kc.Run(t, "-n", ns, "patch", "call", "trunk-check", "--type", "merge", "-p", `{"spec":{"variables":{"customer_name":"Bob"}}}`)
	g.Expect(res.ExitCode).NotTo(BeZero(), "kubectl patch changed a Call's variables:\n%s", res)
	g.Expect(res.Stderr).To(ContainSubstring("a Call's spec cannot be changed"), res.String())

	// spec.stop is the one field that can be set, and it cannot be unset.
	res = kc.Run(t, "-n", ns, "patch", "call", "trunk-check", "--type", "merge", "-p", `{"spec":{"stop":true}}`)
	g.Expect(res.ExitCode).To(BeZero(), res.String())
	res = kc.Run(t, "-n", ns, "patch", "call", "trunk-check", "--type", "merge", "-p", `{"spec":{"stop":false}}`)
	g.Expect(res.ExitCode).NotTo(BeZero(), "kubectl patch unset spec.stop:\n%s", res)
	g.Expect(res.Stderr).To(ContainSubstring("spec.stop cannot be unset"), res.String())

	var c switchboardv1.Call
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "trunk-check"}, &c)).To(Succeed())
	g.Expect(c.Spec.ToNumber).To(Equal("+14155551234"))
	g.Expect(c.Labels).To(HaveKeyWithValue("team", "platform"))
	g.Expect(c.Spec.Stop).To(BeTrue())
}

// TestKubectlApplyRejectsInvalidWebhookEndpoints: a platform team learns at
// apply time what is wrong with an endpoint.
func TestKubectlApplyRejectsInvalidWebhookEndpoints(t *testing.T) {
	suite.Need(t)
	t.Parallel()
	kc := controlPlane.Kubectl(t)
	ns := newOrganization(t)
	for name, tc := range map[string]struct{ spec, want string }{
		"not-http":      {`url: ftp://hooks.example.com/x`, "url must be an absolute https URL"},
		"relative":      {`url: /hooks`, "url must be an absolute https URL"},
		"unknown-event": {"url: https://hooks.example.com/x\n  events: [call.bogus]", `Unsupported value: "call.bogus"`},
		"no-url":        {`description: nothing`, "spec.url: Required value"},
		"empty-secret":  {"url: https://hooks.example.com/x\n  secretRef: {name: \"\"}", "spec.secretRef.name"},
	} {
		res := kc.Apply(t, ns, "apiVersion: switchboard.dev/v1alpha1\nkind: WebhookEndpoint\nmetadata:\n  name: "+
			name+"\nspec:\n  "+tc.spec+"\n")
		if res.ExitCode == 0 || !strings.Contains(res.Stderr, tc.want) {
			t.Errorf("%s: want an error containing %q, got %v", name, tc.want, res)
		}
	}
}

// A branching, listening script applies, with the defaults filled in.
func TestKubectlApplyAcceptsBranchingAgent(t *testing.T) {
	suite.Need(t)
	g := NewWithT(t)
	kc := controlPlane.Kubectl(t)
	ns := newOrganization(t)
	res := kc.Apply(t, ns, `apiVersion: switchboard.dev/v1alpha1
kind: Agent
metadata:
  name: booking
spec:
  fromNumber: "+14155550100"
  extractedData:
  - name: confirmed
    type: boolean
  - name: party_size
    type: number
  script:
  - id: disclaimer
    bargeIn: false
    say: This call may be recorded.
  - id: confirm
    gather:
      field: confirmed
      prompt: Shall we keep your booking?
      choices:
      - value: "yes"
        phrases: ["yes", "yeah", "sure", "that's right"]
        digits: "1"
        next: size
      - value: "no"
        phrases: ["no", "cancel it"]
        digits: "2"
        next: goodbye
      noMatch: {prompt: "Sorry, please say yes or no."}
      noInput: {retries: 1, next: goodbye}
  - id: size
    gather:
      field: party_size
      capture: number
      prompt: How many of you will come?
      noMatch: {next: confirm}
  - id: goodbye
    say: Goodbye.
`)
	g.Expect(res.ExitCode).To(BeZero(), res.String())
	var a switchboardv1.Agent
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "booking"}, &a)).To(Succeed())
	g.Expect(a.Spec.Script).To(HaveLen(4))
	g.Expect(*a.Spec.Script[0].BargeIn).To(BeFalse())
	confirm := a.Spec.Script[1].Gather
	g.Expect(confirm.Choices).To(HaveLen(2))
	g.Expect(confirm.Choices[0].Next).To(Equal("size"))
	// The API server filled the retry defaults.
	g.Expect(*confirm.NoMatch.Retries).To(BeEquivalentTo(2))
	g.Expect(*confirm.NoInput.Retries).To(BeEquivalentTo(1))
	g.Expect(a.Spec.Script[2].Gather.Capture).To(Equal(switchboardv1.CaptureNumber))
}

func TestKubectlApplyAcceptsScriptAgent(t *testing.T) {
	suite.Need(t)
	g := NewWithT(t)
	kc := controlPlane.Kubectl(t)
	ns := newOrganization(t)
	kc.MustRun(t, "create", "configmap", "chime", "-n", ns, "--from-literal=chime.wav=RIFF")
	res := kc.Apply(t, ns, `apiVersion: switchboard.dev/v1alpha1
kind: Agent
metadata:
  name: reminder
spec:
  fromNumber: "+14155550100"
  trunkRef:
    name: carrier
  maxDurationSeconds: 120
  extractedData:
  - name: confirmed
    type: boolean
  script:
  - say: "Hello {{ customer_name }}, this is the clinic."
  - play:
      configMapKeyRef: {name: chime, key: chime.wav}
  - gather:
      field: confirmed
      prompt: Press 1 to confirm, 2 to cancel.
      numDigits: 1
  - hangup: {}
  voicemail:
    action: leave_message
    message: "Please call the clinic back, {{customer_name}}."
`)
	g.Expect(res.ExitCode).To(BeZero(), res.String())
	var a switchboardv1.Agent
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "reminder"}, &a)).To(Succeed())
	g.Expect(a.Spec.Script).To(HaveLen(4))
	// The API server filled the gather defaults.
	g.Expect(a.Spec.Script[2].Gather.FinishOnKey).To(Equal("#"))
	g.Expect(a.Spec.Script[2].Gather.TimeoutSeconds).To(BeEquivalentTo(5))
}
