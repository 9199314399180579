package v1alpha1

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

func TestCallJSONKeepsTheTextTheAPIServerWouldNot(t *testing.T) {
	tests := []struct {
		raw      string
		annotate bool
	}{
		{`{}`, false},
		{`{"order":7,"name":"Ada","ok":true,"none":null,"list":[1,-2,0]}`, false},
		{`{"d":0.1,"f":-2.5,"e":1e+21,"small":1e-7,"max":9223372036854775807}`, false},
		{`{"big":12345678901234567890}`, true}, // beyond an int64: read as a float
		{`{"one":1.000}`, true},                // written back as 1
		{`{"x":1.0}`, true},
		{`{"e":1e5}`, true}, // written back as 100000
		{`{"e":1E+21}`, true},
		{`{"z":-0}`, true},
		{`{"tiny":1e-400}`, true}, // 0 as a float
		{`{"deep":[{"a":[100000000000000000000000]}]}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			c := &Call{}
			c.SetMetadata([]byte(tt.raw))
			c.SetVariables([]byte(tt.raw))
			_, annotated := c.Annotations[MetadataJSONAnnotation]
			if annotated != tt.annotate || len(c.Annotations) != map[bool]int{false: 0, true: 2}[tt.annotate] {
				t.Fatalf("annotations %v, want the exact text kept: %v", c.Annotations, tt.annotate)
			}
			if string(c.MetadataJSON()) != tt.raw || string(c.VariablesJSON()) != tt.raw {
				t.Fatalf("read back %s and %s", c.MetadataJSON(), c.VariablesJSON())
			}
		})
	}
}

func TestCallJSONAnnotationOnlyRefinesTheSpec(t *testing.T) {
	c := &Call{}
	c.SetMetadata([]byte(`{"big":12345678901234567890}`))
	// As the API server stores it.
	c.Spec.Metadata = &apiextensionsv1.JSON{Raw: []byte(`{"big":12345678901234567000}`)}
	if got := string(c.MetadataJSON()); got != `{"big":12345678901234567890}` {
		t.Fatalf("MetadataJSON() = %s, want the exact text", got)
	}
	// An annotation edited to say something else is ignored.
	c.Annotations[MetadataJSONAnnotation] = `{"big":1}`
	if got := string(c.MetadataJSON()); got != `{"big":12345678901234567000}` {
		t.Fatalf("MetadataJSON() = %s, want the spec's", got)
	}
	c.Annotations[MetadataJSONAnnotation] = `not json`
	if got := string(c.MetadataJSON()); got != `{"big":12345678901234567000}` {
		t.Fatalf("MetadataJSON() = %s, want the spec's", got)
	}
	if (&Call{}).MetadataJSON() != nil || (&Call{}).VariablesJSON() != nil {
		t.Fatal("a call without metadata or variables reads some")
	}
	c = &Call{}
	c.SetMetadata(nil)
	if c.Spec.Metadata != nil || c.Annotations != nil {
		t.Fatalf("SetMetadata(nil) set %v, %v", c.Spec.Metadata, c.Annotations)
	}
}
