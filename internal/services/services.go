// Package services is the one value of operations the REST API
// (internal/httpapi) and the dashboard (internal/dashboard) both serve, so
// that a call placed, stopped or listed from either runs the same
// operation on the same state (the quota's counters, the key index, the
// throttle of failed sign-ins).
package services

import (
	"github.com/switchboard-dev/switchboard/internal/apikeys"
	"github.com/switchboard-dev/switchboard/internal/authlimit"
	"github.com/switchboard-dev/switchboard/internal/calls"
	"github.com/switchboard-dev/switchboard/internal/campaigns"
	"github.com/switchboard-dev/switchboard/internal/quota"
	"github.com/switchboard-dev/switchboard/internal/recording"
	"github.com/switchboard-dev/switchboard/internal/webhook/endpoints"
	"github.com/switchboard-dev/switchboard/internal/workers"
)

// Services are the operations and shared state behind the REST API and
// the dashboard.
type Services struct {
	// Keys resolves API keys to organizations.
	Keys *apikeys.Index
	// AuthFailures throttles failed authentications, the API's and the
	// dashboard's sign-in alike. Nil: each has one of its own.
	AuthFailures *authlimit.Limiter
	// Calls reads calls, live or archived.
	Calls *calls.Book
	// Placer places calls; Stopper stops them.
	Placer  *calls.Placer
	Stopper *calls.Stopper
	// Quota admits calls and reports an organization's usage.
	Quota *quota.Admission
	// Reads bounds an organization's lists in progress at once; nil
	// bounds nothing.
	Reads *quota.Reads
	// Campaigns is the campaign operations.
	Campaigns *campaigns.Service
	// Endpoints is the webhook-endpoint and delivery-log operations.
	Endpoints *endpoints.Service
	// Recordings signs a fresh recording link each time a call is shown.
	Recordings recording.Store
	// Workers lists the replicas that carry calls; nil lists none.
	Workers *workers.Pool
	// DefaultRegion reads numbers sent without "+" (ISO 3166 code, e.g. US).
	DefaultRegion string
}
