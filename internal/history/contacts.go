package history

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Contacts keeps the contacts of campaigns (package campaigns decides what
// happens to them; this is where they are, durably). A contact moves from
// pending to dialing when an attempt is claimed, in one conditional write,
// so that one attempt is dialed once whoever claims it; back to pending for
// a redial, or to a final state, in another, conditional on the attempt's
// call id, so that an outcome is recorded once.
type Contacts interface {
	// AddContacts inserts cs (pending, due at their DueAt) into a campaign,
	// leaving out those whose seq or number it holds already; it returns how
	// many were added. Adding the same contacts again adds none.
	AddContacts(ctx context.Context, namespace, campaign string, cs []Contact, now time.Time) (int, error)
	// MaxContactSeq is the highest seq of a campaign's contacts, -1 for none.
	MaxContactSeq(ctx context.Context, namespace, campaign string) (int64, error)
	// DueContacts returns up to limit pending contacts of a campaign due at
	// or before now, earliest due first (then by seq).
	DueContacts(ctx context.Context, namespace, campaign string, now time.Time, limit int) ([]Contact, error)
	// DialingContacts returns the contacts whose attempt is claimed.
	DialingContacts(ctx context.Context, namespace, campaign string) ([]Contact, error)
	// DeferContacts moves pending contacts' due times (a calling window
	// not open yet), in one transaction.
	DeferContacts(ctx context.Context, namespace, campaign string, ds []Deferral, now time.Time) error
	// SkipContact makes a pending contact skipped, with outcome saying why.
	SkipContact(ctx context.Context, namespace, campaign string, seq int64, outcome string, now time.Time) (bool, error)
	// ClaimContact claims the next attempt of a pending contact whose
	// attempts are c.Attempts: it becomes dialing with call id callID,
	// counted on day. false: someone else claimed it first.
	ClaimContact(ctx context.Context, namespace, campaign string, c Contact, callID, day string, now time.Time) (bool, error)
	// FinishAttempt records the outcome of the dialing contact's attempt
	// callID: next is its new state (pending with a due time for a redial,
	// or final). false: that attempt's outcome was recorded already.
	FinishAttempt(ctx context.Context, namespace, campaign string, seq int64, callID string, next ContactUpdate, now time.Time) (bool, error)
	// ReleaseAttempt undoes the claim of attempt callID that placed nothing
	// (the organization was at its limits): pending again, due at dueAt, the
	// attempt not counted.
	ReleaseAttempt(ctx context.Context, namespace, campaign string, seq int64, callID string, dueAt, now time.Time) (bool, error)
	// CancelContacts makes a campaign's pending contacts canceled.
	CancelContacts(ctx context.Context, namespace, campaign string, now time.Time) (int64, error)
	// CountContacts counts a campaign's contacts by state and outcome, and
	// the pending ones not due before now.
	CountContacts(ctx context.Context, namespace, campaign string, now time.Time) (ContactCounts, error)
	// DeleteContacts removes a campaign's contacts.
	DeleteContacts(ctx context.Context, namespace, campaign string) (int64, error)
}

// ContactState is where a contact is in its campaign.
type ContactState string

// A contact is pending until an attempt is claimed (dialing), and final
// once done (its outcome says how), skipped (never dialed: see outcome) or
// canceled with its campaign.
const (
	ContactPending  ContactState = "pending"
	ContactDialing  ContactState = "dialing"
	ContactDone     ContactState = "done"
	ContactSkipped  ContactState = "skipped"
	ContactCanceled ContactState = "canceled"
)

// Contact is one number of a campaign.
type Contact struct {
	Seq      int64
	ToNumber string
	// Zones are the IANA time zones its calling window is evaluated in.
	Zones     []string
	Variables json.RawMessage // a JSON object; nil is {}
	Metadata  json.RawMessage // a JSON object; nil is {}
	State     ContactState
	DueAt     time.Time
	// Attempts counts the attempts claimed; AttemptsToday those of Day (the
	// contact's local date, YYYY-MM-DD).
	Attempts, AttemptsToday int
	Day                     string
	// CallID is the last attempt's call; Outcome the last attempt's
	// disposition or failure code, or why a contact was skipped.
	CallID, Outcome string
}

// Deferral is a pending contact's new due time.
type Deferral struct {
	Seq   int64
	DueAt time.Time
}

// ContactUpdate is a contact's state after an attempt.
type ContactUpdate struct {
	State   ContactState
	DueAt   time.Time // for pending
	Outcome string
}

// ContactCounts are a campaign's contacts counted.
type ContactCounts struct {
	// ByState counts each state; ByOutcome the final contacts' outcomes.
	ByState   map[ContactState]int64
	ByOutcome map[string]int64
	// Waiting counts the pending contacts due after now, NextDue the
	// earliest of their due times (zero when none wait).
	Waiting int64
	NextDue time.Time
	// WaitingGroups are the waiting contacts by time zones, the group
	// that opens first first, at most MaxWaitingGroups of them.
	WaitingGroups []WaitingGroup
}

// WaitingGroup is the waiting contacts of one set of time zones.
type WaitingGroup struct {
	// Zones are the IANA zones the contacts' window is evaluated in.
	Zones []string
	Count int64
	// NextDue is the earliest of their due times.
	NextDue time.Time
}

// MaxWaitingGroups bounds the groups counted: a status stays small
// however many zones a campaign spans.
const MaxWaitingGroups = 10

// Total is every contact.
func (c ContactCounts) Total() int64 {
	var n int64
	for _, v := range c.ByState {
		n += v
	}
	return n
}

// contactColumns in the order scanContact reads them.
const contactColumns = `seq, to_number, zones, variables, metadata, state, due_at, attempts, day, attempts_today, call_id, outcome`

// contactBatch rows go into one INSERT: fewer statements than rows, yet
// few parameters each (modernc.org/sqlite looks each parameter's name up
// in a list as long as the statement's: rows of 500 stored 100,000
// contacts six times slower than rows of 50).
const contactBatch = 50

const selectDueContacts = `SELECT ` + contactColumns + ` FROM campaign_contacts {due}
WHERE namespace = $1 AND campaign = $2 AND state = 'pending' AND due_at <= $3
ORDER BY due_at, seq LIMIT $4`

const selectDialingContacts = `SELECT ` + contactColumns + ` FROM campaign_contacts
WHERE namespace = $1 AND campaign = $2 AND state = 'dialing' ORDER BY seq`

const deferContact = `UPDATE campaign_contacts SET due_at = $4, updated_at = $5
WHERE namespace = $1 AND campaign = $2 AND seq = $3 AND state = 'pending'`

const skipContact = `UPDATE campaign_contacts SET state = 'skipped', outcome = $4, updated_at = $5
WHERE namespace = $1 AND campaign = $2 AND seq = $3 AND state = 'pending'`

// claimContact ($4 attempts before, $5 call id, $6 day, $7 now).
const claimContact = `UPDATE campaign_contacts
SET state = 'dialing', attempts = attempts + 1, call_id = $5,
    attempts_today = CASE WHEN day = $6 THEN attempts_today + 1 ELSE 1 END, day = $6, updated_at = $7
WHERE namespace = $1 AND campaign = $2 AND seq = $3 AND state = 'pending' AND attempts = $4`

// finishAttempt ($4 call id, $5 state, $6 due, $7 outcome, $8 now).
const finishAttempt = `UPDATE campaign_contacts SET state = $5, due_at = $6, outcome = $7, updated_at = $8
WHERE namespace = $1 AND campaign = $2 AND seq = $3 AND state = 'dialing' AND call_id = $4`

// releaseAttempt ($4 call id, $5 due, $6 now).
const releaseAttempt = `UPDATE campaign_contacts
SET state = 'pending', due_at = $5, attempts = attempts - 1, attempts_today = attempts_today - 1, updated_at = $6
WHERE namespace = $1 AND campaign = $2 AND seq = $3 AND state = 'dialing' AND call_id = $4`

const cancelContacts = `UPDATE campaign_contacts SET state = 'canceled', outcome = 'canceled', updated_at = $3
WHERE namespace = $1 AND campaign = $2 AND state = 'pending'`

const countContacts = `SELECT state, outcome, COUNT(*) FROM campaign_contacts
WHERE namespace = $1 AND campaign = $2 GROUP BY state, outcome`

const countWaiting = `SELECT COUNT(*), COALESCE(MIN(due_at), 0) FROM campaign_contacts {due}
WHERE namespace = $1 AND campaign = $2 AND state = 'pending' AND due_at > $3`

const countWaitingGroups = `SELECT zones, COUNT(*), MIN(due_at) FROM campaign_contacts {due}
WHERE namespace = $1 AND campaign = $2 AND state = 'pending' AND due_at > $3
GROUP BY zones ORDER BY MIN(due_at), zones LIMIT $4`

const maxContactSeq = `SELECT COALESCE(MAX(seq), -1) FROM campaign_contacts WHERE namespace = $1 AND campaign = $2`

const deleteContacts = `DELETE FROM campaign_contacts WHERE namespace = $1 AND campaign = $2`

// contactLog implements Contacts over either database.
type contactLog struct {
	db database
	// indexes names the table as the due-contact reads use it (see claim.go).
	indexes *strings.Replacer
}

var (
	sqliteContactIndexes   = strings.NewReplacer("{due}", "INDEXED BY campaign_contacts_due")
	postgresContactIndexes = strings.NewReplacer("{due}", "")
)

// AddContacts writes the full batches in one transaction (one statement,
// many argument lists: SQLite's writer is taken once, not per batch), then
// the rest. It counts what the store holds after, less what it held
// before, as a multi-statement transaction reports no rows changed.
func (l contactLog) AddContacts(ctx context.Context, ns, campaign string, cs []Contact, now time.Time) (int, error) {
	before, err := l.countAll(ctx, ns, campaign)
	if err != nil {
		return 0, err
	}
	full := len(cs) / contactBatch * contactBatch
	if full > 0 {
		var query string
		argLists := make([][]any, 0, full/contactBatch)
		for start := 0; start < full; start += contactBatch {
			var args []any
			query, args = insertContacts(ns, campaign, cs[start:start+contactBatch], now)
			argLists = append(argLists, args)
		}
		if err := l.db.execAll(ctx, query, argLists); err != nil {
			return 0, fmt.Errorf("history: adding contacts to campaign %s/%s: %w", ns, campaign, err)
		}
	}
	if full < len(cs) {
		query, args := insertContacts(ns, campaign, cs[full:], now)
		if _, err := l.db.exec(ctx, query, args...); err != nil {
			return 0, fmt.Errorf("history: adding contacts to campaign %s/%s: %w", ns, campaign, err)
		}
	}
	after, err := l.countAll(ctx, ns, campaign)
	return int(after - before), err
}

const countAllContacts = `SELECT COUNT(*) FROM campaign_contacts WHERE namespace = $1 AND campaign = $2`

func (l contactLog) countAll(ctx context.Context, ns, campaign string) (int64, error) {
	var n int64
	err := l.db.query(ctx, false, countAllContacts, []any{ns, campaign}, func(row rowScanner) error { return row.Scan(&n) })
	if err != nil {
		return 0, fmt.Errorf("history: counting the contacts of campaign %s/%s: %w", ns, campaign, err)
	}
	return n, nil
}

// insertContacts is one multi-row INSERT of batch. ON CONFLICT without a
// target skips a row that repeats the key or the number, in both dialects.
func insertContacts(ns, campaign string, batch []Contact, now time.Time) (string, []any) {
	var b strings.Builder
	b.WriteString(`INSERT INTO campaign_contacts (namespace, campaign, seq, to_number, zones, variables, metadata,
    state, due_at, updated_at) VALUES `)
	args := make([]any, 0, len(batch)*10)
	for i, c := range batch {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(")
		for j := range 10 {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("$" + strconv.Itoa(len(args)+j+1))
		}
		b.WriteString(")")
		args = append(args, ns, campaign, c.Seq, c.ToNumber, strings.Join(c.Zones, ","),
			jsonObject(c.Variables), jsonObject(c.Metadata), string(ContactPending), c.DueAt.UnixNano(), now.UnixNano())
	}
	b.WriteString(" ON CONFLICT DO NOTHING")
	return b.String(), args
}

func jsonObject(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "{}"
	}
	return string(raw)
}

func (l contactLog) MaxContactSeq(ctx context.Context, ns, campaign string) (int64, error) {
	var seq int64
	err := l.db.query(ctx, false, maxContactSeq, []any{ns, campaign}, func(row rowScanner) error { return row.Scan(&seq) })
	if err != nil {
		return 0, fmt.Errorf("history: reading campaign %s/%s: %w", ns, campaign, err)
	}
	return seq, nil
}

func (l contactLog) DueContacts(ctx context.Context, ns, campaign string, now time.Time, limit int) ([]Contact, error) {
	if limit <= 0 {
		return nil, nil
	}
	cs, err := l.contacts(ctx, l.indexes.Replace(selectDueContacts), ns, campaign, now.UnixNano(), int64(limit))
	if err != nil {
		return nil, fmt.Errorf("history: reading the due contacts of campaign %s/%s: %w", ns, campaign, err)
	}
	return cs, nil
}

func (l contactLog) DialingContacts(ctx context.Context, ns, campaign string) ([]Contact, error) {
	cs, err := l.contacts(ctx, selectDialingContacts, ns, campaign)
	if err != nil {
		return nil, fmt.Errorf("history: reading the attempts in flight of campaign %s/%s: %w", ns, campaign, err)
	}
	return cs, nil
}

func (l contactLog) contacts(ctx context.Context, query string, args ...any) ([]Contact, error) {
	var cs []Contact
	err := l.db.query(ctx, false, query, args, func(row rowScanner) error {
		c, err := scanContact(row)
		cs = append(cs, c)
		return err
	})
	return cs, err
}

func scanContact(row rowScanner) (Contact, error) {
	var c Contact
	var zones, vars, meta, state string
	var due int64
	err := row.Scan(&c.Seq, &c.ToNumber, &zones, &vars, &meta, &state, &due, &c.Attempts, &c.Day,
		&c.AttemptsToday, &c.CallID, &c.Outcome)
	if zones != "" {
		c.Zones = strings.Split(zones, ",")
	}
	c.Variables, c.Metadata = json.RawMessage(vars), json.RawMessage(meta)
	c.State, c.DueAt = ContactState(state), time.Unix(0, due).UTC()
	return c, err
}

func (l contactLog) DeferContacts(ctx context.Context, ns, campaign string, ds []Deferral, now time.Time) error {
	if len(ds) == 0 {
		return nil
	}
	args := make([][]any, len(ds))
	for i, d := range ds {
		args[i] = []any{ns, campaign, d.Seq, d.DueAt.UnixNano(), now.UnixNano()}
	}
	if err := l.db.execAll(ctx, deferContact, args); err != nil {
		return fmt.Errorf("history: deferring contacts of campaign %s/%s: %w", ns, campaign, err)
	}
	return nil
}

func (l contactLog) SkipContact(ctx context.Context, ns, campaign string, seq int64, outcome string, now time.Time) (bool, error) {
	n, err := l.db.exec(ctx, skipContact, ns, campaign, seq, outcome, now.UnixNano())
	if err != nil {
		return false, fmt.Errorf("history: skipping contact %d of campaign %s/%s: %w", seq, ns, campaign, err)
	}
	return n == 1, nil
}

func (l contactLog) ClaimContact(ctx context.Context, ns, campaign string, c Contact, callID, day string, now time.Time) (bool, error) {
	n, err := l.db.exec(ctx, claimContact, ns, campaign, c.Seq, c.Attempts, callID, day, now.UnixNano())
	if err != nil {
		return false, fmt.Errorf("history: claiming contact %d of campaign %s/%s: %w", c.Seq, ns, campaign, err)
	}
	return n == 1, nil
}

func (l contactLog) FinishAttempt(ctx context.Context, ns, campaign string, seq int64, callID string,
	next ContactUpdate, now time.Time) (bool, error) {
	n, err := l.db.exec(ctx, finishAttempt, ns, campaign, seq, callID, string(next.State), next.DueAt.UnixNano(),
		next.Outcome, now.UnixNano())
	if err != nil {
		return false, fmt.Errorf("history: recording the attempt %s of campaign %s/%s: %w", callID, ns, campaign, err)
	}
	return n == 1, nil
}

func (l contactLog) ReleaseAttempt(ctx context.Context, ns, campaign string, seq int64, callID string,
	dueAt, now time.Time) (bool, error) {
	n, err := l.db.exec(ctx, releaseAttempt, ns, campaign, seq, callID, dueAt.UnixNano(), now.UnixNano())
	if err != nil {
		return false, fmt.Errorf("history: releasing the attempt %s of campaign %s/%s: %w", callID, ns, campaign, err)
	}
	return n == 1, nil
}

func (l contactLog) CancelContacts(ctx context.Context, ns, campaign string, now time.Time) (int64, error) {
	n, err := l.db.exec(ctx, cancelContacts, ns, campaign, now.UnixNano())
	if err != nil {
		return 0, fmt.Errorf("history: canceling campaign %s/%s: %w", ns, campaign, err)
	}
	return n, nil
}

func (l contactLog) CountContacts(ctx context.Context, ns, campaign string, now time.Time) (ContactCounts, error) {
	counts := ContactCounts{ByState: map[ContactState]int64{}, ByOutcome: map[string]int64{}}
	err := l.db.query(ctx, false, countContacts, []any{ns, campaign}, func(row rowScanner) error {
		var state, outcome string
		var n int64
		if err := row.Scan(&state, &outcome, &n); err != nil {
			return err
		}
		counts.ByState[ContactState(state)] += n
		if outcome != "" && state != string(ContactPending) && state != string(ContactDialing) {
			counts.ByOutcome[outcome] += n
		}
		return nil
	})
	if err == nil {
		var next int64
		err = l.db.query(ctx, false, l.indexes.Replace(countWaiting), []any{ns, campaign, now.UnixNano()},
			func(row rowScanner) error { return row.Scan(&counts.Waiting, &next) })
		if counts.Waiting > 0 {
			counts.NextDue = time.Unix(0, next).UTC()
		}
	}
	if err == nil && counts.Waiting > 0 {
		counts.WaitingGroups, err = l.waitingGroups(ctx, ns, campaign, now)
	}
	if err != nil {
		return ContactCounts{}, fmt.Errorf("history: counting the contacts of campaign %s/%s: %w", ns, campaign, err)
	}
	return counts, nil
}

func (l contactLog) DeleteContacts(ctx context.Context, ns, campaign string) (int64, error) {
	n, err := l.db.exec(ctx, deleteContacts, ns, campaign)
	if err != nil {
		return 0, fmt.Errorf("history: deleting the contacts of campaign %s/%s: %w", ns, campaign, err)
	}
	return n, nil
}

// waitingGroups counts the waiting contacts by their zones. It reads the
// waiting rows only (the due index), as the count of them does.
func (l contactLog) waitingGroups(ctx context.Context, ns, campaign string, now time.Time) ([]WaitingGroup, error) {
	var groups []WaitingGroup
	err := l.db.query(ctx, false, l.indexes.Replace(countWaitingGroups), []any{ns, campaign, now.UnixNano(), MaxWaitingGroups},
		func(row rowScanner) error {
			var zones string
			var g WaitingGroup
			var next int64
			if err := row.Scan(&zones, &g.Count, &next); err != nil {
				return err
			}
			if zones != "" {
				g.Zones = strings.Split(zones, ",")
			}
			g.NextDue = time.Unix(0, next).UTC()
			groups = append(groups, g)
			return nil
		})
	return groups, err
}
