package apptest

import (
	"bytes"
	"mime/multipart"
	"testing"
	"time"
)

func CampaignUpload(b *testing.B, agentID string, csv []byte) ([]byte, string) {
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("agent_id", agentID)
	_ = mw.WriteField("calling_window", OpenAllDay)
	_ = mw.WriteField("pacing", `{"calls_per_second": 10, "max_concurrent": 10}`)
	fw, err := mw.CreateFormFile("contacts", "contacts.csv")
	if err != nil {
		b.Fatal(err)
	}
	_, _ = fw.Write(csv)
	_ = mw.Close()
	return body.Bytes(), mw.FormDataContentType()
}

func Mean(ds []time.Duration) time.Duration {
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum / time.Duration(max(1, len(ds)))
}
