// Package s3test runs a real S3 server for tests: versitygw, an S3 gateway
// over a directory. `make test` installs a pinned versitygw into bin/ and
// passes its path in SWITCHBOARD_VERSITYGW.
package s3test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/switchboard-dev/switchboard/internal/recording"
	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

const (
	// EnvBinary names the environment variable holding versitygw's absolute
	// path.
	EnvBinary = "SWITCHBOARD_VERSITYGW"
	// Bucket is created by Start and named in the config it returns.
	Bucket = "recordings"

	startTimeout = 20 * time.Second
	maxOutput    = 64 << 10
)

// Start runs versitygw on a free loopback port over a temporary directory,
// with random credentials, creates Bucket and returns a config for it. The
// server stops when stop is called or t ends, whichever comes first. It
// fails t (never skips) when the binary is missing.
func Start(t testing.TB) (cfg recording.S3Config, stop func()) {
	t.Helper()
	bin := binary(t)
	cfg = recording.S3Config{Region: recording.DefaultS3Region, Bucket: Bucket,
		AccessKey: "AK" + randHex(9), SecretKey: randHex(20)}
	dir := t.TempDir()
	var srv *server
	var err error
	for range 3 { // another process may take the free port first
		if srv, err = start(t, bin, dir, cfg); !errors.Is(err, errPortTaken) {
			break
		}
	}
	if err != nil {
		t.Fatalf("starting versitygw: %v", err)
	}
	t.Cleanup(srv.stop) // runs before t.TempDir's removal (cleanups run last-in first-out)
	cfg.Endpoint = srv.addr
	client := Client(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := client.MakeBucket(ctx, cfg.Bucket, minio.MakeBucketOptions{Region: cfg.Region}); err != nil {
		srv.stop()
		t.Fatalf("versitygw: creating bucket %q: %v\n%s", cfg.Bucket, err, srv.output())
	}
	return cfg, srv.stop
}

// Client returns a minio-go client for cfg, to inspect the bucket or make
// other buckets.
func Client(t testing.TB, cfg recording.S3Config) *minio.Client {
	t.Helper()
	c, err := minio.New(cfg.Endpoint, &minio.Options{Creds: credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, ""),
		Secure: cfg.Secure, Region: cfg.Region, BucketLookup: minio.BucketLookupPath})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func binary(t testing.TB) string {
	t.Helper()
	testsupport.Needs(t, "versitygw (an S3 server)")
	bin := os.Getenv(EnvBinary)
	if bin == "" {
		t.Fatalf("%s is not set: run `make test`, which installs versitygw (the S3 server these tests use) into bin/ and sets it", EnvBinary)
	}
	if !filepath.IsAbs(bin) {
		t.Fatalf("%s=%q must be an absolute path (tests run in their package's folder); run `make test`", EnvBinary, bin)
	}
	if _, err := os.Stat(bin); err != nil { //nolint:gosec // the path is the test's configuration
		t.Fatalf("%s: %v; run `make test`, which installs it", EnvBinary, err)
	}
	return bin
}

var errPortTaken = errors.New("port taken")

type server struct {
	addr   string
	cmd    *exec.Cmd
	out    *testsupport.Buffer
	exited chan struct{}
	kill   context.CancelFunc
	once   sync.Once
}

func start(t testing.TB, bin, dir string, cfg recording.S3Config) (*server, error) {
	addr := testsupport.FreeAddr(t)
	// stop cancels run, which kills the process.
	run, cancelRun := context.WithCancel(context.Background())
	s := &server{addr: addr, out: &testsupport.Buffer{Limit: maxOutput}, exited: make(chan struct{}), kill: cancelRun}
	s.cmd = exec.CommandContext(run, bin, //nolint:gosec // the versitygw `make test` installed
		"--access", cfg.AccessKey, "--secret", cfg.SecretKey, "--region", cfg.Region,
		"--port", addr, "--quiet", "posix", dir)
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	s.cmd.SysProcAttr = sysProcAttr()
	if err := s.cmd.Start(); err != nil {
		cancelRun()
		return nil, err
	}
	go func() {
		_ = s.cmd.Wait()
		close(s.exited)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	dialer := &net.Dialer{Timeout: time.Second}
	for ctx.Err() == nil {
		select {
		case <-s.exited:
			s.kill()
			if strings.Contains(s.output(), "address already in use") {
				return nil, errPortTaken
			}
			return nil, fmt.Errorf("versitygw exited: %v\n%s", s.cmd.ProcessState, s.output())
		default:
		}
		if c, err := dialer.DialContext(ctx, "tcp", addr); err == nil {
			_ = c.Close()
			return s, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.stop()
	return nil, fmt.Errorf("versitygw did not listen on %s within %s\n%s", addr, startTimeout, s.output())
}

func (s *server) stop() {
	s.once.Do(func() {
		s.kill()
		<-s.exited
	})
}

func (s *server) output() string { return s.out.String() }

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
