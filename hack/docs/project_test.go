package docs

import (
	"path/filepath"
	"regexp"
	"slices"
	"testing"
)

// PROJECT, kubebuilder's record of the scaffolded APIs, names every CRD
// config/crd/bases holds: `kubebuilder edit` and the plugins read it, and a
// reader takes it for the list of kinds.
func TestPROJECTListsEveryCRD(t *testing.T) {
	crdKind := regexp.MustCompile(`(?m)^    kind: (\w+)$`)
	files, err := filepath.Glob(filepath.Join(repoRoot, "config", "crd", "bases", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in config/crd/bases: %v", err)
	}
	var crds []string
	for _, f := range files {
		m := crdKind.FindStringSubmatch(read(t, f))
		if m == nil {
			t.Fatalf("%s: no spec.names.kind", rel(f))
		}
		crds = append(crds, m[1])
	}
	var listed []string
	for _, m := range regexp.MustCompile(`(?m)^  kind: (\w+)$`).FindAllStringSubmatch(read(t, filepath.Join(repoRoot, "PROJECT")), -1) {
		listed = append(listed, m[1])
	}
	slices.Sort(crds)
	slices.Sort(listed)
	if !slices.Equal(crds, listed) {
		t.Errorf("PROJECT lists kinds %v; config/crd/bases has %v", listed, crds)
	}
}
