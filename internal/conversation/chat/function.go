package chat

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/switchboard-dev/switchboard/internal/egress"
	"github.com/switchboard-dev/switchboard/internal/signing"
)

// retryPause is the wait before a function's next attempt.
const retryPause = 100 * time.Millisecond

// truncatedNote ends a function's answer cut at MaxFunctionAnswerChars.
const truncatedNote = "\n[The function's answer was longer and was cut here.]"

var (
	// errAttemptTimedOut is why an attempt's context was canceled.
	errAttemptTimedOut = errors.New("attempt timed out")
	// errRefused is an address the policy refuses.
	errRefused = errors.New("its address is refused")
)

// callFunction posts the call to the function, as Retell does: body
// {"name", "call", "args"}, signed (Standard Webhooks) when the function
// has a secret, each attempt bounded by its timeout, retried at most
// FunctionRetries times on a network error, a timeout or a 5xx answer.
// It returns what the model is told, and whether the function answered
// 2xx.
func (s *session) callFunction(ctx context.Context, f Function, args json.RawMessage) (string, bool) {
	body, err := json.Marshal(struct {
		Name string          `json:"name"`
		Call any             `json:"call"`
		Args json.RawMessage `json:"args"`
	}{f.Name, s.call, args})
	if err != nil {
		return "Error: the call could not be encoded.", false
	}
	timeout := f.Timeout
	if timeout <= 0 {
		timeout = DefaultFunctionTimeout
	}
	// One id for every attempt: receivers deduplicate on it.
	id := "msg_" + rand.Text()
	why := ""
	for attempt := 0; attempt <= FunctionRetries; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return "Error: canceled.", false
			case <-time.After(retryPause):
			}
		}
		status, answer, err := s.post(ctx, f, id, body, timeout)
		switch {
		case ctx.Err() != nil:
			return "Error: canceled.", false
		case errors.Is(err, errRefused):
			// The address guard will refuse it again.
			return "Error: the function's address is refused.", false
		case err != nil:
			why = err.Error()
			continue
		case status >= 500:
			why = fmt.Sprintf("it answered HTTP %d", status)
			continue
		case status >= 200 && status < 300:
			return answer, true
		}
		// 3xx (redirects are not followed) and 4xx: asking again will not
		// help.
		return fmt.Sprintf("Error: the function answered HTTP %d.\n%s", status, answer), false
	}
	return fmt.Sprintf("Error: the function failed after %d attempts: %s.", FunctionRetries+1, why), false
}

// post is one attempt: the status and the answer as the model reads it
// (its first MaxFunctionAnswerChars characters, marked when cut), or why
// it failed.
func (s *session) post(ctx context.Context, f Function, id string, body []byte, timeout time.Duration) (int, string, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, errAttemptTimedOut)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.URL, bytes.NewReader(body))
	if err != nil {
		return 0, "", errors.New("its URL is invalid")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Switchboard")
	if f.SigningSecret != "" {
		now := time.Now()
		signature, err := signing.Sign([]string{f.SigningSecret}, id, now, body)
		if err != nil {
			return 0, "", errors.New("its signing secret is invalid")
		}
		req.Header.Set("webhook-id", id)
		req.Header.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
		req.Header.Set("webhook-signature", signature)
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return 0, "", attemptError(ctx, err, timeout)
	}
	defer func() { _ = resp.Body.Close() }()
	// A character is at most 4 bytes: this many bytes hold more than
	// MaxFunctionAnswerChars characters if the answer has more.
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 4*MaxFunctionAnswerChars+1))
	if err != nil {
		return 0, "", attemptError(ctx, err, timeout)
	}
	answer := string(raw)
	if utf8.RuneCountInString(answer) > MaxFunctionAnswerChars {
		answer = cutRunes(answer, MaxFunctionAnswerChars) + truncatedNote
	}
	return resp.StatusCode, answer, nil
}

// attemptError says why an attempt failed, without the URL (the model
// reads it).
func attemptError(ctx context.Context, err error, timeout time.Duration) error {
	var refused *egress.RefusedAddrError
	switch {
	case errors.Is(context.Cause(ctx), errAttemptTimedOut):
		return fmt.Errorf("no answer within %s", timeout)
	case errors.As(err, &refused):
		return errRefused
	}
	return errors.New("it could not be reached")
}
