// Package signing is the Standard Webhooks signature scheme: signing
// secrets ("whsec_" and base64) and the webhook-signature header value,
// HMAC-SHA256 over "{id}.{timestamp}.{body}". Webhook deliveries are signed
// with it, and so is a bot stream's upgrade request, so that a receiver
// verifies both with the same library. It is a leaf that imports nothing of
// Switchboard's.
package signing

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

const (
	// secretPrefix marks Standard Webhooks secrets; it is optional on input.
	secretPrefix = "whsec_"
	// newSecretBytes is a full SHA-256 block of entropy.
	newSecretBytes = 32
	// The Standard Webhooks spec allows keys of 24 to 64 bytes.
	minSecretBytes = 24
	maxSecretBytes = 64
)

// NewSecret generates a signing secret: "whsec_" and the standard base64 of
// 32 random bytes.
func NewSecret() (string, error) {
	key := make([]byte, newSecretBytes)
	if _, err := rand.Read(key); err != nil {
		return "", fmt.Errorf("webhook: generate secret: %w", err)
	}
	return secretPrefix + base64.StdEncoding.EncodeToString(key), nil
}

// ParseSecret returns the key bytes of a secret, with or without its
// "whsec_" prefix. Errors never quote the secret.
func ParseSecret(s string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, secretPrefix))
	if err != nil {
		// The decoder's error is dropped: it points into the secret.
		return nil, errors.New("webhook secret is not valid base64 (want whsec_ followed by standard base64)")
	}
	if n := len(key); n < minSecretBytes || n > maxSecretBytes {
		return nil, fmt.Errorf("webhook secret is %d bytes; it must be %d to %d bytes", n, minSecretBytes, maxSecretBytes)
	}
	return key, nil
}

// Sign returns the webhook-signature header value of the Standard Webhooks
// scheme: "v1,<base64 HMAC-SHA256 of id.unixSeconds.body>" for each secret,
// separated by spaces. Two secrets during a rotation let receivers switch
// to the new one at their own pace.
func Sign(secrets []string, id string, ts time.Time, body []byte) (string, error) {
	if len(secrets) == 0 {
		return "", errors.New("webhook: no signing secret")
	}
	unix := strconv.FormatInt(ts.Unix(), 10)
	signatures := make([]string, 0, len(secrets))
	for i, secret := range secrets {
		key, err := ParseSecret(secret)
		if err != nil {
			return "", fmt.Errorf("signing secret %d of %d: %w", i+1, len(secrets), err)
		}
		signatures = append(signatures, "v1,"+signature(key, id, unix, body))
	}
	return strings.Join(signatures, " "), nil
}

func signature(key []byte, id, unix string, body []byte) string {
	mac := hmac.New(sha256.New, key)
	// Writing the parts one by one saves copying the body; hash writes
	// never fail.
	for _, part := range [][]byte{[]byte(id), []byte("."), []byte(unix), []byte("."), body} {
		_, _ = mac.Write(part)
	}
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}
