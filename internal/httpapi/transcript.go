package httpapi

import (
	"errors"
	"net/http"

	"github.com/switchboard-dev/switchboard/internal/callid"
	"github.com/switchboard-dev/switchboard/internal/calls"
	"github.com/switchboard-dev/switchboard/internal/callview"
)

// transcriptNotFound is the 404 of a call that has no transcript (yet).
const transcriptNotFound = "transcript_not_found"

// getTranscript is GET /v1/calls/{call_id}/transcript: the conversation
// of a call of the caller's organization, from the history store. Another
// organization's call is "Call not found." like every call path; a call of
// the caller's without a transcript is 404 transcript_not_found.
func (a *api) getTranscript(w http.ResponseWriter, r *http.Request) {
	call, ok := a.findCall(w, r)
	if !ok {
		return
	}
	id := callid.Of(call)
	t, err := a.cfg.Calls.Transcript(r.Context(), organization(r.Context()), id)
	switch {
	case errors.Is(err, calls.ErrNoTranscript):
		writeErrorDetail(w, http.StatusNotFound, ErrorDetail{ErrorCode: transcriptNotFound, CallID: &id,
			Error: "This call has no transcript: a call has one shortly after it connects and ends, until the recording retention passes."})
		return
	case err != nil:
		a.unavailable(w, err, "reading transcript", "The transcript could not be read")
		return
	}
	writeJSON(w, http.StatusOK, callview.RenderTranscript(id, t.Turns))
}
