// Package callid makes and recognizes call ids. A call_id is "call_"
// followed by lowercase hex. Kubernetes names cannot hold "_", so a Call
// created through the REST API is named "call-<hex>"; a Call applied with
// kubectl keeps its own name and gets a call_id derived from its UID.
package callid

import (
	"crypto/rand"
	"encoding/hex"
	"regexp"
	"strings"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
)

const (
	prefix     = "call_"
	namePrefix = "call-"
)

// pattern accepts every id this service issues and the sample event's
// call_test_00000000, so that a receiver looking that id up gets a 404
// rather than a validation error.
var pattern = regexp.MustCompile(`^call_[0-9a-z_]{1,64}$`)

// Pattern is the regular expression a call_id must match, for error messages.
const Pattern = `^call_[0-9a-z_]{1,64}$`

// New returns a fresh random call id: 128 bits, as hex.
func New() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return prefix + hex.EncodeToString(b[:])
}

// Valid reports whether id has the form of a call id.
func Valid(id string) bool { return pattern.MatchString(id) }

// ResourceName is the name of the Call resource the REST API creates for id.
func ResourceName(id string) string {
	return namePrefix + strings.ReplaceAll(strings.TrimPrefix(id, prefix), "_", "-")
}

// Of returns the call id of a Call: status.callID once the reconciler has
// set it, otherwise the one implied by its name (REST API calls) or UID.
func Of(c *switchboardv1.Call) string {
	if c.Status.CallID != "" {
		return c.Status.CallID
	}
	if hexPart, ok := strings.CutPrefix(c.Name, namePrefix); ok && isHex(hexPart) {
		return prefix + hexPart
	}
	if c.UID != "" {
		return prefix + strings.ReplaceAll(string(c.UID), "-", "")
	}
	return ""
}

func isHex(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if (r < '0' || r > '9') && (r < 'a' || r > 'f') {
			return false
		}
	}
	return true
}
