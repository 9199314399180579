// Package pgtest runs a private PostgreSQL server for tests: its own data
// folder and port, started from the PostgreSQL 15 binaries Debian installs
// (apt-get install postgresql), stopped and removed when the test ends.
// The way envtest runs kube-apiserver, but for PostgreSQL.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

// BinDirEnv names the environment variable that overrides DefaultBinDir,
// for systems that install PostgreSQL elsewhere.
const BinDirEnv = "SWITCHBOARD_PG_BIN"

// DefaultBinDir is where Debian's postgresql-15 package puts initdb and pg_ctl.
const DefaultBinDir = "/usr/lib/postgresql/15/bin"

// Database is the database Start creates and DSN points at.
const Database = "switchboard"

// Server is one private PostgreSQL server. Its methods fail the test that
// made it, so call them from that test's goroutine.
type Server struct {
	tb   testing.TB
	bin  string
	root string // holds the data folder, the log and the Unix socket
	port int
	// cred runs the server as the postgres user when the tests run as
	// root: initdb and postgres refuse to run as root.
	cred    *syscall.Credential
	running bool
}

// Start runs a fresh server with an empty database and returns its DSN.
func Start(tb testing.TB) string {
	tb.Helper()
	return NewServer(tb).DSN()
}

// NewServer runs a fresh server with an empty database. It is stopped and
// its files removed when tb ends; Stop and Start let a test take it down
// and bring it back on the same address.
func NewServer(tb testing.TB) *Server {
	tb.Helper()
	testsupport.Needs(tb, "PostgreSQL's server binaries")
	bin := os.Getenv(BinDirEnv)
	if bin == "" {
		bin = DefaultBinDir
	}
	for _, name := range []string{"initdb", "pg_ctl", "postgres"} {
		if _, err := os.Stat(filepath.Join(bin, name)); err != nil { //nolint:gosec // the folder is the test runner's choice
			tb.Fatalf("pgtest: %s not found in %s: install PostgreSQL 15 (apt-get install postgresql) "+
				"or set %s to the folder holding its binaries", name, bin, BinDirEnv)
		}
	}
	// Not tb.TempDir(): its long names can overflow the 107-byte limit of
	// the Unix socket path PostgreSQL creates in root.
	root, err := os.MkdirTemp("", "pgtest")
	if err != nil {
		tb.Fatal(err)
	}
	s := &Server{tb: tb, bin: bin, root: root}
	tb.Cleanup(s.destroy)
	if os.Geteuid() == 0 {
		s.cred = postgresUser(tb)
		if err := os.Chown(root, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			tb.Fatal(err)
		}
	}
	s.run("initdb", "-D", s.dataDir(), "-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C", "--no-sync")
	s.Start()
	s.CreateDatabase(tb, Database)
	return s
}

// DSN is the address of the server's database, stable across Stop and Start.
func (s *Server) DSN() string { return s.dsnOf(Database) }

// CreateDatabase creates another empty database and returns its DSN: a
// clean database per test without the cost of a server per test. tb is the
// calling test, which may be a subtest of the one that made the server.
func (s *Server) CreateDatabase(tb testing.TB, name string) string {
	tb.Helper()
	if err := s.command("createdb", "-h", "127.0.0.1", "-p", strconv.Itoa(s.port), "-U", "postgres", name); err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	return s.dsnOf(name)
}

func (s *Server) dsnOf(database string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.port, database)
}

// Start starts the stopped server again, on the same port. The first start
// picks a free port, trying another if it is taken meanwhile.
func (s *Server) Start() {
	s.tb.Helper()
	if s.running {
		return
	}
	attempts := 1
	if s.port == 0 {
		attempts = 3
	}
	var err error
	for range attempts {
		if s.port == 0 || attempts > 1 {
			s.port = testsupport.FreePort(s.tb, "tcp")
		}
		if err = s.pgctl("start"); err == nil {
			s.running = true
			return
		}
	}
	s.tb.Fatalf("pgtest: starting postgres: %v\n%s", err, s.log())
}

// Stop shuts the server down (fast mode: open sessions are ended), keeping
// its data for Start.
func (s *Server) Stop() {
	s.tb.Helper()
	if !s.running {
		return
	}
	if err := s.pgctl("stop", "-m", "fast"); err != nil {
		s.tb.Fatalf("pgtest: stopping postgres: %v\n%s", err, s.log())
	}
	s.running = false
}

func (s *Server) destroy() {
	if s.running {
		if err := s.pgctl("stop", "-m", "immediate"); err != nil {
			s.tb.Errorf("pgtest: stopping postgres: %v", err)
		}
	}
	if err := os.RemoveAll(s.root); err != nil {
		s.tb.Errorf("pgtest: %v", err)
	}
}

func (s *Server) pgctl(args ...string) error {
	// fsync off: a test server's data need not survive a machine crash.
	options := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off",
		s.port, s.root)
	return s.command("pg_ctl", append([]string{"-D", s.dataDir(), "-l", s.logFile(), "-w", "-o", options}, args...)...)
}

func (s *Server) run(name string, args ...string) {
	s.tb.Helper()
	if err := s.command(name, args...); err != nil {
		s.tb.Fatalf("pgtest: %v", err)
	}
}

func (s *Server) command(name string, args ...string) error {
	// A bound, so that a wedged server fails the test instead of hanging it.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(s.bin, name), args...) //nolint:gosec // PostgreSQL's own tools, from the folder the test runner chose
	cmd.Dir = s.root                                                     // the postgres user may not be allowed into the test's folder
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	if s.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

func (s *Server) dataDir() string { return filepath.Join(s.root, "data") }
func (s *Server) logFile() string { return filepath.Join(s.root, "postgres.log") }

func (s *Server) log() string {
	b, err := os.ReadFile(s.logFile())
	if err != nil {
		return ""
	}
	return string(b)
}

func postgresUser(tb testing.TB) *syscall.Credential {
	tb.Helper()
	u, err := user.Lookup("postgres")
	if err != nil {
		tb.Fatalf("pgtest: running as root needs the postgres system user, which apt-get install postgresql creates: %v", err)
	}
	uid, errU := strconv.ParseUint(u.Uid, 10, 32)
	gid, errG := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(errU, errG); err != nil {
		tb.Fatal(err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
}
