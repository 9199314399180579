package siptest

import (
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// RestartKamailio stops k and starts kamailio again on the same port with
// the same template and cfg: whatever it kept in memory (a registrar's
// bindings) is gone, and its peers find it at the address they know.
func RestartKamailio(t testing.TB, k *Kamailio, path string, cfg KamailioConfig) *Kamailio {
	t.Helper()
	k.Stop()
	_, p, err := net.SplitHostPort(k.Addr)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(p)
	if cfg.Relay == "" {
		cfg.Relay = "127.0.0.1:9"
	}
	for attempt := 1; ; attempt++ {
		next, err := launchKamailio(t, path, port, cfg)
		if err == nil {
			return next
		}
		next.Stop()
		if attempt == 5 || !strings.Contains(next.Output(), "in use") {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
