package engine

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/emiago/diago"
	"github.com/emiago/sipgo"
	sipmsg "github.com/emiago/sipgo/sip"
)

// DefaultRegisterTimeout bounds one REGISTER (and its authenticated
// retry): over UDP, the transaction's own timeout is 32 s, far too long to
// learn that a registrar is gone.
const DefaultRegisterTimeout = 5 * time.Second

// Registration is one binding a trunk keeps with its carrier's registrar.
type Registration struct {
	// Registrar is the SIP URI REGISTER is sent to, sip:host[:port].
	Registrar string
	// User is the user part of the address of record,
	// sip:User@<registrar host>.
	User string
	// Expires is the binding's lifetime asked for.
	Expires time.Duration
}

// RegisterResult is what the registrar answered to one REGISTER.
type RegisterResult struct {
	// StatusCode and Reason are the final response's; zero and empty when
	// none came.
	StatusCode int
	Reason     string
	// Reachable: the registrar answered at all.
	Reachable bool
	// AuthFailed: the registrar refused our credentials (401 or 407 after
	// we answered its challenge, or with none to answer with; or 403).
	AuthFailed bool
	// Refused: the guard refused the registrar's address; nothing was sent.
	Refused bool
	// TLS is set when the registrar's TLS connection failed verification
	// or its handshake (as a call's or a probe's would): nothing was sent,
	// never in clear text either. Err says why.
	TLS *TLSError
	// Err says why the REGISTER failed, in words for the trunk's
	// condition; nil on a 200. Cause has the system's error, for the log.
	Err, Cause error
	// Granted is the binding's lifetime the registrar granted (our
	// Contact's expires parameter in the 200, else its Expires header,
	// else what we asked for); zero after an un-REGISTER.
	Granted time.Duration
}

// Registrant sends the REGISTERs of one binding. It keeps the Call-ID and
// increments the CSeq across refreshes, as RFC 3261 section 10.2.4 asks
// (registrars refuse a REGISTER whose CSeq goes back). Not safe for
// concurrent use: one loop owns it.
type Registrant struct {
	e      *Engine
	trunk  Trunk
	reg    Registration
	callID string
	cseq   uint32
}

// NewRegistrant prepares the binding of reg with the trunk's transport and
// credentials; t.Address is not used (reg.Registrar is).
func (e *Engine) NewRegistrant(t Trunk, reg Registration) *Registrant {
	t.Address, t.Destination = reg.Registrar, netip.AddrPort{}
	return &Registrant{e: e, trunk: t, reg: reg, callID: sipmsg.GenerateTagN(32)}
}

// Register sends REGISTER for the binding, answers a digest challenge once
// with the trunk's credentials, and reports the final response.
func (r *Registrant) Register(ctx context.Context) RegisterResult {
	return r.send(ctx, r.reg.Expires, false)
}

// Unregister removes our binding (Contact with expires 0). Only our own
// Contact goes: a new leader's binding for the same address of record
// stays.
func (r *Registrant) Unregister(ctx context.Context) RegisterResult {
	return r.send(ctx, 0, false)
}

func (r *Registrant) send(ctx context.Context, expires time.Duration, retried bool) RegisterResult {
	if !retried {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultRegisterTimeout)
		defer cancel()
	}
	recipient, transport, err := r.trunk.target("registrar")
	if err != nil {
		return RegisterResult{Err: err}
	}
	recipient.User = ""
	// Engine.Pin, not the guard's: over TLS it also verifies the
	// registrar's certificate before REGISTER (and our credentials) go out.
	t, err := r.e.Pin(ctx, r.trunk)
	var refused *AddressError
	var insecure *TLSError
	if errors.As(err, &refused) {
		return RegisterResult{Err: err, Refused: true}
	} else if errors.As(err, &insecure) {
		return RegisterResult{Err: err, TLS: insecure}
	} else if err != nil {
		return RegisterResult{Err: errNoRegistrar, Cause: err}
	}
	client, contact, err := r.e.contactFor(recipient, transport)
	if err != nil {
		return RegisterResult{Err: err}
	}
	res, err := r.exchange(ctx, client, func() *sipmsg.Request {
		return r.newRegister(recipient, transport, t.Destination.String(), contact, expires)
	})
	if err != nil {
		return RegisterResult{Err: errNoRegistrar, Cause: err}
	}
	if longer := minExpires(res); expires > 0 && longer > expires && !retried {
		// 423 Interval Too Brief: ask again for what the registrar
		// allows, and keep asking for it at each refresh.
		r.reg.Expires = longer
		return r.send(ctx, longer, true)
	}
	return judgeRegister(res, r.trunk.Username != "", contact, expires)
}

// exchange sends the REGISTER build makes, again when the listener race
// struck, and answers a digest challenge once.
func (r *Registrant) exchange(ctx context.Context, client *sipgo.Client, build func() *sipmsg.Request) (*sipmsg.Response, error) {
	req := build()
	res, err := client.Do(ctx, req)
	for try := 0; err != nil && isListenerRace(err) && try < 5 && ctx.Err() == nil; try++ {
		time.Sleep(20 * time.Millisecond)
		req = build()
		res, err = client.Do(ctx, req)
	}
	if err == nil && isChallenge(res.StatusCode) && r.trunk.Username != "" {
		// DoDigestAuth bumps req's CSeq: remember it for the next one.
		res, err = client.DoDigestAuth(ctx, req, res, sipgo.DigestAuth{Username: r.trunk.Username, Password: r.trunk.Password})
		r.cseq = req.CSeq().SeqNo
	}
	return res, err
}

// minExpires is the Min-Expires of a 423 Interval Too Brief, else zero.
func minExpires(res *sipmsg.Response) time.Duration {
	h := res.GetHeader("Min-Expires")
	if res.StatusCode != sipmsg.StatusIntervalToBrief || h == nil {
		return 0
	}
	n, err := strconv.Atoi(strings.TrimSpace(h.Value()))
	if err != nil || n <= 0 || n > 86400 {
		return 0
	}
	return time.Duration(n) * time.Second
}

// newRegister builds a REGISTER from the address of record to itself, with
// our Contact; the client adds Via and Max-Forwards.
func (r *Registrant) newRegister(recipient sipmsg.Uri, transport, dest string, contact sipmsg.ContactHeader,
	expires time.Duration) *sipmsg.Request {
	req := sipmsg.NewRequest(sipmsg.REGISTER, recipient)
	req.SetDestination(dest)
	req.SetTransport(sipmsg.NetworkToUpper(transport))
	aor := sipmsg.Uri{Scheme: "sip", User: r.reg.User, Host: recipient.Host}
	from := &sipmsg.FromHeader{Address: aor, Params: sipmsg.NewParams()}
	from.Params.Add("tag", sipmsg.GenerateTagN(16))
	req.AppendHeader(from)
	req.AppendHeader(&sipmsg.ToHeader{Address: aor, Params: sipmsg.NewParams()})
	callID := sipmsg.CallIDHeader(r.callID)
	req.AppendHeader(&callID)
	r.cseq++
	req.AppendHeader(&sipmsg.CSeqHeader{SeqNo: r.cseq, MethodName: sipmsg.REGISTER})
	c := contact.Clone()
	req.AppendHeader(c)
	secs := sipmsg.ExpiresHeader(expires / time.Second) //nolint:gosec // at most a day (the API's bound)
	req.AppendHeader(&secs)
	req.AppendHeader(sipmsg.NewHeader("Allow", "INVITE, ACK, CANCEL, BYE, OPTIONS, INFO, UPDATE"))
	return req
}

// judgeRegister turns the final response to REGISTER into a result.
func judgeRegister(res *sipmsg.Response, haveCredentials bool, contact sipmsg.ContactHeader, asked time.Duration) RegisterResult {
	r := RegisterResult{StatusCode: res.StatusCode, Reason: res.Reason, Reachable: true}
	switch r.Err = authRefusal(res, haveCredentials, "the registrar"); {
	case r.Err != nil:
		r.AuthFailed = true
	case res.StatusCode < 200 || res.StatusCode >= 300:
		r.Err = fmt.Errorf("the registrar answered REGISTER with %d %s", res.StatusCode, res.Reason)
	case asked > 0:
		r.Granted = granted(res, contact, asked)
	}
	return r
}

// granted reads the lifetime of our binding from a 200: our Contact's
// expires parameter (the 200 lists every binding of the address of
// record), else the Expires header, else what we asked for.
func granted(res *sipmsg.Response, ours sipmsg.ContactHeader, asked time.Duration) time.Duration {
	for _, h := range res.GetHeaders("Contact") {
		c, ok := h.(*sipmsg.ContactHeader)
		if !ok || !sameContact(c.Address, ours.Address) {
			continue
		}
		if v, ok := c.Params.Get("expires"); ok {
			if n, err := strconv.Atoi(v); err == nil && n > 0 {
				return time.Duration(n) * time.Second
			}
		}
	}
	if h := res.GetHeader("Expires"); h != nil {
		if n, err := strconv.Atoi(strings.TrimSpace(h.Value())); err == nil && n > 0 {
			return time.Duration(n) * time.Second
		}
	}
	return asked
}

func sameContact(a, b sipmsg.Uri) bool {
	return a.User == b.User && strings.EqualFold(a.Host, b.Host) && a.Port == b.Port
}

// errNoRegistrar is the Err of every REGISTER that got no answer; like a
// probe's, it says nothing of which ports are open.
var errNoRegistrar = fmt.Errorf("no answer to REGISTER within %s", DefaultRegisterTimeout)

// contactFor returns the client diago uses for calls over transport and
// the Contact it puts in them: the registrar then sends calls for the
// address of record to the listener our INVITEs come from.
func (e *Engine) contactFor(recipient sipmsg.Uri, transport string) (*sipgo.Client, sipmsg.ContactHeader, error) {
	d, err := e.dg.NewDialog(recipient, diago.NewDialogOptions{TransportID: transport})
	if err != nil {
		return nil, sipmsg.ContactHeader{}, fmt.Errorf("sip transport %s: %w", transport, err)
	}
	defer func() { _ = d.Close() }()
	return d.UA.Client, *d.UA.ContactHDR.Clone(), nil
}
