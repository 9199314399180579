// Package history is the store of calls outside the cluster: every call as
// it changes, kept after its Call resource has left the cluster, listed and
// read by the REST API. The cluster holds configuration and live state;
// history lives here, in a database built for it (SQLite embedded by
// default, PostgreSQL in production), behind the one interface Store.
//
// A call is kept as its whole resource (spec, status, the annotations that
// carry its acceptance time and refusal) in a JSON column, beside the
// columns its lists filter and sort on, so that an archived call renders
// exactly as a live one: the REST API's call object comes from the same
// resource in both cases.
package history

import (
	"context"
	"errors"
	"time"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/callid"
)

// ErrNotFound: no such call in the organization.
var ErrNotFound = errors.New("history: not found")

// Store keeps calls by organization (namespace) and call id.
type Store interface {
	// SaveCall inserts the call's record or replaces it with this newer
	// state. Saving the same state again is a no-op; a state older than the
	// one stored (a lower resourceVersion of the same resource, compared as
	// numbers) never replaces it, so concurrent writers cannot move a call
	// back in its lifecycle.
	SaveCall(ctx context.Context, c *switchboardv1.Call) error
	// GetCall returns the stored call of namespace whose call_id is id, or
	// ErrNotFound.
	GetCall(ctx context.Context, namespace, id string) (*switchboardv1.Call, error)
	// CallVersion returns the resourceVersion of the stored call of
	// namespace whose call_id is id, or ErrNotFound: one column, for a
	// reconciler asking whether a Call is archived as it now is.
	CallVersion(ctx context.Context, namespace, id string) (string, error)
	// ListCalls returns up to q.Limit calls of namespace matching q, newest
	// first by (CreatedAt, call id), strictly after q.After when set; with
	// q.MaxBytes, fewer once their stored objects reach that many bytes.
	ListCalls(ctx context.Context, namespace string, q CallQuery) ([]switchboardv1.Call, error)
	// CallsWithRecordingStoredBefore returns up to limit calls, of every
	// namespace, that still have a recording (Status.Recording) stored
	// before t, oldest recording first. Saving a call without a recording
	// takes it out of this list.
	CallsWithRecordingStoredBefore(ctx context.Context, t time.Time, limit int) ([]switchboardv1.Call, error)
	// RecordingBytes is the size of the recordings of namespace's archived
	// calls that are still stored (not deleted by retention).
	RecordingBytes(ctx context.Context, namespace string) (int64, error)
	// CountCalls counts the calls of namespace created in [from, to) by
	// hour since from, status and disposition, in the database: a day of
	// a busy organization is not read into memory to be counted.
	CountCalls(ctx context.Context, namespace string, from, to time.Time) ([]CallCount, error)
	// EachCallIDSince calls f with the call id of each call of namespace
	// created at or after from, reading no more of it.
	EachCallIDSince(ctx context.Context, namespace string, from time.Time, f func(id string)) error
	// DeliveryLog is the webhook delivery queue and log.
	DeliveryLog
	// IdempotencyKeys remembers create-call requests by key.
	IdempotencyKeys
	// Dials remembers the first attempt to dial each call.
	Dials
	// Transcripts keeps each connected call's transcript.
	Transcripts
	// Contacts keeps the contacts of campaigns.
	Contacts
	// Writer stores several of the writes above in one transaction.
	Writer
	// Ping checks that the database answers.
	Ping(ctx context.Context) error
	// Close releases the database.
	Close() error
}

// CallQuery filters a list of calls. Zero values do not filter.
type CallQuery struct {
	Status      string // queued, in_progress, ended, failed
	Disposition string
	AgentID     string // compared in lower case
	ToNumber    string // E.164, exact
	Source      string // api, kubectl, dashboard, campaign
	Campaign    string // the campaign that placed it
	// CreatedAfter and CreatedBefore bound CreatedAt (exclusive).
	CreatedAfter, CreatedBefore time.Time
	// After is the key of the last call of the previous page.
	After *Key
	Limit int
	// MaxBytes, when positive, ends the list after the call whose stored
	// object takes the bytes read to MaxBytes or more (the first call is
	// always read): a reader of large calls holds a bounded chunk of them.
	MaxBytes int
}

// CallCount is how many calls of one hour share a status and disposition,
// and their summed talk time.
type CallCount struct {
	// Hour is the hour the calls were created in, counted from the start
	// of the range.
	Hour                int
	Status, Disposition string
	Calls               int
	DurationMS          int64
}

// Key is a call's place in the newest-first order.
type Key struct {
	CreatedAt time.Time
	CallID    string
}

// KeyOf is c's place in the order: its acceptance time (the REST API's
// accepted-at annotation, else the resource's creation time) and call id.
func KeyOf(c *switchboardv1.Call) Key {
	return Key{CreatedAt: c.QueueOrder().UTC(), CallID: callid.Of(c)}
}

// Before reports whether k comes after o in the newest-first order: created
// earlier, or at the same instant with a smaller call id.
func (k Key) Before(o Key) bool {
	if !k.CreatedAt.Equal(o.CreatedAt) {
		return k.CreatedAt.Before(o.CreatedAt)
	}
	return k.CallID < o.CallID
}
