package apptest

// The campaigns REST API as a customer backend uses it: a CSV upload that
// runs to its end, its calls listed, the bad inputs refused in the spec's
// shapes, an Idempotency-Key, pause, resume, an edit of pacing, cancel.

import (
	"bytes"
	"mime/multipart"
	"net/http"
	"testing"
)

// UploadCampaign posts a multipart campaign with csv as its contacts file.
func UploadCampaign(t *testing.T, o *Org, csv string, fields map[string]string, header http.Header) Response {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("agent_id", o.AgentID)
	for k, v := range fields {
		_ = mw.WriteField(k, v)
	}
	fw, err := mw.CreateFormFile("contacts", "contacts.csv")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = fw.Write([]byte(csv))
	_ = mw.Close()
	h := http.Header{"Content-Type": {mw.FormDataContentType()}}
	for k, v := range header {
		h[k] = v
	}
	return SendWithHeader(t, Operator.BaseURL, "POST", "/v1/campaigns", "Bearer "+o.Key, body.Bytes(), h)
}

const OpenAllDay = `{"start":"00:00","end":"24:00"}`
