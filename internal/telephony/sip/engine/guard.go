package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"

	"github.com/emiago/diago"
	sipmsg "github.com/emiago/sipgo/sip"
)

// AddressGuard decides where the engine may send SIP and RTP. A trunk's
// address and the answer's SDP are the organization's to choose: without
// the guard, a trunk at 127.0.0.1:8199, or an answer whose SDP points at
// 10.0.0.7, makes the operator send packets to its own network (and tells
// the organization which ports are open).
//
// The guard checks the addresses a host name resolves to, not the name,
// and the engine then sends to the address it checked (Trunk.Destination),
// so that a name answering a public address to the check and a private one
// to the send (DNS rebinding) gains nothing.
type AddressGuard struct {
	// Allow returns why ip may not be sent to, or nil; nil allows every
	// address (tests, and --dev).
	Allow func(ip netip.Addr) error
	// Resolver resolves trunk host names; nil is net.DefaultResolver.
	Resolver interface {
		LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
		LookupSRV(ctx context.Context, service, proto, name string) (string, []*net.SRV, error)
	}
}

// AddressError is an address the guard refused. Its text names the host
// and the kind of address ("127.0.0.1 is a loopback address"), never what
// a connection to it did.
type AddressError struct {
	// What is refused: "the trunk's host", "the answer's media address".
	What string
	// Host is the host as given; Reason the refusal ("a loopback address").
	Host, Reason string
	// Resolved is set when Host is a name, whose addresses are not shown
	// (they would tell an organization what the cluster's DNS holds).
	Resolved bool
}

func (e *AddressError) Error() string {
	if e.Resolved {
		return fmt.Sprintf("%s %s resolves to %s", e.What, e.Host, e.Reason)
	}
	return fmt.Sprintf("%s %s is %s", e.What, e.Host, e.Reason)
}

// errNoAddress is a trunk host that resolves to nothing: the trunk is
// unreachable, as when sipgo's own lookup failed.
var errNoAddress = errors.New("the trunk's host does not resolve")

// Pin returns t with Destination set to the checked address its INVITE
// and OPTIONS go to. A refused address is an *AddressError; a host that
// does not resolve is another error. A trunk already pinned is checked
// again (the policy may have changed since).
func (g AddressGuard) Pin(ctx context.Context, t Trunk) (Trunk, error) {
	u, transport, err := t.target("pin")
	if err != nil {
		return Trunk{}, err
	}
	host := strings.Trim(u.Host, "[]")
	if t.Destination.IsValid() {
		return t, g.check("the trunk's host", host, t.Destination.Addr(), false)
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		t.Destination = netip.AddrPortFrom(ip.Unmap(), port(u.Port, transport))
		return t, g.check("the trunk's host", host, ip, false)
	}
	addrs, p, err := g.lookup(ctx, host, u.Port, transport)
	if err != nil {
		return Trunk{}, err
	}
	for _, a := range addrs {
		if err := g.check("the trunk's host", host, a, true); err != nil {
			return Trunk{}, err
		}
	}
	t.Destination = netip.AddrPortFrom(addrs[0].Unmap(), p)
	return t, nil
}

// port is the trunk's port, or the transport's default.
func port(p int, transport string) uint16 {
	if p > 0 && p <= 65535 {
		return uint16(p)
	}
	return uint16(sipmsg.DefaultPort(transport)) //nolint:gosec // 5060
}

// lookup resolves host as sipgo would: its A and AAAA records, else (when
// the address has no port) its SIP SRV record (RFC 3263).
func (g AddressGuard) lookup(ctx context.Context, host string, p int, transport string) ([]netip.Addr, uint16, error) {
	r := g.resolver()
	addrs, err := r.LookupNetIP(ctx, "ip", host)
	if err == nil && len(addrs) > 0 {
		return addrs, port(p, transport), nil
	}
	if p == 0 {
		service, proto := "sip", transport
		if transport == "tls" { // RFC 3263: _sips._tcp
			service, proto = "sips", "tcp"
		}
		if _, srv, serr := r.LookupSRV(ctx, service, proto, host); serr == nil && len(srv) > 0 {
			target := strings.TrimSuffix(srv[0].Target, ".")
			if addrs, err = r.LookupNetIP(ctx, "ip", target); err == nil && len(addrs) > 0 {
				return addrs, srv[0].Port, nil
			}
		}
	}
	return nil, 0, errors.Join(errNoAddress, err)
}

func (g AddressGuard) resolver() interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
	LookupSRV(ctx context.Context, service, proto, name string) (string, []*net.SRV, error)
} {
	if g.Resolver == nil {
		return net.DefaultResolver
	}
	return g.Resolver
}

// check returns an *AddressError when ip is refused.
func (g AddressGuard) check(what, host string, ip netip.Addr, resolved bool) error {
	if g.Allow == nil {
		return nil
	}
	if err := g.Allow(ip); err != nil {
		return &AddressError{What: what, Host: host, Reason: err.Error(), Resolved: resolved}
	}
	return nil
}

// media checks the address the call's RTP goes to, once an answer or a
// re-INVITE set it: an unspecified one (0.0.0.0, which Linux delivers to
// the host itself) is refused like any other the policy refuses.
func (g AddressGuard) media(d *diago.DialogMedia) error {
	ms := d.MediaSession()
	if ms == nil {
		return nil
	}
	ip, ok := netip.AddrFromSlice(ms.Raddr.IP)
	if !ok {
		return &AddressError{What: "the answer's media address", Host: ms.Raddr.IP.String(), Reason: "not an IP address"}
	}
	return g.check("the answer's media address", ip.Unmap().String(), ip.Unmap(), false)
}

// remoteTarget checks where the call's ACK and BYE go: the answer's
// Contact, or its first Record-Route when it has one (RFC 3261 12.1.2).
// Names are resolved and checked as a trunk's are; sipgo resolves them
// again to send, so this guards against an address, not a rebinding name.
func (g AddressGuard) remoteTarget(ctx context.Context, res *sipmsg.Response) error {
	uri := sipmsg.Uri{}
	if rr := res.GetHeaders("Record-Route"); len(rr) > 0 {
		// The UAC's route set is the Record-Routes reversed; sipgo sends
		// to the first Route it makes of them, parsed as here.
		req := sipmsg.NewRequest(sipmsg.ACK, sipmsg.Uri{})
		req.AppendHeader(sipmsg.NewHeader("Route", rr[len(rr)-1].Value()))
		if r := req.Route(); r != nil {
			uri = r.Address
		}
	} else if c := res.Contact(); c != nil {
		uri = c.Address
	}
	host := strings.Trim(uri.Host, "[]")
	if host == "" {
		return nil
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return g.check("the answer's Contact", host, ip, false)
	}
	if g.Allow == nil {
		return nil
	}
	addrs, _, err := g.lookup(ctx, host, uri.Port, "udp")
	if err != nil {
		return &AddressError{What: "the answer's Contact", Host: host, Reason: "nothing (it does not resolve)", Resolved: true}
	}
	for _, a := range addrs {
		if err := g.check("the answer's Contact", host, a, true); err != nil {
			return err
		}
	}
	return nil
}

// mediaWatch ends a call whose far end moves its media (a re-INVITE) to
// an address the guard refuses. diago applies the new address before it
// tells us (OnMediaUpdate), so the call's audio stops at the next frame,
// and the call ends with HangupByAddressRefused.
type mediaWatch struct {
	guard   AddressGuard
	refused chan struct{}
	once    sync.Once
	err     error // set before refused is closed
}

func newMediaWatch(g AddressGuard) *mediaWatch {
	return &mediaWatch{guard: g, refused: make(chan struct{})}
}

// update is diago's OnMediaUpdate.
func (w *mediaWatch) update(d *diago.DialogMedia) {
	if err := w.guard.media(d); err != nil {
		w.once.Do(func() {
			w.err = err
			close(w.refused)
		})
	}
}

// isRefused reports whether the media moved to a refused address.
func (w *mediaWatch) isRefused() bool {
	select {
	case <-w.refused:
		return true
	default:
		return false
	}
}

// guardedWriter writes the call's audio while its media address is
// allowed.
type guardedWriter struct {
	w     io.Writer
	watch *mediaWatch
}

func (g guardedWriter) Write(p []byte) (int, error) {
	if g.watch.isRefused() {
		return 0, g.watch.err
	}
	return g.w.Write(p)
}
