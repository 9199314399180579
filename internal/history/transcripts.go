package history

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/switchboard-dev/switchboard/internal/telephony"
)

// Transcripts keeps each connected call's transcript, apart from the call
// (see migration 0008).
type Transcripts interface {
	// SaveTranscript stores the transcript of callID of namespace, unless
	// one is stored already: a transcript is written once, so
	// processing an ended call again (after a restart) changes nothing.
	SaveTranscript(ctx context.Context, namespace, callID string, t Transcript) error
	// GetTranscript returns the stored transcript of callID of namespace,
	// or ErrNotFound.
	GetTranscript(ctx context.Context, namespace, callID string) (Transcript, error)
	// DeleteTranscriptsStoredBefore removes the transcripts stored before
	// t and returns how many.
	DeleteTranscriptsStoredBefore(ctx context.Context, t time.Time) (int64, error)
}

// Transcript is what was said on a call, in order.
type Transcript struct {
	StoredAt time.Time
	Turns    []telephony.Turn
}

// storedTurn is a turn as the database keeps it: the JSON names are the
// schema, fixed here rather than taken from the Go field names of
// telephony.Turn, which may change. Offsets are milliseconds.
type storedTurn struct {
	Speaker    string  `json:"speaker"`
	Text       string  `json:"text,omitempty"`
	Field      string  `json:"field,omitempty"`
	Digits     string  `json:"digits,omitempty"`
	StartMS    int64   `json:"start_ms,omitempty"`
	EndMS      int64   `json:"end_ms,omitempty"`
	Confidence float64 `json:"confidence,omitempty"`
	Recognizer string  `json:"recognizer,omitempty"`
	Branch     string  `json:"branch,omitempty"`
	Next       string  `json:"next,omitempty"`
	Mark       string  `json:"mark,omitempty"`
	Note       bool    `json:"note,omitempty"`
	// Words are kept as [text, start ms, end ms] triples: a long call has
	// thousands.
	Words []storedWord `json:"words,omitempty"`
	// Tool is a conversation's tool call (telephony.Turn.Tool).
	Tool *storedTool `json:"tool,omitempty"`
}

// storedTool is a turn's tool call, in the stored JSON.
type storedTool struct {
	ID         string `json:"id,omitempty"`
	Name       string `json:"name,omitempty"`
	Arguments  string `json:"arguments,omitempty"`
	Answered   bool   `json:"answered,omitempty"`
	Result     string `json:"result,omitempty"`
	Successful *bool  `json:"successful,omitempty"`
}

func storeTool(t *telephony.ToolCall) *storedTool {
	if t == nil {
		return nil
	}
	return &storedTool{ID: t.ID, Name: t.Name, Arguments: t.Arguments, Answered: t.Answered, Result: t.Result, Successful: t.Successful}
}

func loadTool(t *storedTool) *telephony.ToolCall {
	if t == nil {
		return nil
	}
	return &telephony.ToolCall{ID: t.ID, Name: t.Name, Arguments: t.Arguments, Answered: t.Answered, Result: t.Result, Successful: t.Successful}
}

// storedWord is a word of a turn, in the stored JSON.
type storedWord struct {
	Text    string `json:"w"`
	StartMS int64  `json:"s"`
	EndMS   int64  `json:"e"`
}

func storeWords(words []telephony.Word) []storedWord {
	if len(words) == 0 {
		return nil
	}
	out := make([]storedWord, len(words))
	for i, w := range words {
		out[i] = storedWord{Text: w.Text, StartMS: w.Start.Milliseconds(), EndMS: w.End.Milliseconds()}
	}
	return out
}

func loadWords(words []storedWord) []telephony.Word {
	if len(words) == 0 {
		return nil
	}
	out := make([]telephony.Word, len(words))
	for i, w := range words {
		out[i] = telephony.Word{Text: w.Text, Start: time.Duration(w.StartMS) * time.Millisecond, End: time.Duration(w.EndMS) * time.Millisecond}
	}
	return out
}

const insertTranscript = `
INSERT INTO transcripts (namespace, call_id, stored_at, turns) VALUES ($1, $2, $3, $4)
ON CONFLICT (namespace, call_id) DO NOTHING`

const selectTranscript = `SELECT stored_at, turns FROM transcripts WHERE namespace = $1 AND call_id = $2`

const deleteTranscriptsBefore = `DELETE FROM transcripts WHERE stored_at < $1`

// transcriptLog implements Transcripts over either database.
type transcriptLog struct {
	db database
}

func (l transcriptLog) SaveTranscript(ctx context.Context, namespace, callID string, t Transcript) error {
	args, err := transcriptArgs(namespace, callID, t)
	if err != nil {
		return err
	}
	if _, err := l.db.exec(ctx, insertTranscript, args...); err != nil {
		return fmt.Errorf("history: saving the transcript of %s/%s: %w", namespace, callID, err)
	}
	return nil
}

// transcriptArgs are insertTranscript's arguments for t.
func transcriptArgs(namespace, callID string, t Transcript) ([]any, error) {
	stored := make([]storedTurn, len(t.Turns))
	for i, turn := range t.Turns {
		stored[i] = storedTurn{Speaker: turn.Speaker, Text: turn.Text, Field: turn.Field, Digits: turn.Digits,
			StartMS: turn.Start.Milliseconds(), EndMS: turn.End.Milliseconds(), Confidence: turn.Confidence,
			Recognizer: turn.Recognizer, Branch: turn.Branch, Next: turn.Next, Mark: turn.Mark, Note: turn.Note, Words: storeWords(turn.Words),
			Tool: storeTool(turn.Tool)}
	}
	turns, err := json.Marshal(stored)
	if err != nil {
		return nil, fmt.Errorf("history: encoding the transcript of %s/%s: %w", namespace, callID, err)
	}
	return []any{namespace, callID, t.StoredAt.UnixNano(), string(turns)}, nil
}

func (l transcriptLog) GetTranscript(ctx context.Context, namespace, callID string) (Transcript, error) {
	var at int64
	var turns string
	found := false
	err := l.db.query(ctx, false, selectTranscript, []any{namespace, callID}, func(row rowScanner) error {
		found = true
		return row.Scan(&at, &turns)
	})
	if err != nil {
		return Transcript{}, fmt.Errorf("history: reading the transcript of %s/%s: %w", namespace, callID, err)
	}
	if !found {
		return Transcript{}, ErrNotFound
	}
	var stored []storedTurn
	if err := json.Unmarshal([]byte(turns), &stored); err != nil {
		return Transcript{}, fmt.Errorf("history: decoding the transcript of %s/%s: %w", namespace, callID, err)
	}
	t := Transcript{StoredAt: time.Unix(0, at).UTC(), Turns: make([]telephony.Turn, len(stored))}
	for i, s := range stored {
		t.Turns[i] = telephony.Turn{Speaker: s.Speaker, Text: s.Text, Field: s.Field, Digits: s.Digits,
			Start: time.Duration(s.StartMS) * time.Millisecond, End: time.Duration(s.EndMS) * time.Millisecond,
			Confidence: s.Confidence, Recognizer: s.Recognizer, Branch: s.Branch, Next: s.Next, Mark: s.Mark, Note: s.Note, Words: loadWords(s.Words),
			Tool: loadTool(s.Tool)}
	}
	return t, nil
}

func (l transcriptLog) DeleteTranscriptsStoredBefore(ctx context.Context, t time.Time) (int64, error) {
	n, err := l.db.exec(ctx, deleteTranscriptsBefore, t.UnixNano())
	if err != nil {
		return 0, fmt.Errorf("history: removing expired transcripts: %w", err)
	}
	return n, nil
}
