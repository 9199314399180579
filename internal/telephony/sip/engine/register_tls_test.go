package engine

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/telephony/sip/siptest"
)

// Registration over TLS verifies the registrar's certificate as a call
// does: with the right CA the registrar (kamailio's tls module) accepts
// REGISTER over TLS; with a CA that did not sign its certificate nothing
// is sent (no REGISTER, no credentials) and the result says why.
func TestRegisterOverTLS(t *testing.T) {
	ca := newTestCA(t, "carrier CA")
	cert, key := ca.server(t)
	k := siptest.StartKamailioTLS(t, filepath.Join("testdata", "kamailio_tls_registrar.cfg"),
		kamailioConfig{User: "alice", Password: "secret"}, siptest.KamailioTLS{Cert: cert, Key: key})
	e := newEngine(t, EngineConfig{})
	register := func(roots *testCA) RegisterResult {
		trunk := Trunk{Transport: "tls", TLS: &TrunkTLS{Roots: roots.pool()}, Username: "alice", Password: "secret"}
		return e.NewRegistrant(trunk, Registration{Registrar: "sip:" + k.TLSAddr, User: "alice",
			Expires: time.Minute}).Register(t.Context())
	}

	res := register(ca)
	if res.Err != nil || res.StatusCode != 200 || res.Granted != time.Minute {
		t.Fatalf("result %+v (%v): want 200 granting a minute", res, res.Err)
	}
	if n := strings.Count(k.Output(), "registrar: accepted proto=tls"); n != 1 {
		t.Fatalf("kamailio accepted %d REGISTERs over TLS, want 1:\n%s", n, k.Output())
	}

	res = register(newTestCA(t, "someone else's CA"))
	var insecure *TLSError
	if res.TLS == nil || res.TLS.Kind != TLSCertificateInvalid || !errors.As(res.Err, &insecure) ||
		!strings.Contains(res.Err.Error(), "unknown authority") || res.Reachable || res.StatusCode != 0 {
		t.Fatalf("result %+v (%v): want CertificateInvalid naming the unknown authority, nothing answered", res, res.Err)
	}
	if n := strings.Count(k.Output(), "registrar: accepted"); n != 1 {
		t.Errorf("kamailio accepted %d REGISTERs, want only the first", n)
	}
}
