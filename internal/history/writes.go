package history

import (
	"context"
	"time"
)

// Writes are writes stored together, in one transaction: what one pass of
// the call reconciler stores before it writes the Call's status (its dial,
// its transcript, the deliveries of the events it reached). One
// transaction rather than one per write spares the store's one writer
// (SQLite) a commit each, and PostgreSQL round trips; and a crash keeps all
// of them or none. Each write means what the Store method of the same name
// does.
type Writes struct {
	stmts []statement
}

// statement is one write: a query and its arguments.
type statement struct {
	query string
	args  []any
}

// repeated is query once for each argument list.
func repeated(query string, argLists [][]any) []statement {
	stmts := make([]statement, len(argLists))
	for i, args := range argLists {
		stmts[i] = statement{query, args}
	}
	return stmts
}

// Writer stores Writes.
type Writer interface {
	// Write stores w's writes in one transaction: all of them, or, with
	// an error, none.
	Write(ctx context.Context, w *Writes) error
}

// Len is how many writes w holds.
func (w *Writes) Len() int { return len(w.stmts) }

// RecordDial records that callID is being dialed at at, unless an attempt
// is recorded already (Dials.RecordDial, without reading the first
// attempt back).
func (w *Writes) RecordDial(namespace, callID string, at time.Time) {
	w.stmts = append(w.stmts, statement{insertDial, []any{namespace, callID, at.UnixNano()}})
}

// SaveTranscript stores t unless callID has a transcript already
// (Transcripts.SaveTranscript).
func (w *Writes) SaveTranscript(namespace, callID string, t Transcript) error {
	args, err := transcriptArgs(namespace, callID, t)
	if err != nil {
		return err
	}
	w.stmts = append(w.stmts, statement{insertTranscript, args})
	return nil
}

// EnqueueDeliveries queues ds, due at once (DeliveryLog.EnqueueDeliveries).
func (w *Writes) EnqueueDeliveries(ds []*Delivery) error {
	argLists, err := enqueueArgs(ds, time.Now())
	if err != nil {
		return err
	}
	w.stmts = append(w.stmts, repeated(enqueueDelivery, argLists)...)
	return nil
}

// writeAll stores w in db, in one transaction.
func writeAll(ctx context.Context, db database, w *Writes) error {
	if w == nil || len(w.stmts) == 0 {
		return nil
	}
	return db.execEach(ctx, w.stmts)
}
