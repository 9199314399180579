package apptest

// Contacts added over REST to a running campaign: JSON and CSV, the same
// checks as on create, an Idempotency-Key, every new contact dialed and
// none twice, and a clear 409 once the campaign has ended.

import (
	"bytes"
	"mime/multipart"
	"net/http"
	"testing"
)

// PostContactsCSV posts csv as the contacts file of campaign id.
func PostContactsCSV(t *testing.T, o *Org, id, csv string, header http.Header) Response {
	t.Helper()
	body, contentType := ContactsForm(t, csv)
	return PostContactsForm(t, o, id, body, contentType, header)
}

// ContactsForm is a multipart body with csv as its contacts file.
func ContactsForm(t *testing.T, csv string) ([]byte, string) {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, err := mw.CreateFormFile("contacts", "more.csv")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = fw.Write([]byte(csv))
	_ = mw.Close()
	return body.Bytes(), mw.FormDataContentType()
}

func PostContactsForm(t *testing.T, o *Org, id string, body []byte, contentType string, header http.Header) Response {
	t.Helper()
	h := http.Header{"Content-Type": {contentType}}
	for k, v := range header {
		h[k] = v
	}
	return SendWithHeader(t, Operator.BaseURL, "POST", "/v1/campaigns/"+id+"/contacts", "Bearer "+o.Key, body, h)
}
