package workers

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Options configure this replica as a call worker.
type Options struct {
	// ID names the worker on its Calls and its Lease: the pod's name
	// (env POD_NAME, from the downward API), unique among the replicas
	// and stable for the pod's life.
	ID string
	// Capacity is how many live calls the worker carries at most; the
	// others are assigned elsewhere or wait queued.
	Capacity int
	// Lease is how long the worker's Lease lasts unrenewed: how long the
	// calls of a worker that died wait before they end worker_lost.
	Lease time.Duration
	// DrainTimeout bounds how long a stopping worker waits for its calls
	// to finish (0: it hangs them up at once). Keep it below the pod's
	// terminationGracePeriodSeconds.
	DrainTimeout time.Duration
}

// DefaultLease: three renewals per lease, so a worker is declared lost
// about 15 s after it died, never for one slow renewal.
const DefaultLease = 15 * time.Second

// DefaultDrainTimeout is the default agents' longest call
// (spec.maxDurationSeconds 3600).
const DefaultDrainTimeout = time.Hour

// DefaultOptions are the binary's worker settings.
func DefaultOptions() Options {
	return Options{ID: defaultID(), Capacity: DefaultCapacity(), Lease: DefaultLease, DrainTimeout: DefaultDrainTimeout}
}

// defaultID is the host's name (one process per host; a pod's is its
// name). The binary prefers env POD_NAME, which it reads with the rest of
// its environment (cmd/switchboard, resolve).
func defaultID() string {
	host, _ := os.Hostname()
	return host
}

// BindFlags binds the worker settings to fs, each defaulting to its value in o.
func (o *Options) BindFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.ID, "worker-id", o.ID, "This replica's name as a call worker, unique among the replicas (default: env POD_NAME, else the host name).")
	fs.IntVar(&o.Capacity, "max-active-calls-per-replica", o.Capacity,
		"Live calls this replica carries at most; calls beyond every replica's room wait queued (more than 0; default 50 per CPU).")
	fs.DurationVar(&o.Lease, "worker-lease-duration", o.Lease,
		"How long a replica's worker Lease lasts unrenewed: how long the calls of a replica that died wait before they end worker_lost (at least 3s).")
	fs.DurationVar(&o.DrainTimeout, "drain-timeout", o.DrainTimeout,
		"On SIGTERM, how long the replica waits for its live calls to finish, taking no new ones, before it hangs up the rest "+
			"(0: at once; keep it below terminationGracePeriodSeconds).")
}

// Validate refuses settings that would assign nothing or lose live workers.
func (o Options) Validate() error {
	var errs []error
	if msgs := validation.IsValidLabelValue(o.ID); o.ID == "" || len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("--worker-id %q must be a valid label value (set it, or env POD_NAME): %v", o.ID, msgs))
	}
	if o.Capacity <= 0 {
		errs = append(errs, errors.New("--max-active-calls-per-replica must be more than 0"))
	}
	if o.Lease < 3*time.Second {
		errs = append(errs, fmt.Errorf("--worker-lease-duration must be at least 3s (renewals are a third of it), got %s", o.Lease))
	}
	if o.DrainTimeout < 0 {
		errs = append(errs, fmt.Errorf("--drain-timeout must not be negative (0: no drain), got %s", o.DrainTimeout))
	}
	return errors.Join(errs...)
}
