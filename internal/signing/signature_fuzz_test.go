package signing_test

import (
	"bytes"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/switchboard-dev/switchboard/internal/signing"
)

// FuzzSignatureHeader fuzzes both ends of the webhook-signature header.
// Switchboard writes it (Sign) and has no parser of its own: receivers,
// the example ones in hack/receivers included, parse it with the
// Standard Webhooks libraries, whose Go parser this drives.
//
//   - What Sign writes, for any delivery id, timestamp, body and pair of
//     keys (a rotation), is one "v1,<base64 HMAC-SHA256>" per key,
//     space-separated, and verifies with each key alone.
//   - The parser, given any header value instead, never panics, and
//     accepts one only when it carries the right signature: no header
//     passes without the key.
//
// `make test` runs the seeds below and those in testdata/fuzz; explore with
// go test -run '^$' -fuzz FuzzSignatureHeader -fuzztime 60s ./internal/signing
func FuzzSignatureHeader(f *testing.F) {
	key := bytes.Repeat([]byte{7}, 32)
	good, err := signing.Sign([]string{secretOf(key)}, "dlv_1", time.Unix(1795314871, 0), []byte(`{"event":"call.ended"}`))
	if err != nil {
		f.Fatal(err)
	}
	for _, header := range []string{
		good, "", "v1", "v1,", ",", " ", "v1,a v1,b", "v2," + good[3:], good + " " + good, "v1," + good[3:] + ",x",
		"v1a," + good[3:], " " + good, good + " ", strings.ReplaceAll(good, "+", "-"), "v1,v1,v1,", "\x00\xff",
	} {
		f.Add(key, []byte("second key, a rotation's"), "dlv_1", int64(1795314871), []byte(`{"event":"call.ended"}`), header)
	}
	f.Add([]byte{}, []byte{}, "dlv id with spaces, commas, and dots...", int64(-1), []byte("v1,\n not JSON at all"), "v1,")
	f.Fuzz(func(t *testing.T, key1, key2 []byte, id string, unix int64, body []byte, header string) {
		keys := [][]byte{fit(key1, 1), fit(key2, 2)}
		if id == "" || bytes.Equal(keys[0], keys[1]) {
			return // the parser requires an id; two equal keys are one
		}
		ts := time.Unix(unix, 0)
		signed, err := signing.Sign([]string{secretOf(keys[0]), secretOf(keys[1])}, id, ts, body)
		if err != nil {
			t.Fatalf("Sign: %v", err)
		}
		items := strings.Split(signed, " ")
		if len(items) != 2 {
			t.Fatalf("header %q: want two signatures", signed)
		}
		for _, item := range items {
			mac, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(item, "v1,"))
			if !strings.HasPrefix(item, "v1,") || err != nil || len(mac) != 32 {
				t.Fatalf("header %q: %q is not v1,<base64 HMAC-SHA256>", signed, item)
			}
		}
		for i, key := range keys {
			if err := verifyIgnoringTime(key, id, unix, body, signed); err != nil {
				t.Fatalf("header %q does not verify with key %d: %v", signed, i+1, err)
			}
		}
		// It signs the body, the id and the timestamp.
		if verifyIgnoringTime(keys[0], id, unix, append(bytes.Clone(body), '!'), signed) == nil ||
			verifyIgnoringTime(keys[0], id+"x", unix, body, signed) == nil ||
			verifyIgnoringTime(keys[0], id, unix+1, body, signed) == nil {
			t.Fatalf("header %q verified for another delivery", signed)
		}

		own, _ := signing.Sign([]string{secretOf(keys[0])}, id, ts, body)
		if verifyIgnoringTime(keys[0], id, unix, body, header) == nil && !strings.Contains(header, strings.TrimPrefix(own, "v1,")) {
			t.Fatalf("header %q verified without the signature %q", header, own)
		}
	})
}

// fit makes any bytes a key of the 24 to 64 bytes a secret may have.
func fit(b []byte, salt byte) []byte {
	key := append(bytes.Clone(b), bytes.Repeat([]byte{salt}, 24)...)
	return key[:min(len(key), 64)]
}

func secretOf(key []byte) string { return "whsec_" + base64.StdEncoding.EncodeToString(key) }

func verifyIgnoringTime(key []byte, id string, unix int64, body []byte, signature string) error {
	wh, err := standardwebhooks.NewWebhookRaw(key)
	if err != nil {
		return err
	}
	h := http.Header{}
	h.Set(standardwebhooks.HeaderWebhookID, id)
	h.Set(standardwebhooks.HeaderWebhookTimestamp, strconv.FormatInt(unix, 10))
	h.Set(standardwebhooks.HeaderWebhookSignature, signature)
	return wh.VerifyIgnoringTimestamp(body, h)
}
