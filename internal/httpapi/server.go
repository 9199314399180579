// Package httpapi is the REST API (the OpenAPI document at /v1/openapi.json;
// README, "The REST API"): a chi router
// that turns create-call requests into Call resources and renders Calls
// back as call objects.
package httpapi

import (
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/go-logr/logr"

	"github.com/switchboard-dev/switchboard/internal/authlimit"
	"github.com/switchboard-dev/switchboard/internal/idempotency"
	"github.com/switchboard-dev/switchboard/internal/services"
)

// Config is what the API needs: the domain operations its handlers call
// (built by the application's wiring, which hands the same ones to the
// dashboard) and what it renders with.
type Config struct {
	// Services are the operations, shared with the dashboard.
	services.Services
	// PageBytes bounds the JSON of the calls in one page of a list
	// (DefaultPageBytes when zero); a fuller page ends early with has_more.
	PageBytes int
	// Idempotency runs a create-call request once per Idempotency-Key.
	Idempotency *idempotency.Keys
	// RecordingFiles serves signed recording links under /recordings/; nil
	// when the store serves its own links (S3).
	RecordingFiles http.Handler
	// Dashboard, if set, is served under /dashboard (its own sessions; no
	// API key).
	Dashboard http.Handler
	// RequestTimeout bounds each request's wait on the apiserver and the
	// history store (DefaultRequestTimeout when zero).
	RequestTimeout time.Duration
	Now            func() time.Time
	Log            logr.Logger
}

// NewRouter builds the API's handler.
func NewRouter(cfg Config) http.Handler {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.AuthFailures == nil {
		cfg.AuthFailures = authlimit.New(authlimit.Defaults, cfg.Now)
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
		r.Use(withDeadline(cfg.RequestTimeout), authenticate(cfg.Keys, cfg.AuthFailures, cfg.Now))
		r.Route("/calls", func(r chi.Router) {
			r.Post("/", a.createCall)
			r.Get("/", a.listCalls)
			r.Get("/{callID}", a.getCall)
			r.Get("/{callID}/recording", a.getRecording)
			r.Get("/{callID}/transcript", a.getTranscript)
			r.Post("/{callID}/stop", a.stopCall)
		})
		r.Get("/concurrency", a.getConcurrency)
		r.Route("/campaigns", a.campaignRoutes)
		r.Route("/webhook-endpoints", a.webhookRoutes)
	})
	// The hosted service's SDK paths, under the same keys (compat.go).
	r.Group(func(r chi.Router) {
		r.Use(withDeadline(cfg.RequestTimeout), authenticate(cfg.Keys, cfg.AuthFailures, cfg.Now))
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
