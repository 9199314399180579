package apptest

import (
	"net"
	"testing"
	"time"

	sipmsg "github.com/emiago/sipgo/sip"
)

// OptionsAnswerer is a SIP carrier on loopback UDP that answers OPTIONS
// 200 OK and reports the source port of each.
type OptionsAnswerer struct {
	Addr  string
	Ports chan int
}

func StartOptionsAnswerer(t *testing.T) *OptionsAnswerer {
	t.Helper()
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	a := &OptionsAnswerer{Addr: conn.LocalAddr().String(), Ports: make(chan int, 1024)}
	go func() {
		buf := make([]byte, 65535)
		for {
			n, from, err := conn.ReadFrom(buf)
			if err != nil {
				return
			}
			msg, err := sipmsg.ParseMessage(buf[:n])
			req, ok := msg.(*sipmsg.Request)
			if err != nil || !ok || req.Method != sipmsg.OPTIONS {
				continue
			}
			res := sipmsg.NewResponseFromRequest(req, sipmsg.StatusOK, "OK", nil)
			_, _ = conn.WriteTo([]byte(res.String()), from)
			select {
			case a.Ports <- from.(*net.UDPAddr).Port:
			default:
			}
		}
	}()
	return a
}

// Next returns the source ports of the next n OPTIONS.
func (a *OptionsAnswerer) Next(t *testing.T, n int) []int {
	t.Helper()
	ports := make([]int, 0, n)
	for len(ports) < n {
		select {
		case p := <-a.Ports:
			ports = append(ports, p)
		case <-time.After(30 * time.Second):
			t.Fatalf("%d OPTIONS in 30 s, want %d (ports %v)", len(ports), n, ports)
		}
	}
	return ports
}

// Drain forgets the OPTIONS received so far.
func (a *OptionsAnswerer) Drain() {
	for {
		select {
		case <-a.Ports:
		default:
			return
		}
	}
}
