package callpolicy

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// Size limits of a call's variables and metadata. They hold always (the
// development mode included) and for every way a call is made: the REST API
// refuses a larger request with 422, and a larger Call applied with kubectl
// fails before it is dialed. Every live call is a Call in the operator's
// cache and in etcd, and its variables and metadata travel in each of its
// events: these bound what one call can cost everyone else.
const (
	// MaxMetadataBytes bounds metadata, measured as compact JSON.
	MaxMetadataBytes = 16 << 10
	// MaxVariables bounds the number of variables of a call.
	MaxVariables = 100
	// MaxVariableNameChars bounds a variable's name, in characters.
	MaxVariableNameChars = 128
	// MaxVariableValueBytes bounds a variable's value: a string's UTF-8
	// bytes, or another value's compact JSON.
	MaxVariableValueBytes = 1 << 10
)

// CodeCallTooLarge fails a Call applied with kubectl whose variables or
// metadata are over the limits above.
const CodeCallTooLarge = "call_too_large"

// ValueBytes is the size of a variable's value (compact JSON) as the limits
// count it.
func ValueBytes(value json.RawMessage) int {
	var s string
	if json.Unmarshal(value, &s) == nil {
		return len(s)
	}
	return len(value)
}

// CheckSize returns why a call's variables and metadata (compact JSON
// objects, nil when absent) are over the limits, or nil.
func CheckSize(variables, metadata json.RawMessage) *Rejection {
	if len(metadata) > MaxMetadataBytes {
		return tooLarge("Its metadata is %d bytes as compact JSON; at most %d are allowed.", len(metadata), MaxMetadataBytes)
	}
	if variables == nil {
		return nil
	}
	var values map[string]json.RawMessage
	if err := json.Unmarshal(variables, &values); err != nil {
		return tooLarge("Its variables are not a JSON object.")
	}
	if len(values) > MaxVariables {
		return tooLarge("It has %d variables; at most %d are allowed.", len(values), MaxVariables)
	}
	for name, value := range values {
		if n := utf8.RuneCountInString(name); n > MaxVariableNameChars {
			return tooLarge("A variable's name has %d characters; at most %d are allowed.", n, MaxVariableNameChars)
		}
		if n := ValueBytes(value); n > MaxVariableValueBytes {
			return tooLarge("The variable %q is %d bytes; at most %d are allowed.", name, n, MaxVariableValueBytes)
		}
	}
	return nil
}

func tooLarge(format string, args ...any) *Rejection {
	return &Rejection{Code: CodeCallTooLarge, Message: "The call is too large: " + fmt.Sprintf(format, args...)}
}
