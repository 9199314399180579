package testsupport

import (
	"context"
	"net"
	"strconv"
	"testing"
)

// FreePort returns a loopback port nothing listens on now, for a server the
// test starts in another process. transport is "tcp" or "udp".
func FreePort(t testing.TB, transport string) int {
	t.Helper()
	var lc net.ListenConfig
	if transport == "udp" {
		c, err := lc.ListenPacket(context.Background(), "udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = c.Close() }()
		return c.LocalAddr().(*net.UDPAddr).Port
	}
	l, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

// FreeAddr is FreePort's TCP port as a loopback host:port.
func FreeAddr(t testing.TB) string {
	t.Helper()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(FreePort(t, "tcp")))
}
