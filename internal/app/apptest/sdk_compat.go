package apptest

// The hosted voice-AI service's official Node SDK (retell-sdk, pinned in
// hack/sdk-compat) against the running operator: a backend written with it
// changes its baseURL and keeps working.

import (
	"testing"
	"time"
)

// SdkRun is what hack/sdk-compat/sdk-compat.js prints.
type SdkRun struct {
	Created    map[string]any `json:"created"`
	Statuses   []string       `json:"statuses"`
	Final      map[string]any `json:"final"`
	FirstPage  SdkPage        `json:"firstPage"`
	SecondPage SdkPage        `json:"secondPage"`
	Ended      SdkPage        `json:"ended"`
	Stopped    map[string]any `json:"stopped"`
	// Batch is createBatchCall's answer to a batch triggered at BatchTrigger.
	Batch        map[string]any `json:"batch"`
	BatchTrigger float64        `json:"batchTrigger"`
	Errors       map[string]struct {
		Class  string         `json:"class"`
		Status int            `json:"status"`
		Error  map[string]any `json:"error"`
	} `json:"errors"`
}

type SdkPage struct {
	Items         []map[string]any `json:"items"`
	HasMore       bool             `json:"has_more"`
	PaginationKey *string          `json:"pagination_key"`
}

func (p SdkPage) Ids() []any {
	var ids []any
	for _, c := range p.Items {
		ids = append(ids, c["call_id"])
	}
	return ids
}

// Millis reads a call object's timestamp as epoch milliseconds.
func Millis(t *testing.T, ts any) int64 {
	t.Helper()
	s, _ := ts.(string)
	at, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("timestamp %v: %v", ts, err)
	}
	return at.UnixMilli()
}
