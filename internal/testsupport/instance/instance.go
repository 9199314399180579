// Package instance runs a whole Switchboard process (app.New) for the
// end-to-end suites, its API on a fresh loopback port. It is apart from
// package testsupport, which the tests of the packages Switchboard is made
// of import: they cannot import the whole of it.
package instance

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/switchboard-dev/switchboard/internal/app"
)

// Process is one running Switchboard.
type Process struct {
	// BaseURL is where its API and dashboard answer.
	BaseURL string
	// Manager is its manager: a test looks into its cache.
	Manager manager.Manager

	cancel context.CancelFunc
	done   chan error
	once   sync.Once
}

// Start runs Switchboard with opts as cfg's user, its APIListener and
// PublicURL set here, and returns once GET readyPath answers: the API
// serves once the caches are filled.
func Start(cfg *rest.Config, opts app.Options, readyPath string) (*Process, error) {
	lis, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Process{BaseURL: "http://" + lis.Addr().String(), done: make(chan error, 1)}
	opts.APIListener, opts.PublicURL = lis, p.BaseURL
	ctx, cancel := context.WithCancel(context.Background())
	mgr, err := app.New(ctx, cfg, opts)
	if err != nil {
		cancel()
		_ = lis.Close()
		return nil, err
	}
	p.cancel, p.Manager = cancel, mgr
	go func() { p.done <- mgr.Start(ctx) }()
	if err := p.waitServing(readyPath); err != nil {
		p.Stop()
		return nil, err
	}
	return p, nil
}

// waitServing polls readyPath until it answers, for a minute at most.
func (p *Process) waitServing(readyPath string) error {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		resp, err := http.Get(p.BaseURL + readyPath) //nolint:noctx,gosec // polling the process just started
		if err == nil {
			_ = resp.Body.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("the Switchboard at %s did not come up", p.BaseURL)
}

// Stop stops the process and waits until it has; calling it again does
// nothing.
func (p *Process) Stop() {
	p.once.Do(func() {
		p.cancel()
		if err := <-p.done; err != nil {
			fmt.Fprintln(os.Stderr, "Switchboard stopped with:", err)
		}
	})
}
