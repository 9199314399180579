package history

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

// The SQL below is shared by both dialects: modernc.org/sqlite binds $N
// placeholders by position, as PostgreSQL does.

// upsertCall writes a call unless the stored state is newer, so that a slow
// writer holding an old state cannot move a call back in its lifecycle.
const upsertCall = `
INSERT INTO calls (namespace, call_id, created_at, status, disposition, agent_id,
                   to_number, source, ended_at, resource_version, object, updated_at,
                   recording_stored_at, duration_ms, campaign, recording_size_bytes)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
ON CONFLICT (namespace, call_id) DO UPDATE SET
    created_at = excluded.created_at,
    status = excluded.status,
    disposition = excluded.disposition,
    agent_id = excluded.agent_id,
    to_number = excluded.to_number,
    source = excluded.source,
    ended_at = excluded.ended_at,
    resource_version = excluded.resource_version,
    object = excluded.object,
    updated_at = excluded.updated_at,
    recording_stored_at = excluded.recording_stored_at,
    duration_ms = excluded.duration_ms,
    campaign = excluded.campaign,
    recording_size_bytes = excluded.recording_size_bytes
WHERE excluded.resource_version >= calls.resource_version`

const selectCall = `SELECT object FROM calls WHERE namespace = $1 AND call_id = $2`

const selectCallVersion = `SELECT resource_version FROM calls WHERE namespace = $1 AND call_id = $2`

// selectRecordingStoredBefore reads calls whose recording was stored before
// $1, oldest first, through the partial index calls_by_recording_stored.
const selectRecordingStoredBefore = `
SELECT object FROM calls
WHERE recording_stored_at IS NOT NULL AND recording_stored_at < $1
ORDER BY recording_stored_at, namespace, call_id
LIMIT $2`

// defaultLimit is the page size when the caller gives none.
const defaultLimit = 50

// record is a call's row: the columns lists filter and sort on, beside the
// whole resource they were taken from.
type record struct {
	namespace, callID         string
	createdAt                 int64
	status, disposition       string
	agentID, toNumber, source string
	endedAt                   *int64
	resourceVersion           int64
	object                    string
	updatedAt                 int64
	recordingStoredAt         *int64
	recordingSizeBytes        *int64
	durationMS                *int64
	campaign                  string
}

func recordOf(c *switchboardv1.Call, now time.Time) (record, error) {
	key := KeyOf(c)
	if c.Namespace == "" || key.CallID == "" {
		return record{}, errors.New("history: a call needs a namespace and a call id to be saved")
	}
	stored := c.DeepCopy()
	stored.ManagedFields = nil // the API server's bookkeeping, large and never rendered
	object, err := json.Marshal(stored)
	if err != nil {
		return record{}, fmt.Errorf("history: encoding call %s: %w", key.CallID, err)
	}
	source := c.Spec.Source
	if source == "" {
		source = switchboardv1.SourceKubectl // the CRD's default, for Calls built outside the API server
	}
	// An unparsable resourceVersion (a Call not read from the API server)
	// counts as the oldest state.
	rv, _ := strconv.ParseInt(c.ResourceVersion, 10, 64)
	r := record{
		namespace:       c.Namespace,
		callID:          key.CallID,
		createdAt:       key.CreatedAt.UnixNano(),
		status:          string(c.CurrentPhase()),
		disposition:     string(c.Status.Disposition),
		agentID:         strings.ToLower(c.Spec.AgentID),
		toNumber:        c.Spec.ToNumber,
		source:          string(source),
		resourceVersion: rv,
		object:          string(object),
		updatedAt:       now.UnixNano(),
		durationMS:      c.Status.DurationMS,
		campaign:        c.Labels[switchboardv1.CampaignLabel],
	}
	if c.Status.EndedAt != nil {
		ended := c.Status.EndedAt.UnixNano()
		r.endedAt = &ended
	}
	if rec := c.Status.Recording; rec != nil && rec.StoredAt != nil {
		stored, size := rec.StoredAt.UnixNano(), rec.SizeBytes
		r.recordingStoredAt, r.recordingSizeBytes = &stored, &size
	}
	return r, nil
}

// args are r's values in upsertCall's order.
func (r record) args() []any {
	return []any{r.namespace, r.callID, r.createdAt, r.status, r.disposition, r.agentID,
		r.toNumber, r.source, r.endedAt, r.resourceVersion, r.object, r.updatedAt, r.recordingStoredAt, r.durationMS, r.campaign,
		r.recordingSizeBytes}
}

// callLog implements the call half of Store over either database.
type callLog struct {
	db database
}

func (l callLog) SaveCall(ctx context.Context, c *switchboardv1.Call) error {
	r, err := recordOf(c, time.Now())
	if err != nil {
		return err
	}
	if _, err := l.db.exec(ctx, upsertCall, r.args()...); err != nil {
		return fmt.Errorf("history: saving call %s: %w", r.callID, err)
	}
	return nil
}

func (l callLog) GetCall(ctx context.Context, namespace, id string) (*switchboardv1.Call, error) {
	found, err := l.calls(ctx, selectCall, namespace, id)
	if err != nil {
		return nil, fmt.Errorf("history: reading call %s: %w", id, err)
	}
	if len(found) == 0 {
		return nil, ErrNotFound
	}
	return &found[0], nil
}

func (l callLog) CallVersion(ctx context.Context, namespace, id string) (string, error) {
	var (
		version int64
		found   bool
	)
	err := l.db.query(ctx, false, selectCallVersion, []any{namespace, id}, func(row rowScanner) error {
		found = true
		return row.Scan(&version)
	})
	switch {
	case err != nil:
		return "", fmt.Errorf("history: reading the version of call %s: %w", id, err)
	case !found:
		return "", ErrNotFound
	}
	return strconv.FormatInt(version, 10), nil
}

func (l callLog) ListCalls(ctx context.Context, namespace string, q CallQuery) ([]switchboardv1.Call, error) {
	query, args := listQuery(namespace, q)
	calls, err := l.callsUpTo(ctx, q.MaxBytes, query, args...)
	if err != nil {
		return nil, fmt.Errorf("history: listing calls: %w", err)
	}
	return calls, nil
}

func (l callLog) CallsWithRecordingStoredBefore(ctx context.Context, t time.Time, limit int) ([]switchboardv1.Call, error) {
	if limit <= 0 {
		limit = defaultLimit
	}
	calls, err := l.calls(ctx, selectRecordingStoredBefore, t.UnixNano(), int64(limit))
	if err != nil {
		return nil, fmt.Errorf("history: listing calls with old recordings: %w", err)
	}
	return calls, nil
}

// calls runs a query selecting the object column of calls.
func (l callLog) calls(ctx context.Context, query string, args ...any) ([]switchboardv1.Call, error) {
	return l.callsUpTo(ctx, 0, query, args...)
}

// errEnough stops a scan that has read what it needs.
var errEnough = errors.New("history: enough rows read")

// callsUpTo is calls, stopping after the row that takes the objects read
// to maxBytes or more when maxBytes is positive.
func (l callLog) callsUpTo(ctx context.Context, maxBytes int, query string, args ...any) ([]switchboardv1.Call, error) {
	var calls []switchboardv1.Call
	read := 0
	err := l.db.query(ctx, false, query, args, func(row rowScanner) error {
		var object []byte
		if err := row.Scan(&object); err != nil {
			return err
		}
		c, err := decodeCall(object)
		if err != nil {
			return err
		}
		calls = append(calls, *c)
		if read += len(object); maxBytes > 0 && read >= maxBytes {
			return errEnough
		}
		return nil
	})
	if errors.Is(err, errEnough) {
		err = nil
	}
	return calls, err
}

// listQuery is the SQL and arguments of one page of namespace's calls.
// Only fixed column names enter the text; every value is a parameter.
func listQuery(namespace string, q CallQuery) (string, []any) {
	p := newPageQuery(namespace)
	p.equal("status", q.Status)
	p.equal("disposition", q.Disposition)
	p.equal("agent_id", strings.ToLower(q.AgentID))
	p.equal("to_number", q.ToNumber)
	p.equal("source", q.Source)
	p.equal("campaign", q.Campaign)
	if !q.CreatedAfter.IsZero() {
		p.add("created_at > " + p.param(unixNanoClamped(q.CreatedAfter)))
	}
	if !q.CreatedBefore.IsZero() {
		p.add("created_at < " + p.param(unixNanoClamped(q.CreatedBefore)))
	}
	if q.After != nil {
		p.after("call_id", q.After.CreatedAt, q.After.CallID)
	}
	return p.sql("object", "calls", "call_id", q.Limit)
}

// unixNanoClamped is t in created_at's unit, nanoseconds since the epoch,
// clamped to int64 where UnixNano would wrap around (before 1677, after
// 2262): every stored time lies inside, so an exclusive bound outside
// keeps its meaning (created after 2263 matches none, before it all).
func unixNanoClamped(t time.Time) int64 {
	switch {
	case t.Before(time.Unix(0, math.MinInt64)):
		return math.MinInt64
	case t.After(time.Unix(0, math.MaxInt64)):
		return math.MaxInt64
	}
	return t.UnixNano()
}

func decodeCall(object []byte) (*switchboardv1.Call, error) {
	var c switchboardv1.Call
	if err := json.Unmarshal(object, &c); err != nil {
		return nil, fmt.Errorf("history: decoding a stored call: %w", err)
	}
	return &c, nil
}
