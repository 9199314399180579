package httpapi

import (
	"context"
	"fmt"
	"net/http"

	"github.com/switchboard-dev/switchboard/internal/callinput"
	"github.com/switchboard-dev/switchboard/internal/calls"
	"github.com/switchboard-dev/switchboard/internal/callview"
	"github.com/switchboard-dev/switchboard/internal/history"
)

// callList is the body of GET /v1/calls, shaped like the other lists.
type callList struct {
	Data       []callview.Call `json:"data"`
	HasMore    bool            `json:"has_more"`
	NextCursor *string         `json:"next_cursor"`
}

// listCalls implements GET /v1/calls: the organization's calls newest
// first, live and archived together.
func (a *api) listCalls(w http.ResponseWriter, r *http.Request) {
	q, invalid := callinput.DecodeQuery(r.URL.Query(), a.cfg.DefaultRegion)
	if invalid != nil {
		writeValidation(w, invalid)
		return
	}
	out, err := a.callPage(r.Context(), q)
	if err != nil {
		a.unavailable(w, err, "listing calls", "The calls could not be listed")
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// callPage is one page of the caller's calls matching q, rendered as call
// objects, with the cursor of the next page. GET /v1/calls and the SDK's
// list-calls (compat.go) share it.
func (a *api) callPage(ctx context.Context, q history.CallQuery) (callList, error) {
	page, err := a.cfg.Calls.List(ctx, organization(ctx), q)
	if err != nil {
		return callList{}, err
	}
	out := callList{Data: make([]callview.Call, 0, len(page.Calls)), HasMore: page.More}
	for i := range page.Calls {
		view, err := callview.Render(ctx, &page.Calls[i], a.cfg.Recordings)
		if err != nil {
			return callList{}, fmt.Errorf("rendering call: %w", err)
		}
		out.Data = append(out.Data, view)
	}
	if page.More {
		out.NextCursor = ptr(calls.EncodeCursor(history.KeyOf(&page.Calls[len(page.Calls)-1])))
	}
	return out, nil
}
