package engine

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/emiago/sipgo"
	sipmsg "github.com/emiago/sipgo/sip"
)

// TrunkTLS is how a trunk's TLS connection is verified and authenticated.
type TrunkTLS struct {
	// Roots are the CAs the carrier's certificate must chain to; nil is
	// the system's roots.
	Roots *x509.CertPool
	// ServerName is the name the certificate must be valid for; empty is
	// the host of the trunk's address.
	ServerName string
	// ClientCert is presented when the carrier asks for one (mutual TLS);
	// nil presents none.
	ClientCert *tls.Certificate
}

// TLS failure kinds (TLSError.Kind).
const (
	// TLSCertificateInvalid: the carrier's certificate failed
	// verification.
	TLSCertificateInvalid = "CertificateInvalid"
	// TLSHandshakeFailed: the handshake failed otherwise (no common
	// version, our certificate refused, the connection closed).
	TLSHandshakeFailed = "TLSHandshakeFailed"
)

// TLSError is a trunk whose TLS connection could not be set up or
// verified: nothing was sent on it.
type TLSError struct {
	// Kind is TLSCertificateInvalid or TLSHandshakeFailed.
	Kind string
	// Err has the verification's or the handshake's words.
	Err error
}

func (e *TLSError) Error() string {
	if e.Kind == TLSCertificateInvalid {
		return "the trunk's TLS certificate is not valid: " + e.Err.Error()
	}
	return "the TLS handshake with the trunk failed: " + e.Err.Error()
}

func (e *TLSError) Unwrap() error { return e.Err }

// tlsPolicies is the engine's TLS client side. sipgo dials every TLS
// connection with one tls.Config, and reuses connections by remote
// address; the handshake does not say which address it is for (no SNI for
// the pinned IP address). So the engine verifies per trunk itself: before
// a call or probe sends anything, secure opens (or reuses) the connection
// to the trunk's pinned address and verifies its certificate against that
// trunk's roots and server name. The handshake's VerifyConnection is a
// safety net for a connection sipgo opens by itself (the verified one
// closed meanwhile): it refuses a certificate that no trunk's settings
// accept, so there is never a clear or unverified fallback.
type tlsPolicies struct {
	mu   sync.Mutex
	list []*TrunkTLS // the trunks' settings seen, newest last
}

type trunkTLSKey struct{}

// config is the client tls.Config of the engine's user agent.
func (p *tlsPolicies) config() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		// Verification is VerifyConnection's and secure's, per trunk: the
		// standard one would check the dialed IP address.
		InsecureSkipVerify:   true, //nolint:gosec // verified in VerifyConnection and secure
		VerifyConnection:     p.verifyConnection,
		GetClientCertificate: p.clientCertificate,
	}
}

// maxPolicies bounds the settings kept: they pile up only as trunks change.
const maxPolicies = 1024

// remember records a trunk's TLS settings.
func (p *tlsPolicies) remember(t *TrunkTLS) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if slices.ContainsFunc(p.list, func(o *TrunkTLS) bool { return sameTLS(o, t) }) {
		return
	}
	if len(p.list) >= maxPolicies {
		p.list = p.list[1:]
	}
	p.list = append(p.list, t)
}

// Equal reports settings that verify and authenticate alike (the same
// roots, server name and client certificate), however they were built:
// each resolution of a trunk builds new ones. Nil equals only nil.
func (t *TrunkTLS) Equal(o *TrunkTLS) bool {
	if t == nil || o == nil {
		return t == o
	}
	return sameTLS(t, o)
}

func sameTLS(a, b *TrunkTLS) bool {
	return a.ServerName == b.ServerName && sameCert(a.ClientCert, b.ClientCert) &&
		(a.Roots == b.Roots || (a.Roots != nil && b.Roots != nil && a.Roots.Equal(b.Roots)))
}

// sameCert compares client certificates by their leaf.
func sameCert(a, b *tls.Certificate) bool {
	if a == nil || b == nil || len(a.Certificate) == 0 || len(b.Certificate) == 0 {
		return a == b
	}
	return bytes.Equal(a.Certificate[0], b.Certificate[0])
}

// verifyConnection accepts a handshake whose certificate some trunk's
// settings accept (secure then checks it against the trunk's own).
func (p *tlsPolicies) verifyConnection(cs tls.ConnectionState) error {
	p.mu.Lock()
	list := slices.Clone(p.list)
	p.mu.Unlock()
	if len(list) == 0 {
		return errors.New("no trunk expects a TLS connection")
	}
	var first error
	for i := len(list) - 1; i >= 0; i-- {
		err := verifyPeer(cs, list[i])
		if err == nil {
			return nil
		}
		first = cmpErr(first, err)
	}
	return first
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// verifyPeer verifies the peer's chain against t's roots and server name.
func verifyPeer(cs tls.ConnectionState, t *TrunkTLS) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("the trunk presented no certificate")
	}
	opts := x509.VerifyOptions{Roots: t.Roots, DNSName: t.ServerName, Intermediates: x509.NewCertPool()}
	for _, c := range cs.PeerCertificates[1:] {
		opts.Intermediates.AddCert(c)
	}
	_, err := cs.PeerCertificates[0].Verify(opts)
	return err
}

// clientCertificate presents the certificate of the trunk being dialed
// (the dial's context carries it), or none.
func (p *tlsPolicies) clientCertificate(info *tls.CertificateRequestInfo) (*tls.Certificate, error) {
	if t, ok := info.Context().Value(trunkTLSKey{}).(*TrunkTLS); ok && t.ClientCert != nil {
		return t.ClientCert, nil
	}
	return &tls.Certificate{}, nil
}

// withTLS is the trunk's settings, with the server name defaulted to the
// address's host.
func (t Trunk) withTLS(host string) *TrunkTLS {
	out := TrunkTLS{}
	if t.TLS != nil {
		out = *t.TLS
	}
	if out.ServerName == "" {
		out.ServerName = host
	}
	return &out
}

// secure opens (or reuses) the TLS connection to the pinned trunk and
// verifies it with the trunk's settings, before any request goes out on
// it. A failure is a *TLSError, and the connection is closed.
func (e *Engine) secure(ctx context.Context, t Trunk, recipient sipmsg.Uri) error {
	settings := t.withTLS(trimHost(recipient.Host))
	e.tls.remember(settings)
	client, err := e.clientFor(recipient, "tls")
	if err != nil {
		return err
	}
	req := newOptions(recipient, "tls", t.Destination)
	if err := sipgo.ClientRequestBuild(client, req); err != nil {
		return err
	}
	conn, err := e.ua.TransportLayer().ClientRequestConnection(withTrunkTLS(ctx, settings), req)
	if err != nil {
		return classifyTLS(err)
	}
	tc, ok := conn.(*sipmsg.TCPConnection)
	var tlsConn *tls.Conn
	if ok {
		tlsConn, ok = tc.Conn.(*tls.Conn)
	}
	if !ok {
		_, _ = conn.TryClose()
		return &TLSError{Kind: TLSHandshakeFailed, Err: fmt.Errorf("not a TLS connection: %T", conn)}
	}
	if err := verifyPeer(tlsConn.ConnectionState(), settings); err != nil {
		// Verified for another trunk, not this one: nobody uses it.
		_ = tc.Close()
		return &TLSError{Kind: TLSCertificateInvalid, Err: err}
	}
	_, _ = conn.TryClose() // our reference; the pool keeps the connection
	return nil
}

// classifyTLS tells a certificate that failed verification from another
// handshake failure; an error before any handshake (refused, timeout) is
// returned as it is.
func classifyTLS(err error) error {
	var unknown x509.UnknownAuthorityError
	var invalid x509.CertificateInvalidError
	var host x509.HostnameError
	var verify *tls.CertificateVerificationError
	switch {
	case errors.As(err, &unknown), errors.As(err, &invalid), errors.As(err, &host), errors.As(err, &verify):
		return &TLSError{Kind: TLSCertificateInvalid, Err: rootCause(err)}
	case isHandshake(err):
		return &TLSError{Kind: TLSHandshakeFailed, Err: rootCause(err)}
	}
	return err
}

// isHandshake reports an error of the TLS handshake rather than of the
// TCP connection under it.
func isHandshake(err error) bool {
	var alert tls.AlertError
	var rec tls.RecordHeaderError
	var opErr *net.OpError
	if errors.As(err, &alert) || errors.As(err, &rec) {
		return true
	}
	if errors.As(err, &opErr) && opErr.Op == "remote error" {
		return true
	}
	return containsHandshake(err)
}

// containsHandshake: sipgo wraps the handshake's error as "TLS handshake
// error: ..." with %w, after a dial that succeeded.
func containsHandshake(err error) bool {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if len(e.Error()) >= 19 && e.Error()[:19] == "TLS handshake error" {
			return true
		}
	}
	return false
}

// rootCause drops sipgo's wrapping for a shorter, stable message.
func rootCause(err error) error {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err
		}
		err = next
	}
}

// serverTLS is the certificate of the engine's TLS listener: peers may
// open connections to the Contact we announce. Outbound trunks verify us,
// if at all, by our client certificate, so an ephemeral self-signed one
// serves.
func serverTLS(host string) (*tls.Config, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: "switchboard"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(10 * 365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if ip := net.ParseIP(host); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	return &tls.Config{MinVersion: tls.VersionTLS12,
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}, nil
}

func trimHost(h string) string {
	if len(h) > 1 && h[0] == '[' && h[len(h)-1] == ']' {
		return h[1 : len(h)-1]
	}
	return h
}

// withTrunkTLS carries the trunk's settings to the handshakes dialed with
// ctx, which present its client certificate.
func withTrunkTLS(ctx context.Context, t *TrunkTLS) context.Context {
	return context.WithValue(ctx, trunkTLSKey{}, t)
}
