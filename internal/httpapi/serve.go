package httpapi

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
)

// Server serves the REST API (and the dashboard beside it) on every
// replica, not only the leader, once the caches and indexes it reads are
// filled.
type Server struct {
	Listener net.Listener
	Handler  http.Handler
	// Cache and Synced say when what the handlers read is filled.
	Cache interface {
		WaitForCacheSync(ctx context.Context) bool
	}
	Synced []func() bool
	Log    logr.Logger
	// OnServing, if set, is called once requests are accepted.
	OnServing func()
	serving   atomic.Bool
}

// NeedLeaderElection: every replica serves.
func (s *Server) NeedLeaderElection() bool { return false }

// Ready is the readiness check: nil once serving.
func (s *Server) Ready(*http.Request) error {
	if !s.serving.Load() {
		return fmt.Errorf("REST API not serving yet")
	}
	return nil
}

// Start serves until ctx ends, then shuts down gracefully.
func (s *Server) Start(ctx context.Context) error {
	if !s.Cache.WaitForCacheSync(ctx) {
		return fmt.Errorf("caches did not sync")
	}
	for _, synced := range s.Synced {
		for !synced() {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	srv := &http.Server{
		Handler:           s.Handler,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    16 << 10,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(s.Listener) }()
	s.serving.Store(true)
	s.Log.Info("REST API serving", "addr", s.Listener.Addr().String())
	if s.OnServing != nil {
		s.OnServing()
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	return srv.Shutdown(shutdownCtx)
}
