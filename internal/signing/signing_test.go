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

// Known answers from the Standard Webhooks reference libraries' own tests
// (libraries@v0.0.1: go/webhook_test.go TestWebhookSign, the same vector in
// the C#, Java, PHP, Python, Ruby and JavaScript tests; rust/src/lib.rs
// test_sign), so they were computed independently of this package.
func TestSignKnownAnswers(t *testing.T) {
	for _, tc := range []struct {
		secret, id string
		unix       int64
		body, want string
	}{
		{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330,
			`{"test": 2432232314}`, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="},
		{"whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD", "msg_27UH4WbU6Z5A5EzD8u03UvzRbpk", 1649367553,
			`{"email":"test@example.com","username":"test_user"}`, "v1,tZ1I4/hDygAJgO5TYxiSd6Sd0kDW6hPenDe+bTa3Kkw="},
		// The prefix is optional.
		{"MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330,
			`{"test": 2432232314}`, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="},
	} {
		got, err := signing.Sign([]string{tc.secret}, tc.id, time.Unix(tc.unix, 0), []byte(tc.body))
		if err != nil || got != tc.want {
			t.Errorf("Sign(%s) = %q, %v; want %q", tc.id, got, err, tc.want)
		}
	}
	two, err := signing.Sign([]string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD"},
		"msg_p5jXN8AQM9LWM0D4loKWxJek", time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`))
	if err != nil || !strings.HasPrefix(two, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE= v1,") ||
		strings.Count(two, " ") != 1 {
		t.Errorf("two secrets: %q, %v", two, err)
	}
}

func signedHeaders(t *testing.T, secrets []string, id string, ts time.Time, body []byte) http.Header {
	t.Helper()
	sig, err := signing.Sign(secrets, id, ts, body)
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	h.Set(standardwebhooks.HeaderWebhookID, id)
	h.Set(standardwebhooks.HeaderWebhookTimestamp, strconv.FormatInt(ts.Unix(), 10))
	h.Set(standardwebhooks.HeaderWebhookSignature, sig)
	return h
}

func verify(t *testing.T, secret string, body []byte, h http.Header) error {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	return wh.Verify(body, h)
}

func newSecrets(t *testing.T, n int) []string {
	t.Helper()
	secrets := make([]string, n)
	for i := range secrets {
		s, err := signing.NewSecret()
		if err != nil {
			t.Fatal(err)
		}
		secrets[i] = s
	}
	return secrets
}

func TestSignVerifiesWithReferenceLibrary(t *testing.T) {
	// An event's body as the webhook sender writes it: JSON with characters
	// an encoder might escape.
	body := []byte(`{"event":"call.ended","call":{"call_id":"call_1","url":"https://x/?a=1&b=<2>"}}`)
	secrets := newSecrets(t, 2)
	now := time.Now()

	one := signedHeaders(t, secrets[:1], "dlv_1", now, body)
	if err := verify(t, secrets[0], body, one); err != nil {
		t.Errorf("one secret: %v", err)
	}
	if err := verify(t, secrets[1], body, one); err == nil {
		t.Error("a signature by secret 1 verified with secret 2")
	}

	both := signedHeaders(t, secrets, "dlv_1", now, body)
	for i, s := range secrets {
		if err := verify(t, s, body, both); err != nil {
			t.Errorf("two secrets, verifying with secret %d alone: %v", i+1, err)
		}
	}

	tampered := bytes.Replace(body, []byte("call_1"), []byte("call_2"), 1)
	if err := verify(t, secrets[0], tampered, both); err == nil {
		t.Error("a tampered body verified")
	}
	otherID := both.Clone()
	otherID.Set(standardwebhooks.HeaderWebhookID, "dlv_2")
	if err := verify(t, secrets[0], body, otherID); err == nil {
		t.Error("a signature verified under another delivery id")
	}
}

func TestSignRefusesBadSecretsWithoutQuotingThem(t *testing.T) {
	good := newSecrets(t, 1)[0]
	short := "whsec_" + base64.StdEncoding.EncodeToString([]byte("sixteen-byte-key"))
	for name, secrets := range map[string][]string{
		"none":       nil,
		"not base64": {good, "whsec_!!topsecretvalue!!"},
		"too short":  {short},
	} {
		_, err := signing.Sign(secrets, "dlv_1", time.Now(), []byte("{}"))
		if err == nil {
			t.Errorf("%s: no error", name)
			continue
		}
		for _, s := range secrets {
			if strings.Contains(err.Error(), strings.TrimPrefix(s, "whsec_")[:12]) {
				t.Errorf("%s: error %q quotes a secret", name, err)
			}
		}
	}
}

func TestNewSecret(t *testing.T) {
	a, b := newSecrets(t, 2)[0], newSecrets(t, 1)[0]
	if a == b {
		t.Fatal("two secrets are equal")
	}
	rest, ok := strings.CutPrefix(a, "whsec_")
	raw, err := base64.StdEncoding.DecodeString(rest)
	if !ok || err != nil || len(raw) != 32 {
		t.Fatalf("NewSecret() = %q: want whsec_ + base64 of 32 bytes", a)
	}
	key, err := signing.ParseSecret(a)
	if err != nil || !bytes.Equal(key, raw) {
		t.Fatalf("ParseSecret(NewSecret()) = %x, %v", key, err)
	}
}

func TestParseSecret(t *testing.T) {
	b64 := func(n int) string { return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, n)) }
	for _, tc := range []struct {
		in      string
		wantLen int // 0: an error wanted
		errPart string
	}{
		{"whsec_" + b64(24), 24, ""},
		{b64(32), 32, ""},
		{"whsec_" + b64(64), 64, ""},
		{"whsec_" + b64(23), 0, "23 bytes"},
		{"whsec_" + b64(65), 0, "65 bytes"},
		{"whsec_", 0, "0 bytes"},
		{"whsec_" + strings.TrimRight(b64(32), "="), 0, "base64"}, // unpadded
		{"whsec_" + base64.URLEncoding.EncodeToString(bytes.Repeat([]byte{0xfb}, 32)), 0, "base64"},
		// encoding/base64 skips line breaks, so a secret file's trailing
		// newline is harmless; other whitespace is not base64.
		{"whsec_" + b64(32) + "\n", 32, ""},
		{"whsec_" + b64(32) + " ", 0, "base64"},
	} {
		key, err := signing.ParseSecret(tc.in)
		if tc.wantLen > 0 && (err != nil || len(key) != tc.wantLen) {
			t.Errorf("ParseSecret(%q) = %d bytes, %v", tc.in, len(key), err)
		}
		if tc.wantLen == 0 && (err == nil || !strings.Contains(err.Error(), tc.errPart)) {
			t.Errorf("ParseSecret(%q) error = %v; want one mentioning %q", tc.in, err, tc.errPart)
		}
	}
}
