package sip

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// baresip is one running baresip (Debian package baresip-core) playing a
// callee that auto-answers and plays a WAV file as its voice; it hangs up
// when the file ends. Its ctrl_tcp module takes commands, such as sending
// DTMF, while the call is up.
type baresip struct {
	addr     string // SIP host:port
	ctrlAddr string // ctrl_tcp host:port
	cmd      *exec.Cmd
	out      *lockedWriter
	done     chan struct{}
}

// startBaresip starts baresip on free loopback ports, playing voice (8 kHz
// mono 16-bit) as its audio, and stops it when the test ends.
func startBaresip(t *testing.T, voice []int16) *baresip {
	t.Helper()
	if _, err := exec.LookPath("baresip"); err != nil {
		t.Fatalf("baresip is not on PATH: these tests need a real SIP callee; install it with "+
			"`apt-get install -y baresip-core` (%v)", err)
	}
	dir := t.TempDir()
	sipPort, ctrlPort := freePort(t, "udp"), freePort(t, "tcp")
	b := &baresip{
		addr:     net.JoinHostPort("127.0.0.1", strconv.Itoa(sipPort)),
		ctrlAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(ctrlPort)),
		out:      &lockedWriter{w: &bytes.Buffer{}},
		done:     make(chan struct{}),
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
`, b.addr, writeWAV(t, voice, 1), baresipModules(t), b.ctrlAddr)
	for name, content := range map[string]string{
		"config":   config,
		"accounts": "<sip:+14155550123@127.0.0.1>;regint=0;answermode=auto\n", // place's default To
		"contacts": "",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	b.cmd = exec.Command("baresip", "-f", dir)
	b.cmd.Stdout, b.cmd.Stderr = b.out, b.out
	if err := b.cmd.Start(); err != nil {
		t.Fatalf("start baresip: %v", err)
	}
	go func() {
		_ = b.cmd.Wait()
		close(b.done)
	}()
	t.Cleanup(func() {
		_ = b.cmd.Process.Kill()
		<-b.done
		if t.Failed() {
			t.Logf("baresip:\n%s", b.output())
		}
	})
	b.waitReady(t, sipPort)
	return b
}

// baresipModules is the folder of baresip's modules.
func baresipModules(t *testing.T) string {
	t.Helper()
	for _, dir := range []string{"/usr/lib/baresip/modules", "/usr/local/lib/baresip/modules"} {
		if _, err := os.Stat(filepath.Join(dir, "aufile.so")); err == nil {
			return dir
		}
	}
	t.Fatal("baresip's modules (aufile.so) are not installed")
	return ""
}

func (b *baresip) output() string {
	b.out.mu.Lock()
	defer b.out.mu.Unlock()
	return b.out.w.String()
}

// waitReady waits until baresip holds its SIP port and takes commands.
func (b *baresip) waitReady(t *testing.T, sipPort int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-b.done:
			t.Fatalf("baresip exited early:\n%s", b.output())
		default:
		}
		if c, err := net.Dial("tcp", b.ctrlAddr); err == nil {
			_ = c.Close()
			if udpBound(sipPort) {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("baresip is not listening on %s:\n%s", b.addr, b.output())
}

// command sends a command to ctrl_tcp (a JSON netstring), as typing
// "/command params" would.
func (b *baresip) command(command, params string) error {
	c, err := net.DialTimeout("tcp", b.ctrlAddr, 2*time.Second)
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	msg := fmt.Sprintf(`{"command":%q,"params":%q,"token":"t"}`, command, params)
	_, err = fmt.Fprintf(c, "%d:%s,", len(msg), msg)
	if err != nil {
		return err
	}
	// Wait for the answer, so that the command ran before we return.
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, err = c.Read(make([]byte, 512))
	return err
}

// waitCallEnded waits for baresip to log the end of its call (it runs on
// until killed).
func (b *baresip) waitCallEnded(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if bytes.Contains([]byte(b.output()), []byte("terminated")) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("baresip's call did not end")
}
