package apptest

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// RenderedChart is `helm template` of the chart with values, by kind and
// name ("Service/sb-switchboard-manager-0").
func RenderedChart(t *testing.T, values ...string) map[string][]byte {
	t.Helper()
	out := RunTool(t, nil, HelmBinary(t), append([]string{"template", "sb", ChartDir, "--namespace", "switchboard-system"}, values...)...)
	objs := map[string][]byte{}
	for _, doc := range strings.Split(string(out), "\n---\n") {
		var head struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			t.Fatalf("rendered chart: %v\n%s", err, doc)
		}
		if head.Kind != "" {
			objs[head.Kind+"/"+head.Metadata.Name] = []byte(doc)
		}
	}
	return objs
}

func Decode[T any](t *testing.T, objs map[string][]byte, key string) *T {
	t.Helper()
	doc, ok := objs[key]
	if !ok {
		t.Fatalf("the chart renders no %s", key)
	}
	var o T
	if err := yaml.UnmarshalStrict(doc, &o); err != nil {
		t.Fatalf("%s: %v", key, err)
	}
	return &o
}
