package history

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// database is what the call and delivery logs need of a database. Each
// store provides it, so that their SQL and logic (callLog, deliveryLog)
// exist once for both dialects.
type database interface {
	// exec runs a write and returns how many rows it changed.
	exec(ctx context.Context, query string, args ...any) (int64, error)
	// execAll runs query once for each argument list, in one transaction.
	execAll(ctx context.Context, query string, argLists [][]any) error
	// execEach runs each statement, in one transaction.
	execEach(ctx context.Context, stmts []statement) error
	// query runs query and hands each row to scan. write says that it
	// changes rows (UPDATE ... RETURNING), which SQLite runs on its writer.
	query(ctx context.Context, write bool, query string, args []any, scan func(rowScanner) error) error
}

// rowScanner is the row of *sql.Rows and pgx.Rows alike.
type rowScanner interface {
	Scan(dest ...any) error
}

// deliveryLog implements DeliveryLog over either database.
type deliveryLog struct {
	db database
	// indexes names the deliveries table as the claims read it, in the
	// store's dialect (see claim.go).
	indexes *strings.Replacer
}

// deliveryColumns are what every query returning deliveries selects, in
// the order scanDelivery reads them.
const deliveryColumns = `object, created_at, retry_requested_at, due_at, completed_at`

const insertDelivery = `
INSERT INTO deliveries (namespace, delivery_id, endpoint, endpoint_id, call_name, event, phase,
                        created_at, completed_at, due_at, object, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`

// enqueueDelivery leaves a stored delivery as it is, so that an emit redone
// after a crash neither duplicates nor resets it.
const enqueueDelivery = insertDelivery + `
ON CONFLICT (namespace, delivery_id) DO NOTHING`

// upsertDelivery ($13: the record's Status.RetryHandled) keeps created_at
// and retry_requested_at, which belong to the first enqueue and to
// RequestDeliveryRetry. A retry requested while the worker held the
// delivery, which the worker's record has not handled, keeps it due at
// once (updated_at is now) whatever the worker says.
const upsertDelivery = insertDelivery + `
ON CONFLICT (namespace, delivery_id) DO UPDATE SET
    endpoint = excluded.endpoint,
    endpoint_id = excluded.endpoint_id,
    call_name = excluded.call_name,
    event = excluded.event,
    phase = excluded.phase,
    completed_at = excluded.completed_at,
    due_at = CASE
        WHEN deliveries.retry_requested_at IS NOT NULL AND deliveries.retry_requested_at <> $13
        THEN excluded.updated_at
        ELSE excluded.due_at
    END,
    lease_until = NULL,
    object = excluded.object,
    updated_at = excluded.updated_at`

// nextDue ($1 after) is the earliest due_at of an unleased delivery or,
// for a leased due one, the moment its lease lapses (when it can be
// claimed again), after $1.
const nextDue = `
SELECT MIN(ready_at) FROM (
    SELECT CASE WHEN lease_until IS NOT NULL AND lease_until > due_at THEN lease_until ELSE due_at END AS ready_at
    FROM deliveries WHERE due_at IS NOT NULL
) AS pending WHERE ready_at > $1`

const selectDelivery = `SELECT ` + deliveryColumns + ` FROM deliveries WHERE namespace = $1 AND delivery_id = $2`

// requestRetry ($3 the request's time as text, $4 now).
const requestRetry = `
UPDATE deliveries SET retry_requested_at = $3, due_at = $4, updated_at = $4
WHERE namespace = $1 AND delivery_id = $2
RETURNING ` + deliveryColumns

// deleteCompleted keeps a finished delivery that is due again: a retry was
// requested for it.
const deleteCompleted = `DELETE FROM deliveries WHERE completed_at < $1 AND due_at IS NULL`

// deliveryRecord is a delivery's row, in insertDelivery's order.
type deliveryRecord struct {
	namespace, deliveryID  string
	endpoint, endpointID   string
	callName, event, phase string
	createdAt              int64
	completedAt, dueAt     *int64
	object                 string
	updatedAt              int64
}

// deliveryRecordOf is d's row, due at due (nil: not due). A record without
// a creation time is created now.
func deliveryRecordOf(d *Delivery, due *int64, now time.Time) (deliveryRecord, error) {
	if d.Namespace == "" || d.Spec.DeliveryID == "" {
		return deliveryRecord{}, errors.New("history: a delivery needs a namespace and a delivery id to be saved")
	}
	stored := d.DeepCopy()
	stored.ManagedFields = nil // the API server's bookkeeping, never rendered
	object, err := json.Marshal(stored)
	if err != nil {
		return deliveryRecord{}, fmt.Errorf("history: encoding delivery %s: %w", d.Spec.DeliveryID, err)
	}
	created := d.CreationTimestamp.Time
	if created.IsZero() {
		created = now
	}
	callName := d.Labels[DeliveryCallLabel]
	if callName == "" && d.Spec.CallRef != nil {
		callName = d.Spec.CallRef.Name
	}
	r := deliveryRecord{
		namespace:  d.Namespace,
		deliveryID: d.Spec.DeliveryID,
		endpoint:   d.Spec.EndpointRef.Name,
		endpointID: d.Spec.EndpointID,
		callName:   callName,
		event:      d.Spec.Event,
		phase:      string(d.CurrentPhase()),
		createdAt:  created.UnixNano(),
		dueAt:      due,
		object:     string(object),
		updatedAt:  now.UnixNano(),
	}
	if d.Status.CompletedAt != nil {
		completed := d.Status.CompletedAt.UnixNano()
		r.completedAt = &completed
	}
	return r, nil
}

func (r deliveryRecord) args() []any {
	return []any{r.namespace, r.deliveryID, r.endpoint, r.endpointID, r.callName, r.event, r.phase,
		r.createdAt, r.completedAt, r.dueAt, r.object, r.updatedAt}
}

// storedDelivery is a delivery read back, with when it is due.
type storedDelivery struct {
	d   *Delivery
	due *int64
}

// scanDelivery reads deliveryColumns. The record's creation and completion
// times come from created_at and completed_at: its JSON keeps only seconds
// of them (metav1.Time), and DeliveryKeyOf must give back the exact place
// the record was stored at, and a delivery must not read as completed
// before its attempts (the columns always held nanoseconds, so rows
// written earlier read exactly too). The retry annotation comes from
// retry_requested_at, which only RequestDeliveryRetry writes.
func scanDelivery(row rowScanner) (storedDelivery, error) {
	var (
		object      []byte
		createdAt   int64
		retry       *string
		completedAt *int64
		s           storedDelivery
	)
	if err := row.Scan(&object, &createdAt, &retry, &s.due, &completedAt); err != nil {
		return s, err
	}
	s.d = &Delivery{}
	if err := json.Unmarshal(object, s.d); err != nil {
		return s, fmt.Errorf("history: decoding a stored delivery: %w", err)
	}
	s.d.CreationTimestamp = metav1.NewTime(time.Unix(0, createdAt))
	if completedAt != nil && s.d.Status.CompletedAt != nil {
		s.d.Status.CompletedAt = &metav1.Time{Time: time.Unix(0, *completedAt)}
	}
	if retry != nil {
		if s.d.Annotations == nil {
			s.d.Annotations = map[string]string{}
		}
		s.d.Annotations[DeliveryRetryAnnotation] = *retry
	}
	return s, nil
}

// deliveries runs a query returning deliveryColumns.
func (l deliveryLog) deliveries(ctx context.Context, write bool, query string, args ...any) ([]storedDelivery, error) {
	var all []storedDelivery
	err := l.db.query(ctx, write, query, args, func(row rowScanner) error {
		s, err := scanDelivery(row)
		all = append(all, s)
		return err
	})
	return all, err
}

func (l deliveryLog) EnqueueDeliveries(ctx context.Context, ds []*Delivery) error {
	argLists, err := enqueueArgs(ds, time.Now())
	if err != nil {
		return err
	}
	if err := l.db.execAll(ctx, enqueueDelivery, argLists); err != nil {
		return fmt.Errorf("history: enqueueing deliveries: %w", err)
	}
	return nil
}

// enqueueArgs are enqueueDelivery's arguments for each of ds.
func enqueueArgs(ds []*Delivery, now time.Time) ([][]any, error) {
	argLists := make([][]any, 0, len(ds))
	for _, d := range ds {
		r, err := deliveryRecordOf(d, nil, now)
		if err != nil {
			return nil, err
		}
		r.dueAt = &r.createdAt // at once: a new delivery is created now, and this keeps them in order
		argLists = append(argLists, r.args())
	}
	return argLists, nil
}

func (l deliveryLog) SaveDelivery(ctx context.Context, d *Delivery, due time.Time) error {
	var dueAt *int64
	if !due.IsZero() {
		ns := due.UnixNano()
		dueAt = &ns
	}
	r, err := deliveryRecordOf(d, dueAt, time.Now())
	if err != nil {
		return err
	}
	if _, err := l.db.exec(ctx, upsertDelivery, append(r.args(), d.Status.RetryHandled)...); err != nil {
		return fmt.Errorf("history: saving delivery %s: %w", r.deliveryID, err)
	}
	return nil
}

func (l deliveryLog) NextDeliveryDue(ctx context.Context, after time.Time) (time.Time, bool, error) {
	var next *int64
	since := int64(math.MinInt64)
	if !after.IsZero() {
		since = after.UnixNano()
	}
	err := l.db.query(ctx, false, nextDue, []any{since}, func(row rowScanner) error { return row.Scan(&next) })
	if err != nil || next == nil {
		return time.Time{}, false, err
	}
	return time.Unix(0, *next), true, nil
}

func (l deliveryLog) GetDelivery(ctx context.Context, namespace, id string) (*Delivery, error) {
	return l.one(ctx, false, id, selectDelivery, namespace, id)
}

func (l deliveryLog) RequestDeliveryRetry(ctx context.Context, namespace, id string, at time.Time) (*Delivery, error) {
	return l.one(ctx, true, id, requestRetry, namespace, id, at.UTC().Format(time.RFC3339Nano), time.Now().UnixNano())
}

// one runs a query for the delivery whose id is id.
func (l deliveryLog) one(ctx context.Context, write bool, id, query string, args ...any) (*Delivery, error) {
	found, err := l.deliveries(ctx, write, query, args...)
	if err != nil {
		return nil, fmt.Errorf("history: delivery %s: %w", id, err)
	}
	if len(found) == 0 {
		return nil, ErrNotFound
	}
	return found[0].d, nil
}

func (l deliveryLog) ListDeliveries(ctx context.Context, namespace string, q DeliveryQuery) ([]Delivery, error) {
	query, args := deliveryListQuery(namespace, q)
	found, err := l.deliveries(ctx, false, query, args...)
	if err != nil {
		return nil, fmt.Errorf("history: listing deliveries: %w", err)
	}
	ds := make([]Delivery, len(found))
	for i, f := range found {
		ds[i] = *f.d
	}
	return ds, nil
}

func (l deliveryLog) DeleteDeliveriesCompletedBefore(ctx context.Context, t time.Time) (int64, error) {
	n, err := l.db.exec(ctx, deleteCompleted, t.UnixNano())
	if err != nil {
		return 0, fmt.Errorf("history: deleting completed deliveries: %w", err)
	}
	return n, nil
}

// deliveryListQuery is the SQL and arguments of one page of namespace's
// deliveries. Only fixed column names enter the text; every value is a
// parameter.
func deliveryListQuery(namespace string, q DeliveryQuery) (string, []any) {
	p := newPageQuery(namespace)
	p.equal("endpoint", q.Endpoint)
	p.equal("call_name", q.CallName)
	p.equal("event", q.Event)
	p.equal("phase", q.Phase)
	if q.EndpointID != "" {
		// A delivery recorded without an endpoint id cannot be told apart,
		// so it stays in the log of every endpoint of that name.
		p.add("endpoint_id IN (" + p.param(q.EndpointID) + ", '')")
	}
	if q.After != nil {
		p.after("delivery_id", q.After.CreatedAt, q.After.DeliveryID)
	}
	return p.sql(deliveryColumns, "deliveries", "delivery_id", q.Limit)
}

// countDue counts through the deliveries_due index (due_at IS NOT NULL).
const countDue = `SELECT count(*) FROM deliveries WHERE due_at IS NOT NULL`

func (l deliveryLog) CountDueDeliveries(ctx context.Context) (int64, error) {
	var n int64
	err := l.db.query(ctx, false, countDue, nil, func(row rowScanner) error { return row.Scan(&n) })
	if err != nil {
		return 0, fmt.Errorf("history: counting due deliveries: %w", err)
	}
	return n, nil
}
