package history

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/switchboard-dev/switchboard/internal/history/pgtest"
)

// The health check follows PostgreSQL going away and coming back.
func TestHealthCheckFollowsTheStore(t *testing.T) {
	pg := pgtest.NewServer(t)
	store, err := Open(context.Background(), pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- (&HealthCheck{Store: store, Interval: 50 * time.Millisecond, Log: logr.Discard()}).Start(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})

	waitGauge(t, 1)
	pg.Stop()
	waitGauge(t, 0)
	pg.Start()
	waitGauge(t, 1)
}

func waitGauge(t *testing.T, want float64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for testutil.ToFloat64(storeUp) != want {
		if time.Now().After(deadline) {
			t.Fatalf("switchboard_history_store_up = %v, want %v", testutil.ToFloat64(storeUp), want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
