package history_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/history"
)

// A list with MaxBytes ends once the objects read reach it, so that a
// reader of large calls holds a bounded chunk of them; the first call is
// always read, however large.
func testListStopsAtMaxBytes(t *testing.T, b backend) {
	s := open(t, b.fresh(t))
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var ids []string
	for i := range 5 {
		id := fmt.Sprintf("call_%03d", i)
		save(t, s, newCall("org-a", id, base.Add(time.Duration(i)*time.Second), func(c *switchboardv1.Call) {
			c.Spec.Metadata = &apiextensionsv1.JSON{Raw: []byte(`{"pad":"` + strings.Repeat("x", 10_000) + `"}`)}
		}))
		ids = append([]string{id}, ids...)
	}
	assertListed(t, s, "org-a", history.CallQuery{Limit: 10, MaxBytes: 25_000}, ids[:3]...)
	assertListed(t, s, "org-a", history.CallQuery{Limit: 10, MaxBytes: 1}, ids[:1]...)
	assertListed(t, s, "org-a", history.CallQuery{Limit: 10}, ids...)
}
