package engine

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pion/rtp"

	"github.com/switchboard-dev/switchboard/internal/telephony/sip/siptest"
	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

// testCA is a certificate authority made by the test: nothing is
// committed.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t testing.TB, name string) *testCA {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber: serial(t), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

func (ca *testCA) pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

// leaf is a certificate for 127.0.0.1 (and carrier.test) signed by ca,
// valid from notBefore to notAfter, in PEM.
func (ca *testCA) leaf(t testing.TB, client bool, notBefore, notAfter time.Time) (certPEM, keyPEM []byte) {
	t.Helper()
	key := newKey(t)
	usage := x509.ExtKeyUsageServerAuth
	if client {
		usage = x509.ExtKeyUsageClientAuth
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(t), Subject: pkix.Name{CommonName: "carrier.test"},
		NotBefore: notBefore, NotAfter: notAfter,
		DNSNames: []string{"carrier.test"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

func (ca *testCA) server(t testing.TB) (certPEM, keyPEM []byte) {
	return ca.leaf(t, false, time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour))
}

func (ca *testCA) client(t testing.TB) *tls.Certificate {
	t.Helper()
	c, k := ca.leaf(t, true, time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour))
	cert, err := tls.X509KeyPair(c, k)
	if err != nil {
		t.Fatal(err)
	}
	return &cert
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func serial(t testing.TB) *big.Int {
	t.Helper()
	n, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// startKamailioTLS runs testdata/kamailio_tls.cfg: a digest-authenticating
// proxy (alice/secret) with a TLS listener presenting cert and key,
// relaying INVITEs to relay.
func startKamailioTLS(t *testing.T, cert, key []byte, clientCA *testCA, relay string) *siptest.KamailioTLSProcess {
	t.Helper()
	tc := siptest.KamailioTLS{Cert: cert, Key: key}
	if clientCA != nil {
		tc.CA, tc.RequireClientCert = clientCA.pem, true
	}
	return siptest.StartKamailioTLS(t, filepath.Join("testdata", "kamailio_tls.cfg"),
		kamailioConfig{User: "alice", Password: "secret", Relay: relay}, tc)
}

// tlsTrunk is a trunk to k over TLS with the carrier's credentials.
func tlsTrunk(k *siptest.KamailioTLSProcess, settings *TrunkTLS, media string) Trunk {
	return Trunk{Address: "sip:" + k.TLSAddr, Transport: "tls", TLS: settings, Media: media,
		Username: "alice", Password: "secret"}
}

// A call over mutual TLS through kamailio to a callee that requires SRTP:
// the callee's audio is in the recording, and the probe finds the trunk
// healthy over the same kind of connection.
func TestTLSCallWithSRTP(t *testing.T) {
	ca := newTestCA(t, "carrier CA")
	cert, key := ca.server(t)
	callee := siptest.StartBaresip(t, "+14155550123", tone(3*time.Second), siptest.WithMediaEnc("srtp-mand"))
	k := startKamailioTLS(t, cert, key, ca, callee.Addr)
	var logs testsupport.Buffer
	e := newEngine(t, EngineConfig{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	trunk := tlsTrunk(k, &TrunkTLS{Roots: ca.pool(), ClientCert: ca.client(t)}, MediaSRTPRequired)

	if r := e.Probe(t.Context(), trunk); !r.Healthy() {
		t.Fatalf("probe over mutual TLS: %+v", r)
	}
	rec := filepath.Join(t.TempDir(), "call.wav")
	res := place(t, e, trunk, CallSpec{RecordPath: rec, MaxDuration: 8 * time.Second})
	callee.WaitCallEnded(t)
	if !res.Answered || res.HangupBy != HangupByCallee {
		t.Fatalf("result %+v: want answered, the callee hanging up when its tone ends", res)
	}
	_, right := readRecording(t, rec)
	if loud := meanAbs(right); loud < 1000 {
		t.Errorf("callee channel mean amplitude %.0f: want the callee's tone (about 5100)", loud)
	}
	// The SRTP master keys travel as a=crypto:... inline:<key>.
	if out := logs.String(); out == "" || strings.Contains(out, "inline:") || strings.Contains(out, "PRIVATE KEY") {
		t.Errorf("the engine's debug log is empty or has key material:\n%s", out)
	}
}

// A trunk whose certificate does not verify is refused before anything is
// sent: the probe says why, and a call fails at Pin (the dialer's
// dispatch_failed) and at Place, with the verification's words.
func TestTLSCertificateRefused(t *testing.T) {
	ca := newTestCA(t, "carrier CA")
	good, goodKey := ca.server(t)
	expired, expiredKey := ca.leaf(t, false, time.Now().Add(-48*time.Hour), time.Now().Add(-24*time.Hour))
	other := newTestCA(t, "someone else's CA")
	unknown, unknownKey := other.server(t)
	e := newEngine(t, EngineConfig{})
	for _, tc := range []struct {
		name      string
		cert, key []byte
		settings  *TrunkTLS
		words     string
	}{
		{"wrong server name", good, goodKey, &TrunkTLS{Roots: ca.pool(), ServerName: "sip.elsewhere.test"},
			"not sip.elsewhere.test"},
		{"expired certificate", expired, expiredKey, &TrunkTLS{Roots: ca.pool()}, "expired"},
		{"unknown authority", unknown, unknownKey, &TrunkTLS{Roots: ca.pool()}, "unknown authority"},
		{"system roots", good, goodKey, nil, "unknown authority"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := startKamailioTLS(t, tc.cert, tc.key, nil, "")
			trunk := tlsTrunk(k, tc.settings, MediaRTP)
			r := e.Probe(t.Context(), trunk)
			if r.Healthy() || r.TLS == nil || r.TLS.Kind != TLSCertificateInvalid || !strings.Contains(r.Err.Error(), tc.words) {
				t.Errorf("probe %+v (%v): want CertificateInvalid saying %q", r, r.Err, tc.words)
			}
			var insecure *TLSError
			if _, err := e.Pin(t.Context(), trunk); !errors.As(err, &insecure) || insecure.Kind != TLSCertificateInvalid {
				t.Errorf("Pin: %v, want a CertificateInvalid TLSError", err)
			}
			res, err := e.Place(t.Context(), trunk, CallSpec{From: "+14155550100", To: "+14155550123"})
			if !errors.As(err, &insecure) || res.Answered || !res.Outcome.TransportError {
				t.Errorf("Place: %+v, %v: want refused before the INVITE", res, err)
			}
		})
	}
}

// recordRouting is uas.xml answering through a proxy: it record-routes,
// so that our BYE takes the proxy's path too.
func recordRouting(t *testing.T) []string {
	return editedScenario(t, "uas.xml", "[last_CSeq:]\n      Contact:", "[last_CSeq:]\n      [last_Record-Route:]\n      Contact:")
}

// A callee answering with clear RTP (sipp's RTP/AVP answer, no a=crypto):
// a trunk requiring SRTP hangs up at once (srtp_required), one preferring
// it goes on in clear.
func TestSRTPClearAnswer(t *testing.T) {
	ca := newTestCA(t, "carrier CA")
	cert, key := ca.server(t)
	e := newEngine(t, EngineConfig{})
	t.Run("required", func(t *testing.T) {
		callee := startSipp(t, "udp", recordRouting(t)...)
		k := startKamailioTLS(t, cert, key, nil, callee.addr)
		res := place(t, e, tlsTrunk(k, &TrunkTLS{Roots: ca.pool()}, MediaSRTPRequired), CallSpec{Script: sayTone(time.Second)})
		callee.wait(t)
		if !res.Answered || res.HangupBy != HangupBySRTPRequired || res.DisconnectionReason() != "srtp_required" ||
			len(res.Events) != 0 {
			t.Fatalf("result %+v: want hung up at once, srtp_required, nothing played", res)
		}
	})
	t.Run("preferred", func(t *testing.T) {
		callee := startSipp(t, "udp", recordRouting(t)...)
		k := startKamailioTLS(t, cert, key, nil, callee.addr)
		res := place(t, e, tlsTrunk(k, &TrunkTLS{Roots: ca.pool()}, MediaSRTPPreferred),
			CallSpec{Script: sayTone(time.Second)})
		callee.wait(t)
		if !res.Answered || res.HangupBy != HangupByAgent || len(res.Events) != 1 {
			t.Fatalf("result %+v: want the script played in clear, then our hangup", res)
		}
	})
}

// A callee without SRTP (baresip without its srtp module) on a trunk
// that requires it never gets clear audio from us.
func TestSRTPRequiredCalleeWithoutSRTP(t *testing.T) {
	ca := newTestCA(t, "carrier CA")
	cert, key := ca.server(t)
	callee := siptest.StartBaresip(t, "+14155550123", tone(3*time.Second))
	k := startKamailioTLS(t, cert, key, nil, callee.Addr)
	e := newEngine(t, EngineConfig{})
	res := place(t, e, tlsTrunk(k, &TrunkTLS{Roots: ca.pool()}, MediaSRTPRequired), CallSpec{Script: sayTone(time.Second)})
	// baresip refuses the RTP/SAVP offer it cannot take.
	if res.Answered || res.Outcome.StatusCode != 488 {
		t.Fatalf("result %+v: want 488 Not Acceptable Here, never answered", res)
	}
}

// Clear RTP packets sent to an SRTP call's media port fail authentication
// and are dropped: none of their (loud) audio is in the recording, and the
// callee's own audio goes on being recorded after them.
func TestSRTPIgnoresInjectedClearRTP(t *testing.T) {
	ca := newTestCA(t, "carrier CA")
	cert, key := ca.server(t)
	callee := siptest.StartBaresip(t, "+14155550123", tone(3*time.Second), siptest.WithMediaEnc("srtp-mand"))
	k := startKamailioTLS(t, cert, key, nil, callee.Addr)
	e := newEngine(t, EngineConfig{})
	rec := filepath.Join(t.TempDir(), "call.wav")
	before := ourUDPPorts(t)
	injected := make(chan int, 1)
	res := place(t, e, tlsTrunk(k, &TrunkTLS{Roots: ca.pool()}, MediaSRTPRequired), CallSpec{RecordPath: rec,
		OnAnswer: func(time.Time) { go func() { injected <- injectClearRTP(t, rtpPortOfCall(t, before), 50) }() }})
	callee.WaitCallEnded(t)
	if n := <-injected; n != 50 || !res.Answered || res.HangupBy != HangupByCallee {
		t.Fatalf("result %+v, %d packets injected: want the callee's whole tone, 50 packets", res, n)
	}
	_, right := readRecording(t, rec)
	for i, s := range right {
		if s > 9000 || s < -9000 {
			t.Fatalf("sample %d of the callee channel is %d: the injected audio (about -32000) got in", i, s)
		}
	}
	if loud := meanAbs(right[len(right)/2:]); loud < 1000 {
		t.Errorf("second half of the callee channel: mean amplitude %.0f, want the tone (about 5100)", loud)
	}
}

// ourUDPPorts are the local ports of this process's UDP sockets, read
// from /proc: the call's RTP port is the one that appears with its RTCP
// port (the next one) once the call is up.
func ourUDPPorts(t *testing.T) map[int]bool {
	t.Helper()
	inodes := map[string]bool{}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		if link, err := os.Readlink("/proc/self/fd/" + fd.Name()); err == nil && strings.HasPrefix(link, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	ports := map[int]bool{}
	for _, table := range []string{"/proc/self/net/udp", "/proc/self/net/udp6"} {
		b, err := os.ReadFile(table)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) < 10 || !inodes[f[9]] {
				continue
			}
			_, hexPort, _ := strings.Cut(f[1], ":")
			if p, err := strconv.ParseInt(hexPort, 16, 32); err == nil {
				ports[int(p)] = true
			}
		}
	}
	return ports
}

// rtpPortOfCall is the even port of the RTP and RTCP pair opened since
// before.
func rtpPortOfCall(t *testing.T, before map[int]bool) int {
	now := ourUDPPorts(t)
	for p := range now {
		if !before[p] && now[p+1] && !before[p+1] {
			return p
		}
	}
	t.Error("no new RTP and RTCP pair of ports")
	return 9 // discard
}

// injectClearRTP sends n clear RTP packets of the loudest PCMU samples to
// port, 10 ms apart, and returns how many it sent.
func injectClearRTP(t *testing.T, port, n int) int {
	c, err := net.Dial("udp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Error(err)
		return 0
	}
	defer func() { _ = c.Close() }()
	sent := 0
	for i := range n {
		pkt := rtp.Packet{Header: rtp.Header{Version: 2, PayloadType: 0, SequenceNumber: uint16(i), //nolint:gosec // < 50
			Timestamp: uint32(i * 160), SSRC: 0x5eed}, Payload: bytes.Repeat([]byte{0x00}, 160)} //nolint:gosec // < 50
		b, err := pkt.Marshal()
		if err != nil {
			t.Error(err)
			return sent
		}
		if _, err := c.Write(b); err == nil {
			sent++
		}
		time.Sleep(10 * time.Millisecond)
	}
	return sent
}

// A carrier that requires a client certificate refuses a trunk without
// one: with TLS 1.3 it says so only after the handshake, so the probe
// finds the trunk unreachable, and no call gets through.
func TestTLSClientCertificateRequired(t *testing.T) {
	ca := newTestCA(t, "carrier CA")
	cert, key := ca.server(t)
	k := startKamailioTLS(t, cert, key, ca, "")
	e := newEngine(t, EngineConfig{})
	r := e.Probe(t.Context(), tlsTrunk(k, &TrunkTLS{Roots: ca.pool()}, MediaRTP))
	t.Logf("probe without a client certificate: %+v", r)
	if r.Healthy() || r.Reachable {
		t.Errorf("probe %+v: want refused", r)
	}
	other := newTestCA(t, "someone else's CA")
	r = e.Probe(t.Context(), tlsTrunk(k, &TrunkTLS{Roots: ca.pool(), ClientCert: other.client(t)}, MediaRTP))
	t.Logf("probe with a client certificate of another CA: %+v", r)
	if r.Healthy() || r.Reachable {
		t.Errorf("probe %+v: want refused", r)
	}
}

// A callee without SRTP refuses the SRTP offer (488): a trunk that
// prefers SRTP offers clear RTP again, and the call goes through with the
// callee's audio in the recording.
func TestSRTPPreferredFallsBackOn488(t *testing.T) {
	ca := newTestCA(t, "carrier CA")
	cert, key := ca.server(t)
	callee := siptest.StartBaresip(t, "+14155550123", tone(3*time.Second))
	k := startKamailioTLS(t, cert, key, nil, callee.Addr)
	e := newEngine(t, EngineConfig{})
	rec := filepath.Join(t.TempDir(), "call.wav")
	res := place(t, e, tlsTrunk(k, &TrunkTLS{Roots: ca.pool()}, MediaSRTPPreferred), CallSpec{RecordPath: rec})
	callee.WaitCallEnded(t)
	if !res.Answered || res.HangupBy != HangupByCallee {
		t.Fatalf("result %+v: want answered in clear, the callee hanging up when its tone ends", res)
	}
	_, right := readRecording(t, rec)
	if loud := meanAbs(right); loud < 1000 {
		t.Errorf("callee channel mean amplitude %.0f: want the callee's tone (about 5100)", loud)
	}
}
