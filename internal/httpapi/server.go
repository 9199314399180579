// Package httpapi is the REST API of spec sections 4.1-4.3: a chi router
// that turns create-call requests into Call resources and renders Calls
// back as call objects.
package httpapi

import (
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-dev/switchboard/internal/apikeys"
	"github.com/switchboard-dev/switchboard/internal/calls"
	"github.com/switchboard-dev/switchboard/internal/directory"
	"github.com/switchboard-dev/switchboard/internal/history"
	"github.com/switchboard-dev/switchboard/internal/idempotency"
	"github.com/switchboard-dev/switchboard/internal/numberlists"
	"github.com/switchboard-dev/switchboard/internal/quota"
	"github.com/switchboard-dev/switchboard/internal/recording"
	"github.com/switchboard-dev/switchboard/internal/telephony"
	"github.com/switchboard-dev/switchboard/internal/webhook"
)

// Config is what the API needs.
type Config struct {
	Keys      *apikeys.Index
	Directory *directory.Directory
	// Calls reads calls, live or archived.
	Calls *calls.Book
	// Quota admits each new call against its organization's limits.
	Quota *quota.Admission
	// Stopper stops calls (POST /v1/calls/{call_id}/stop).
	Stopper *calls.Stopper
	// Idempotency runs a create-call request once per Idempotency-Key.
	Idempotency *idempotency.Keys
	// Deliveries is the webhook delivery log (the history store).
	Deliveries history.DeliveryLog
	// WakeDeliveries, if set, tells this process's delivery worker that a
	// retry was asked for, or that a test send freed its slot.
	WakeDeliveries func()
	Client         client.Client // writes Calls, WebhookEndpoints, Secrets
	// Live reads straight from the API server: signing Secrets, which the
	// cache does not hold.
	Live       client.Reader
	Numbers    *numberlists.Index
	Dialer     telephony.Dialer
	Recordings recording.Store
	// RecordingFiles serves signed recording links under /recordings/; nil
	// when the store serves its own links (S3).
	RecordingFiles http.Handler
	// DefaultRegion reads numbers sent without "+" (ISO 3166 code, e.g. US).
	DefaultRegion string
	// Webhooks is what the webhook-endpoint API needs.
	Webhooks WebhookConfig
	// Dashboard, if set, is served under /dashboard (its own sessions; no
	// API key).
	Dashboard http.Handler
	// RequestTimeout bounds each request's wait on the apiserver and the
	// history store (DefaultRequestTimeout when zero).
	RequestTimeout time.Duration
	Now            func() time.Time
	Log            logr.Logger
}

// WebhookConfig configures the webhook-endpoint API.
type WebhookConfig struct {
	// Sender sends test events (one attempt, no retries).
	Sender *webhook.Sender
	// Policy checks receiver URLs when endpoints are saved or tested.
	Policy webhook.URLPolicy
	// RotationOverlap is how long a rotated-out secret keeps signing.
	RotationOverlap time.Duration
	// InFlight bounds the attempts in flight per organization and
	// endpoint, which test sends share with the delivery worker; Lease is
	// how long a test send holds its slot at most (longer than it can take).
	InFlight history.InFlightLimits
	Lease    time.Duration
}

// NewRouter builds the API's handler.
func NewRouter(cfg Config) http.Handler {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	a := &api{cfg: cfg}
	r := chi.NewRouter()
	r.Use(middleware.RequestID, echoRequestID, logRequests(cfg.Log), recoverJSON(cfg.Log))
	r.NotFound(func(w http.ResponseWriter, _ *http.Request) { writeDetail(w, http.StatusNotFound, "Not Found") })
	r.MethodNotAllowed(func(w http.ResponseWriter, _ *http.Request) {
		writeDetail(w, http.StatusMethodNotAllowed, "Method Not Allowed")
	})
	if cfg.RecordingFiles != nil {
		r.Handle("/recordings/*", cfg.RecordingFiles)
	}
	r.Get("/v1/openapi.json", serveOpenAPI) // outside the keyed group below: no API key
	if cfg.Dashboard != nil {
		r.Mount("/dashboard", cfg.Dashboard)
	}
	r.Route("/v1", func(r chi.Router) {
		r.Use(withDeadline(cfg.RequestTimeout), authenticate(cfg.Keys, cfg.Now))
		r.Route("/calls", func(r chi.Router) {
			r.Post("/", a.createCall)
			r.Get("/", a.listCalls)
			r.Get("/{callID}", a.getCall)
			r.Get("/{callID}/recording", a.getRecording)
			r.Post("/{callID}/stop", a.stopCall)
		})
		r.Get("/concurrency", a.getConcurrency)
		r.Route("/webhook-endpoints", a.webhookRoutes)
	})
	// The hosted service's SDK paths, under the same keys (compat.go).
	r.Group(func(r chi.Router) {
		r.Use(withDeadline(cfg.RequestTimeout), authenticate(cfg.Keys, cfg.Now))
		a.sdkRoutes(r)
	})
	return r
}

type api struct {
	cfg Config
}

// echoRequestID returns the request id the log line carries, so a customer
// can quote it to support.
func echoRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(middleware.RequestIDHeader, middleware.GetReqID(r.Context()))
		next.ServeHTTP(w, r)
	})
}

// logRequests logs one line per request: never headers, never bodies, so
// neither keys nor callers' data reach the log.
func logRequests(log logr.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
			next.ServeHTTP(ww, r)
			took := time.Since(start)
			observeRequest(chi.RouteContext(r.Context()), r.Method, ww.Status(), took)
			log.V(1).Info("request", "method", r.Method, "path", r.URL.Path, "status", ww.Status(),
				"duration", took, "requestID", middleware.GetReqID(r.Context()))
		})
	}
}

// recoverJSON turns a panic into a JSON 500 instead of a dropped connection.
func recoverJSON(log logr.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer func() {
				if v := recover(); v != nil {
					if v == http.ErrAbortHandler {
						panic(v)
					}
					log.Error(nil, "panic serving request", "panic", v, "path", r.URL.Path)
					writeDetail(w, http.StatusInternalServerError, "Internal Server Error")
				}
			}()
			next.ServeHTTP(w, r)
		})
	}
}
