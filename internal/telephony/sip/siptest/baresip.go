package siptest

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/telephony/audio"
)

// Baresip is one running baresip (Debian package baresip-core) playing a
// callee that auto-answers and plays a WAV file as its voice; it hangs up
// when the file ends. Its ctrl_tcp module takes commands, such as sending
// DTMF, while the call is up.
type Baresip struct {
	*Process
	// Addr is its SIP host:port.
	Addr     string
	ctrlAddr string
}

// StartBaresip starts baresip on free loopback ports as the callee user
// (an E.164 number: baresip answers 404 to any other Request-URI user),
// playing voice (8 kHz mono 16-bit) as its audio, and stops it when the
// test ends. Its SIP port is found free for UDP, but baresip binds TCP on
// it too, where another process may be: then it tries other ports.
func StartBaresip(t testing.TB, user string, voice []int16, opts ...BaresipOption) *Baresip {
	t.Helper()
	wav := writeMonoWAV(t, voice)
	var o baresipOptions
	for _, opt := range opts {
		opt(&o)
	}
	for attempt := 1; ; attempt++ {
		b, err := launchBaresip(t, user, wav, o)
		if err == nil {
			return b
		}
		b.Stop()
		if attempt == 5 || !strings.Contains(b.Output(), "Address already in use") {
			t.Fatal(err)
		}
	}
}

// BaresipOption changes how StartBaresip configures baresip.
type BaresipOption func(*baresipOptions)

type baresipOptions struct{ mediaenc string }

// WithMediaEnc sets the account's media encryption (its srtp module):
// "srtp" (offered and accepted, clear RTP too) or "srtp-mand" (SRTP only).
func WithMediaEnc(mediaenc string) BaresipOption {
	return func(o *baresipOptions) { o.mediaenc = mediaenc }
}

func launchBaresip(t testing.TB, user, wav string, o baresipOptions) (*Baresip, error) {
	t.Helper()
	dir := t.TempDir()
	sipPort, ctrlPort := FreePort(t, "udp"), FreePort(t, "tcp")
	b := &Baresip{
		Addr:     net.JoinHostPort("127.0.0.1", strconv.Itoa(sipPort)),
		ctrlAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(ctrlPort)),
	}
	// No sound card: aufile is the microphone. baresip 1.0's aufile cannot
	// play, so the callee hears nothing, which baresip tolerates.
	config := fmt.Sprintf(`poll_method epoll
sip_listen %s
sip_transports udp
audio_source aufile,%s
audio_player aufile,/dev/null
module_path %s
module g711.so
module aufile.so
module_app account.so
module_app menu.so
module_app ctrl_tcp.so
ctrl_tcp_listen %s
`, b.Addr, wav, baresipModules(t), b.ctrlAddr)
	account := "<sip:" + user + "@127.0.0.1>;regint=0;answermode=auto"
	if o.mediaenc != "" {
		config += "module srtp.so\n"
		account += ";mediaenc=" + o.mediaenc
	}
	for name, content := range map[string]string{
		"config":   config,
		"accounts": account + "\n",
		"contacts": "",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	b.Process = Start(t, "apt-get install -y baresip", "baresip", "-f", dir)
	return b, b.waitReady(sipPort)
}

// baresipModules is the folder of baresip's modules.
func baresipModules(t testing.TB) string {
	t.Helper()
	for _, dir := range []string{"/usr/lib/baresip/modules", "/usr/local/lib/baresip/modules"} {
		if _, err := os.Stat(filepath.Join(dir, "aufile.so")); err == nil {
			return dir
		}
	}
	t.Fatal("baresip's modules (aufile.so) are not installed")
	return ""
}

// writeMonoWAV writes 8 kHz mono 16-bit PCM as a WAV file in a temporary
// folder and returns its path.
func writeMonoWAV(t testing.TB, pcm []int16) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "voice.wav")
	if err := os.WriteFile(path, audio.Mono(pcm), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// waitReady waits until baresip holds its SIP port and takes commands.
func (b *Baresip) waitReady(sipPort int) error {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if b.exited() {
			return fmt.Errorf("baresip exited early:\n%s", b.Output())
		}
		if c, err := (&net.Dialer{}).DialContext(context.Background(), "tcp", b.ctrlAddr); err == nil {
			_ = c.Close()
			if UDPBound(sipPort) {
				return nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("baresip is not listening on %s:\n%s", b.Addr, b.Output())
}

// Command sends a command to ctrl_tcp (a JSON netstring), as typing
// "/command params" would, and waits for its answer.
func (b *Baresip) Command(command, params string) error {
	c, err := (&net.Dialer{Timeout: 2 * time.Second}).DialContext(context.Background(), "tcp", b.ctrlAddr)
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	msg := fmt.Sprintf(`{"command":%q,"params":%q,"token":"t"}`, command, params)
	if _, err = fmt.Fprintf(c, "%d:%s,", len(msg), msg); err != nil {
		return err
	}
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, err = c.Read(make([]byte, 512))
	return err
}

// WaitCallEnded waits for baresip to log the end of its call (it runs on
// until killed).
func (b *Baresip) WaitCallEnded(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if strings.Contains(b.Output(), "terminated") {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("baresip's call did not end")
}
