package history_test

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/switchboard-dev/switchboard/internal/history"
)

// TestDeliveryDeepCopySharesNothing: Delivery's DeepCopy is written by hand,
// so a field added later could be shared between a delivery and its copy
// unnoticed. The copy must equal the original and share none of its
// pointers, slices and maps; richDelivery must set every one of those in
// the spec and status (so that a new one is checked once the fixture sets
// it), and the metadata's it sets are checked too.
func TestDeliveryDeepCopySharesNothing(t *testing.T) {
	d := richDelivery()
	d.Spec.Body = []byte(`{"event":"campaign.started"}`) // a call's delivery has none; a campaign's has one
	c := d.DeepCopy()
	if !equality.Semantic.DeepEqual(c, d) {
		t.Fatalf("copy differs:\n%s\nwant:\n%s", toYAML(t, c), toYAML(t, d))
	}
	assertNotShared(t, "metadata", reflect.ValueOf(d.ObjectMeta), reflect.ValueOf(c.ObjectMeta), false)
	assertNotShared(t, "spec", reflect.ValueOf(d.Spec), reflect.ValueOf(c.Spec), true)
	assertNotShared(t, "status", reflect.ValueOf(d.Status), reflect.ValueOf(c.Status), true)
	if (*history.Delivery)(nil).DeepCopy() != nil {
		t.Error("the copy of nil is not nil")
	}
}

// assertNotShared walks a and b (of one type) in step and fails on any
// pointer, non-empty slice or map they share, and, when set, on one that a
// leaves nil or empty (then nothing is checked). Unexported fields
// (time.Time's location) are not the record's and are left alone.
func assertNotShared(t *testing.T, path string, a, b reflect.Value, set bool) {
	t.Helper()
	switch a.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map:
		if a.IsNil() || (a.Kind() != reflect.Pointer && a.Len() == 0) {
			if set {
				t.Errorf("%s: richDelivery leaves it empty, so its copy is not checked", path)
			}
			return
		}
		if a.Pointer() == b.Pointer() {
			t.Errorf("%s: the copy shares it", path)
		}
		switch a.Kind() {
		case reflect.Pointer:
			assertNotShared(t, path, a.Elem(), b.Elem(), set)
		case reflect.Slice:
			for i := range a.Len() {
				assertNotShared(t, path+"[]", a.Index(i), b.Index(i), set)
			}
		}
	case reflect.Struct:
		for i := range a.NumField() {
			if f := a.Type().Field(i); f.IsExported() {
				assertNotShared(t, path+"."+f.Name, a.Field(i), b.Field(i), set)
			}
		}
	}
}
