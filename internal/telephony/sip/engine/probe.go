package engine

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"syscall"
	"time"

	"github.com/emiago/diago"
	"github.com/emiago/sipgo"
	sipmsg "github.com/emiago/sipgo/sip"
)

// DefaultProbeTimeout is how long Probe waits for an answer to OPTIONS.
// Five seconds is far beyond any healthy trunk's round trip, and short
// enough that a dead trunk does not hold a reconcile for long.
const DefaultProbeTimeout = 5 * time.Second

// ProbeResult is what a trunk answered to an OPTIONS request.
type ProbeResult struct {
	// StatusCode and Reason are the final response's; zero and empty when
	// none came.
	StatusCode int
	Reason     string
	// Reachable: the trunk answered at all.
	Reachable bool
	// AuthFailed: the trunk refused our credentials (401 or 407 after we
	// answered its challenge, or with no credentials to answer it with; or
	// 403).
	AuthFailed bool
	// Err says why the trunk was unreachable, or describes the error
	// status a reachable trunk answered; nil when Healthy. An unreachable
	// trunk's Err says the same whatever happened (no answer, a refused
	// connection, a name that does not resolve): it is shown to the
	// organization, to which the difference would tell which of the
	// network's ports are open. Cause has the system's error, for the
	// operator's log.
	Err, Cause error
	// Refused is set when the guard refused the trunk's address: no
	// OPTIONS was sent. Err says why.
	Refused bool
	// TLS is set when the trunk's TLS connection failed verification or
	// its handshake: no OPTIONS was sent. Err says why.
	TLS *TLSError
	// RTT is the time from sending OPTIONS (the last one, when challenged)
	// to its final response.
	RTT time.Duration
}

// Healthy reports a trunk that answered and accepted us. Besides 2xx, it
// counts 404, 405 and 501 as healthy: many carriers answer an OPTIONS
// whose Request-URI has no user, or OPTIONS at all, that way while placing
// calls fine; the trunk processed our request, which is what a probe can
// tell. Any other error status (a 503, say) is a trunk error.
func (r ProbeResult) Healthy() bool {
	return r.Reachable && !r.AuthFailed && r.Err == nil
}

// healthyStatus reports the statuses Healthy accepts.
func healthyStatus(code int) bool {
	switch code {
	case sipmsg.StatusNotFound, sipmsg.StatusMethodNotAllowed, sipmsg.StatusNotImplemented:
		return true
	}
	return code >= 200 && code < 300
}

// Probe sends OPTIONS to the trunk (Request-URI: the trunk's address,
// without a user) over its transport, answers a 401 or 407 digest challenge
// once with the trunk's credentials, and reports the final response. No
// response within DefaultProbeTimeout (or before ctx ends), or a transport
// error, makes the trunk unreachable.
func (e *Engine) Probe(ctx context.Context, t Trunk) ProbeResult {
	ctx, cancel := context.WithTimeout(ctx, DefaultProbeTimeout)
	defer cancel()
	// target wants a number: the probe goes to the trunk itself.
	recipient, transport, err := t.target("probe")
	if err != nil {
		return ProbeResult{Err: err}
	}
	recipient.User = ""
	t, err = e.Pin(ctx, t)
	var refused *AddressError
	var insecure *TLSError
	if errors.As(err, &refused) {
		return ProbeResult{Err: err, Refused: true}
	} else if errors.As(err, &insecure) {
		// Nothing was sent: the trunk is not the one it claims to be.
		return ProbeResult{Err: err, TLS: insecure}
	} else if err != nil {
		return ProbeResult{Err: errUnreachable, Cause: err}
	}
	client, err := e.clientFor(recipient, transport)
	if err != nil {
		return ProbeResult{Err: err}
	}
	req := newOptions(recipient, transport, t.Destination)
	start := time.Now()
	res, err := client.Do(ctx, req)
	for try := 0; err != nil && isListenerRace(err) && try < 5 && ctx.Err() == nil; try++ {
		time.Sleep(20 * time.Millisecond)
		req, start = newOptions(recipient, transport, t.Destination), time.Now()
		res, err = client.Do(ctx, req)
	}
	challenged := err == nil && isChallenge(res.StatusCode)
	if challenged && t.Username != "" {
		// DoDigestAuth reuses req: its CSeq is bumped and Via replaced.
		start = time.Now()
		res, err = client.DoDigestAuth(ctx, req, res, sipgo.DigestAuth{Username: t.Username, Password: t.Password})
	}
	rtt := time.Since(start)
	if err != nil {
		return ProbeResult{Err: errUnreachable, Cause: err, RTT: rtt}
	}
	return judge(res, t.Username != "", rtt)
}

// judge turns the final response to OPTIONS into a ProbeResult.
func judge(res *sipmsg.Response, haveCredentials bool, rtt time.Duration) ProbeResult {
	r := ProbeResult{StatusCode: res.StatusCode, Reason: res.Reason, Reachable: true, RTT: rtt}
	// Trunks that authenticate by source address answer 403 too.
	if r.Err = authRefusal(res, haveCredentials, "the trunk"); r.Err != nil {
		r.AuthFailed = true
	} else if !healthyStatus(res.StatusCode) {
		r.Err = fmt.Errorf("the trunk answered OPTIONS with %d %s", res.StatusCode, res.Reason)
	}
	return r
}

// authRefusal says why who (the trunk, the registrar) refused us, when
// res is a refusal of our credentials or of us: a challenge we could not
// answer, one that came again after our answer, or a 403; nil otherwise.
func authRefusal(res *sipmsg.Response, haveCredentials bool, who string) error {
	switch {
	case isChallenge(res.StatusCode) && !haveCredentials:
		return fmt.Errorf("%s asks for credentials (%d %s) and none are configured", who, res.StatusCode, res.Reason)
	case isChallenge(res.StatusCode):
		return fmt.Errorf("%s refused the credentials (%d %s)", who, res.StatusCode, res.Reason)
	case res.StatusCode == sipmsg.StatusForbidden:
		return fmt.Errorf("%s refused us (%d %s)", who, res.StatusCode, res.Reason)
	}
	return nil
}

func isChallenge(code int) bool {
	return code == sipmsg.StatusUnauthorized || code == sipmsg.StatusProxyAuthRequired
}

// errUnreachable is the Err of every probe that got no answer.
var errUnreachable = fmt.Errorf("no answer to OPTIONS within %s", DefaultProbeTimeout)

// clientFor returns the sipgo client diago uses for calls over transport,
// so that the probe leaves from the same listener, with the same Via
// host, as a call would (a carrier that allows our calls by source address
// sees the same address).
func (e *Engine) clientFor(recipient sipmsg.Uri, transport string) (*sipgo.Client, error) {
	d, err := e.dg.NewDialog(recipient, diago.NewDialogOptions{TransportID: transport})
	if err != nil {
		return nil, fmt.Errorf("sip transport %s: %w", transport, err)
	}
	defer func() { _ = d.Close() }()
	return d.UA.Client, nil
}

// isListenerRace reports the error of a request made while the engine's
// UDP listener, already bound, is not yet registered for reuse: sipgo
// signals a listener ready before it adds it to its connection pool, so a
// request right after the engine starts may try to bind the same port
// itself. Tried again a moment later, the request finds the listener.
func isListenerRace(err error) bool {
	return errors.Is(err, syscall.EADDRINUSE)
}

// newOptions builds the OPTIONS request to the pinned destination; the
// client adds Via, From, To, Call-ID, CSeq and Max-Forwards.
func newOptions(recipient sipmsg.Uri, transport string, dest netip.AddrPort) *sipmsg.Request {
	req := sipmsg.NewRequest(sipmsg.OPTIONS, recipient)
	req.SetDestination(dest.String())
	req.SetTransport(sipmsg.NetworkToUpper(transport))
	req.AppendHeader(sipmsg.NewHeader("Accept", "application/sdp"))
	return req
}
