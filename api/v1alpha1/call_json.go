package v1alpha1

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strconv"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// The exact JSON text of spec.variables and spec.metadata, as the REST API
// received them, when the API server would not keep it. The API server
// reads every number of a schemaless field as a 64-bit integer or float and
// writes it back from that, so 12345678901234567890 would come back as
// 12345678901234567000 and 1.000 as 1; the caller's metadata is to be
// echoed untouched. The annotation is written only then (most calls carry
// none), like kubectl's last-applied-configuration, and only ever refines
// the spec field: one that no longer matches it is ignored.
const (
	VariablesJSONAnnotation = "switchboard.dev/variables-json"
	MetadataJSONAnnotation  = "switchboard.dev/metadata-json"
)

// SetVariables sets spec.variables to the JSON object raw (nil for none).
func (c *Call) SetVariables(raw []byte) {
	c.Spec.Variables = c.setJSON(VariablesJSONAnnotation, raw)
}

// SetMetadata sets spec.metadata to the JSON object raw (nil for none).
func (c *Call) SetMetadata(raw []byte) {
	c.Spec.Metadata = c.setJSON(MetadataJSONAnnotation, raw)
}

// VariablesJSON is the call's variables as they were sent (nil for none).
func (c *Call) VariablesJSON() []byte {
	return c.exactJSON(VariablesJSONAnnotation, c.Spec.Variables)
}

// MetadataJSON is the call's metadata as it was sent (nil for none).
func (c *Call) MetadataJSON() []byte {
	return c.exactJSON(MetadataJSONAnnotation, c.Spec.Metadata)
}

func (c *Call) setJSON(annotation string, raw []byte) *apiextensionsv1.JSON {
	if raw == nil {
		return nil
	}
	if !storedExactly(raw) {
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[annotation] = string(raw)
	}
	return &apiextensionsv1.JSON{Raw: raw}
}

func (c *Call) exactJSON(annotation string, field *apiextensionsv1.JSON) []byte {
	if field == nil {
		return nil
	}
	if exact, ok := c.Annotations[annotation]; ok && sameValue([]byte(exact), field.Raw) {
		return []byte(exact)
	}
	return field.Raw
}

// storedExactly reports whether the API server writes back every number of
// the JSON value raw as it is written: an integer that fits an int64 in
// its shortest form, or a float in the form encoding/json gives it
// (k8s.io/apimachinery/pkg/util/json reads them so).
func storedExactly(raw []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			return errors.Is(err, io.EOF)
		}
		n, ok := tok.(json.Number)
		if !ok {
			continue
		}
		if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
			if strconv.FormatInt(i, 10) != string(n) {
				return false
			}
			continue
		}
		f, err := strconv.ParseFloat(string(n), 64)
		if err != nil {
			return false
		}
		if written, err := json.Marshal(f); err != nil || string(written) != string(n) {
			return false
		}
	}
}

// sameValue reports whether two JSON texts hold the same value, up to the
// precision of a float64.
func sameValue(a, b []byte) bool {
	var va, vb any
	return json.Unmarshal(a, &va) == nil && json.Unmarshal(b, &vb) == nil && reflect.DeepEqual(va, vb)
}
