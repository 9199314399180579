// Package dashboard is the web console of an organization, served under
// /dashboard on the REST API's port: server-rendered pages (html/template)
// that read without JavaScript, enhanced by a vendored htmx for live
// updates. A support or operations person signs in with the
// organization's API key and sees its calls, webhook endpoints and
// deliveries, and what the platform team declared (agents, SIP trunks,
// number lists).
//
// Its pages decode a request, call one operation shared with the REST API
// (calls.Book, calls.Placer, calls.Stopper, endpoints.Service) and
// render: a call placed here is decoded (callinput) and checked exactly as
// POST /v1/calls decodes and checks one, with source "dashboard".
package dashboard

import (
	"bytes"
	"context"
	"embed"
	"html/template"
	"io/fs"
	"math"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/switchboard-dev/switchboard/internal/authlimit"
	"github.com/switchboard-dev/switchboard/internal/campaigninput"
	"github.com/switchboard-dev/switchboard/internal/campaigns"
	"github.com/switchboard-dev/switchboard/internal/recording"
	"github.com/switchboard-dev/switchboard/internal/services"
	"github.com/switchboard-dev/switchboard/internal/telephony/tts"
)

// Prefix is where the dashboard is served.
const Prefix = "/dashboard"

// DefaultSessionTTL is how long a sign-in lasts.
const DefaultSessionTTL = 12 * time.Hour

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed static
var staticFiles embed.FS

// Config is what the dashboard needs; the operations are the REST API's.
type Config struct {
	// Services are the operations, shared with the REST API.
	services.Services
	// Cache reads agents, SIP trunks and number lists.
	Cache client.Reader
	// InsecureCookies drops the Secure attribute of the session cookie:
	// development over plain http only (--dev).
	InsecureCookies bool
	// Voice speaks the agents page's samples of the agents' voices: the
	// embedded voice. Nil: no samples.
	Voice tts.Speaker
	// Voices, when set, gives each agent's sample the agent's own voice
	// (its voice server's, falling back to Voice); nil: Voice for all.
	Voices AgentVoices
	// SessionTTL is how long a sign-in lasts (default 12 h).
	SessionTTL time.Duration
	Now        func() time.Time
	Log        logr.Logger
}

type dashboard struct {
	cfg      Config
	sessions *sessions
	pages    map[string]*template.Template
	samples  *voiceSamples
}

// Handler is the dashboard: an http.Handler to mount at Prefix, and a
// manager.Runnable that drops expired sessions in every replica (each
// holds its own), leader or not.
type Handler struct {
	http.Handler
	sessions *sessions
}

// Start drops expired sessions every minute until ctx ends.
func (h *Handler) Start(ctx context.Context) error {
	h.sessions.sweepEvery(ctx, sessionSweepInterval)
	return nil
}

// NeedLeaderElection is false: every replica holds its own sessions.
func (h *Handler) NeedLeaderElection() bool { return false }

// New returns the dashboard, to be mounted at Prefix and run (Start).
func New(cfg Config) (*Handler, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = DefaultSessionTTL
	}
	if cfg.AuthFailures == nil {
		cfg.AuthFailures = authlimit.New(authlimit.Defaults, cfg.Now)
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	d := &dashboard{cfg: cfg, sessions: newSessions(cfg.SessionTTL, cfg.Now), pages: pages,
		samples: newVoiceSamples()}
	return &Handler{Handler: d.routes(), sessions: d.sessions}, nil
}

func (d *dashboard) routes() http.Handler {
	r := chi.NewRouter()
	r.Use(securityHeaders(d.cfg.Recordings), limitBody)
	static, _ := fs.Sub(staticFiles, "static")
	r.Handle("/static/*", http.StripPrefix(Prefix+"/static/", cacheStatic(http.FileServerFS(static))))
	r.Get("/sign-in", d.signInPage)
	r.Post("/sign-in", d.signIn)
	r.Group(func(r chi.Router) {
		r.Use(d.requireSession)
		r.Post("/sign-out", d.signOut)
		r.With(d.boundReads).Get("/", d.overview)
		r.With(d.boundReads).Get("/calls", d.listCalls)
		r.Get("/calls/new", d.newCallForm)
		r.Post("/calls", d.placeCall)
		r.Get("/calls/{callID}", d.showCall)
		r.Post("/calls/{callID}/stop", d.stopCall)
		r.Get("/endpoints", d.listEndpoints)
		r.Get("/endpoints/new", d.newEndpointForm)
		r.Post("/endpoints", d.createEndpoint)
		r.Route("/endpoints/{endpointID}", func(r chi.Router) {
			r.Use(d.endpointCtx)
			r.Get("/", d.showEndpoint)
			r.Post("/", d.updateEndpoint)
			r.Post("/enabled", d.setEndpointEnabled)
			r.Get("/delete", d.confirmDelete)
			r.Post("/delete", d.deleteEndpoint)
			r.Get("/rotate-secret", d.confirmRotate)
			r.Post("/rotate-secret", d.rotateSecret)
			r.Get("/secret", d.showSecret)
			r.Post("/test", d.testEndpoint)
			r.Post("/deliveries/{deliveryID}/retry", d.retryDelivery)
		})
		r.Get("/campaigns", d.listCampaigns)
		r.Post("/campaigns", d.createCampaign)
		r.Get("/campaigns/{campaignID}", d.showCampaign)
		r.Post("/campaigns/{campaignID}/pause", d.campaignAction(campaigns.Pause))
		r.Post("/campaigns/{campaignID}/resume", d.campaignAction(campaigns.Resume))
		r.Post("/campaigns/{campaignID}/cancel", d.campaignAction(campaigns.Cancel))
		r.Get("/agents", d.listAgents)
		r.Get("/agents/{agent}/voice.wav", d.agentVoice)
		r.Get("/sip-trunks", d.listTrunks)
		r.Get("/number-lists", d.listNumberLists)
	})
	return r
}

// boundReads holds the overview and the calls list to the organization's
// reads in progress at once, as the REST API's lists are: beyond it, 429
// with Retry-After.
func (d *dashboard) boundReads(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		release, refused := d.cfg.Reads.Begin(organization(r.Context()))
		if refused != nil {
			w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(refused.RetryAfter.Seconds()))))
			d.problem(w, r, http.StatusTooManyRequests, "This organization has as many pages of calls loading as it may; "+
				"reload in a moment.")
			return
		}
		defer release()
		next.ServeHTTP(w, r)
	})
}

// securityHeaders keeps the pages out of frames, scripts and styles to our
// own, and audio to where recordings are stored (a nil store: none).
func securityHeaders(recordings recording.Store) func(http.Handler) http.Handler {
	media := "'self'"
	if recordings != nil && recordings.Origin() != "" {
		media += " " + recordings.Origin()
	}
	csp := "default-src 'self'; media-src " + media + "; img-src 'self' data:; style-src 'self'; " +
		"base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h := w.Header()
			h.Set("Content-Security-Policy", csp)
			h.Set("X-Frame-Options", "DENY")
			h.Set("X-Content-Type-Options", "nosniff")
			h.Set("Referrer-Policy", "same-origin")
			h.Set("Cache-Control", "no-store")
			next.ServeHTTP(w, r)
		})
	}
}

// limitBody bounds what a form may send, as the REST API bounds bodies:
// the campaign form's CSV file as POST /v1/campaigns does.
func limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limit := int64(64 << 10)
		if r.Method == http.MethodPost && r.URL.Path == Prefix+"/campaigns" {
			limit = campaigninput.MaxUploadBytes
		}
		r.Body = http.MaxBytesReader(w, r.Body, limit)
		next.ServeHTTP(w, r)
	})
}

func cacheStatic(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		next.ServeHTTP(w, r)
	})
}

// page is what every page's template receives.
type page struct {
	Title   string
	Nav     string // the menu entry to highlight
	Session *session
	// Flash is a one-line notice above the content.
	Flash string
	Error string
	Data  any
}

// render writes the named page with status.
func (d *dashboard) render(w http.ResponseWriter, r *http.Request, status int, name string, p page) {
	t, ok := d.pages[name]
	if !ok {
		d.cfg.Log.Error(nil, "no dashboard page", "page", name)
		http.Error(w, "Internal Server Error", http.StatusInternalServerError)
		return
	}
	if p.Session == nil {
		p.Session = sessionFrom(r.Context())
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout", p); err != nil {
		d.cfg.Log.Error(err, "rendering dashboard page", "page", name)
		http.Error(w, "Internal Server Error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// problem renders a page that only says what went wrong.
func (d *dashboard) problem(w http.ResponseWriter, r *http.Request, status int, msg string) {
	d.render(w, r, status, "problem.html", page{Title: http.StatusText(status), Error: msg})
}

// unavailable is the 503 page of an operation that failed for want of the
// cluster or the history store.
func (d *dashboard) unavailable(w http.ResponseWriter, r *http.Request, err error, what string) {
	d.cfg.Log.Error(err, what)
	d.problem(w, r, http.StatusServiceUnavailable, what+"; reload the page to try again.")
}

// seeOther redirects a form post to the page that shows its result: a
// path under Prefix (one a form sends goes through dashboardPath first).
func seeOther(w http.ResponseWriter, r *http.Request, target string) {
	http.Redirect(w, r, target, http.StatusSeeOther) //nolint:gosec // always a path of the dashboard, see above
}

// dashboardPath reads a page of the dashboard a form asks to go back to:
// an absolute path under Prefix that is already clean, with no query.
// Anything else is refused rather than repaired, because browsers read
// what a server's path cleaning leaves differently: "/\host/" (the
// cleaning of "/dashboard/../\host/") is another host to them. The path
// is decoded first, so %2e%2e, %2f and %5c count as what they encode.
func dashboardPath(raw string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "" || u.User != nil || u.Host != "" || u.Opaque != "" ||
		u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return "", false
	}
	p := u.Path
	clean := path.Clean(p)
	if strings.HasSuffix(p, "/") {
		clean += "/" // a trailing slash is part of the page's name
	}
	if p != clean || !strings.HasPrefix(p, Prefix+"/") || strings.Contains(p, `\`) {
		return "", false
	}
	return u.EscapedPath(), true
}
