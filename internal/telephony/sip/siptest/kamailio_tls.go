package siptest

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// KamailioTLS is the certificate a TLS kamailio presents, in PEM, and
// whether it demands a client certificate (mutual TLS) chaining to CA.
type KamailioTLS struct {
	Cert, Key []byte
	// CA verifies client certificates; required with RequireClientCert.
	CA []byte
	// RequireClientCert refuses a client without a certificate that
	// chains to CA (verify_certificate and require_certificate).
	RequireClientCert bool
}

// KamailioTLSProcess is a kamailio listening for SIP over TLS too.
type KamailioTLSProcess struct {
	*Kamailio
	// TLSAddr is the host:port of its TLS listener.
	TLSAddr string
}

const kamailioTLSInstall = "apt-get install -y kamailio kamailio-tls-modules"

// StartKamailioTLS runs kamailio as StartKamailio does, with the template's
// [tlsport] and [tlscfg] filled: a TLS listener on another free port, its
// tls module configured with tc (TLS 1.2 or newer).
func StartKamailioTLS(t testing.TB, template string, cfg KamailioConfig, tc KamailioTLS) *KamailioTLSProcess {
	t.Helper()
	if _, err := os.Stat(filepath.Join(kamailioModules(), "tls.so")); err != nil {
		t.Fatalf("kamailio's tls module is not installed: these tests need it; install it with `%s`", kamailioTLSInstall)
	}
	if cfg.Relay == "" {
		cfg.Relay = "127.0.0.1:9"
	}
	dir := t.TempDir()
	tlsCfg := writeKamailioTLS(t, dir, tc)
	for attempt := 1; ; attempt++ {
		port, tlsPort := FreePort(t, "udp"), FreePort(t, "tcp")
		filled := filepath.Join(dir, "template-"+strconv.Itoa(attempt)+".cfg")
		b, err := os.ReadFile(template)
		if err != nil {
			t.Fatal(err)
		}
		s := strings.NewReplacer("[tlsport]", strconv.Itoa(tlsPort), "[tlscfg]", tlsCfg).Replace(string(b))
		if err := os.WriteFile(filled, []byte(s), 0o600); err != nil { //nolint:gosec // a test temp dir
			t.Fatal(err)
		}
		k, err := launchKamailio(t, filled, port, cfg)
		tlsAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(tlsPort))
		if err == nil {
			err = waitTCP(k, tlsAddr)
		}
		if err == nil {
			return &KamailioTLSProcess{Kamailio: k, TLSAddr: tlsAddr}
		}
		k.Stop()
		if attempt == 5 || !strings.Contains(k.Output(), "in use") {
			t.Fatal(err)
		}
	}
}

// kamailioModules is where Debian installs kamailio's modules.
func kamailioModules() string {
	for _, dir := range []string{"/usr/lib/x86_64-linux-gnu/kamailio/modules", "/usr/lib/aarch64-linux-gnu/kamailio/modules",
		"/usr/lib/kamailio/modules"} {
		if _, err := os.Stat(filepath.Join(dir, "tm.so")); err == nil {
			return dir
		}
	}
	return "/usr/lib/kamailio/modules"
}

// writeKamailioTLS writes the certificate files and the tls module's
// configuration into dir, and returns the configuration's path.
func writeKamailioTLS(t testing.TB, dir string, tc KamailioTLS) string {
	t.Helper()
	if _, err := tls.X509KeyPair(tc.Cert, tc.Key); err != nil {
		t.Fatalf("kamailio's certificate: %v", err)
	}
	files := map[string][]byte{"cert.pem": tc.Cert, "key.pem": tc.Key, "ca.pem": tc.CA}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	verify := "no"
	if tc.RequireClientCert {
		verify = "yes"
	}
	ca := ""
	if len(tc.CA) > 0 {
		ca = "ca_list = " + filepath.Join(dir, "ca.pem") + "\n"
	}
	conf := fmt.Sprintf(`[server:default]
method = TLSv1.2+
verify_certificate = %s
require_certificate = %s
private_key = %s
certificate = %s
%s
[client:default]
method = TLSv1.2+
verify_certificate = no
require_certificate = no
`, verify, verify, filepath.Join(dir, "key.pem"), filepath.Join(dir, "cert.pem"), ca)
	path := filepath.Join(dir, "tls.cfg")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// waitTCP waits until kamailio accepts connections on addr.
func waitTCP(k *Kamailio, addr string) error {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if k.exited() {
			return errors.New("kamailio exited early:\n" + k.Output())
		}
		if c, err := (&net.Dialer{}).DialContext(context.Background(), "tcp", addr); err == nil {
			_ = c.Close()
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return errors.New("kamailio is not listening on " + addr + ":\n" + k.Output())
}
