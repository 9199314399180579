package calls

import (
	"encoding/base64"
	"strconv"
	"strings"
	"time"

	"github.com/switchboard-dev/switchboard/internal/callid"
	"github.com/switchboard-dev/switchboard/internal/history"
)

// EncodeCursor is the cursor of the page after the call at k: its place in
// the order (acceptance time in nanoseconds and call id), base64url-encoded
// and opaque to clients. Unlike an id it stays valid after its call has
// left the cluster.
func EncodeCursor(k history.Key) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(k.CreatedAt.UnixNano(), 10) + "." + k.CallID))
}

// DecodeCursor reads a cursor of EncodeCursor; nil if it is not one.
func DecodeCursor(s string) *history.Key {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil
	}
	nanos, id, ok := strings.Cut(string(raw), ".")
	n, err := strconv.ParseInt(nanos, 10, 64)
	if !ok || err != nil || !callid.Valid(id) {
		return nil
	}
	return &history.Key{CreatedAt: time.Unix(0, n).UTC(), CallID: id}
}
