package sip_test

import (
	"context"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/app"
	. "github.com/switchboard-dev/switchboard/internal/app/apptest"
	"github.com/switchboard-dev/switchboard/internal/devenv"
	"github.com/switchboard-dev/switchboard/internal/telephony/sip/siptest"
	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

// registerLine is one REGISTER kamailio's registrar accepted: its Expires
// and the port of the Contact (the replica's SIP port).
var registerLine = regexp.MustCompile(`registrar: accepted cseq=\d+ expires=(\d+) contact=<sip:[^@>]*@127\.0\.0\.1:(\d+)`)

type register struct{ expires, port int }

func registers(k *siptest.Kamailio) []register {
	var out []register
	for _, m := range registerLine.FindAllStringSubmatch(k.Output(), -1) {
		x, _ := strconv.Atoi(m[1])
		p, _ := strconv.Atoi(m[2])
		out = append(out, register{x, p})
	}
	return out
}

// A SIPTrunk with spec.registration is registered once per installation,
// by the leader, through kamailio's registrar (which grants 3 s, so that
// refreshes come soon): Registered is True, every REGISTER comes from the
// leader's SIP port; when the leader stops it removes its binding, and
// the next leader registers its own.
func TestSIPTrunkRegisteredByTheLeaderOnly(t *testing.T) {
	g := NewWithT(t)
	cfg := siptest.KamailioConfig{User: "alice", Password: "secret"}
	registrar := siptest.StartKamailio(t, filepath.Join(RepoRoot, "internal", "telephony", "sip", "registration",
		"testdata", "registrar.cfg"), cfg)

	MakeWayForReplicas(t)
	replica := func(id string, sipPort int) func(*app.Options) {
		return func(o *app.Options) {
			o.Worker.ID = id
			o.LeaderElection = app.LeaderElectionOptions{Enabled: true, Namespace: devenv.LeaderElectionNamespace}
			o.SIP.BindPort = sipPort
		}
	}
	firstPort, secondPort := testsupport.FreePort(t, "udp"), testsupport.FreePort(t, "udp")
	first, err := StartOperator(true, replica("register-first", firstPort))
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(first.Stop)
	leader := testsupport.WaitLeaseHolder(t, K8s, "", nil)
	second, err := StartOperator(true, replica("register-second", secondPort))
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(second.Stop)
	Operator = second

	o := NewOrg(t)
	CreateCredentials(t, o.Ns, "carrier-sip", "alice", "secret")
	tr := ApplyTrunk(t, o.Ns, "carrier", registrar.Addr, func(s *switchboardv1.SIPTrunkSpec) {
		s.CredentialsSecretRef = &switchboardv1.SecretReference{Name: "carrier-sip"}
		s.Registration = &switchboardv1.SIPRegistration{}
	})
	g.Eventually(registeredCondition(tr), 30*time.Second, 100*time.Millisecond).Should(And(
		HaveField("Status", metav1.ConditionTrue), HaveField("Reason", switchboardv1.ReasonRegistered)))
	// A registration and two refreshes, all from the leader.
	g.Eventually(func() int { return len(registers(registrar)) }, 30*time.Second, 100*time.Millisecond).
		Should(BeNumerically(">=", 3))
	g.Expect(registers(registrar)).To(HaveEach(register{3600, firstPort}),
		"REGISTERs from the leader's port %d only (the follower's is %d)", firstPort, secondPort)

	first.Stop()
	testsupport.WaitLeaseHolder(t, K8s, leader, nil)
	g.Eventually(func() []register { return registers(registrar) }, 30*time.Second, 100*time.Millisecond).
		Should(ContainElements(register{0, firstPort}, register{3600, secondPort}),
			"the old leader removes its binding and the new one registers")
	var after []register
	for _, r := range registers(registrar) {
		if r.port == firstPort && r.expires != 0 {
			after = nil
		} else {
			after = append(after, r)
		}
	}
	g.Expect(after).To(ContainElement(register{0, firstPort}), "the old leader's un-REGISTER comes after its last REGISTER")
	g.Eventually(registeredCondition(tr), 30*time.Second, 100*time.Millisecond).Should(
		HaveField("Status", metav1.ConditionTrue))
}

func registeredCondition(tr *switchboardv1.SIPTrunk) func(Gomega) metav1.Condition {
	return func(g Gomega) metav1.Condition {
		var cur switchboardv1.SIPTrunk
		g.Expect(K8s.Get(context.Background(), client.ObjectKeyFromObject(tr), &cur)).To(Succeed())
		c := apimeta.FindStatusCondition(cur.Status.Conditions, switchboardv1.RegisteredCondition)
		g.Expect(c).NotTo(BeNil())
		return *c
	}
}
