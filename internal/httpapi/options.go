package httpapi

import (
	"errors"
	"flag"
	"time"

	"github.com/switchboard-dev/switchboard/internal/calls/placementgate"
)

// Options configure the REST API server (the dashboard is served beside
// it). The process resolves what they leave empty: the address and the
// public URL depend on --dev and the environment.
type Options struct {
	// Addr is where the REST API listens (empty: the process's default,
	// env SWITCHBOARD_ADDR, else :8080, or 127.0.0.1:8080 with --dev).
	Addr string
	// PublicURL is the base URL customers reach the API at; recording
	// links use it (empty: http://<Addr>).
	PublicURL string
	// DefaultRegion reads phone numbers sent without "+".
	DefaultRegion string
	// RequestTimeout bounds a request's wait on the apiserver and the
	// history store.
	RequestTimeout time.Duration
	// PlacementsInFlight bounds the call creations in progress at once
	// (negative: no bound).
	PlacementsInFlight int
}

// DefaultOptions are the binary's REST API settings.
var DefaultOptions = Options{DefaultRegion: "US", RequestTimeout: DefaultRequestTimeout, PlacementsInFlight: placementgate.DefaultInFlight}

// BindFlags binds the REST API settings to fs, each defaulting to its
// value in o (DefaultOptions for the binary).
func (o *Options) BindFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.Addr, "api-addr", o.Addr, "REST API address (default :8080; 127.0.0.1:8080 with --dev). Env SWITCHBOARD_ADDR.")
	fs.StringVar(&o.PublicURL, "public-url", o.PublicURL, "Base URL customers reach the REST API at; recording links use it (default http://<api-addr>).")
	fs.StringVar(&o.DefaultRegion, "default-region", o.DefaultRegion, "Region for phone numbers sent without +.")
	fs.DurationVar(&o.RequestTimeout, "api-request-timeout", o.RequestTimeout, "How long a REST request may wait on the Kubernetes apiserver and the history store before it is answered 503 with Retry-After (an overloaded apiserver queues and throttles requests; this sheds the load instead of piling it up).")
	fs.IntVar(&o.PlacementsInFlight, "max-placements-in-flight", o.PlacementsInFlight, "Call creations (POST /v1/calls, the SDK's create-phone-call, the dashboard's form) a replica has in progress at once, fewer while creates take over 100 ms on average, shared fairly between organizations; one more waits for a slot while it can still be placed within 100 ms, else is answered 503 server_busy with Retry-After: 1 and nothing created (negative: no bound).")
}

// Validate refuses the zeros that would mean nothing, rather than read
// them as a default (a zero timeout used to become 10 s).
func (o Options) Validate() error {
	var errs []error
	if o.RequestTimeout <= 0 {
		errs = append(errs, errors.New("--api-request-timeout must be more than 0"))
	}
	if o.PlacementsInFlight == 0 {
		errs = append(errs, errors.New("--max-placements-in-flight must not be 0 (negative: no bound)"))
	}
	return errors.Join(errs...)
}
