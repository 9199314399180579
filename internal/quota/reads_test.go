package quota

import "testing"

// An organization's reads beyond the bound are refused with rate_limited
// and a Retry-After, without touching another organization's; a released
// slot is free again, and releasing twice frees it once.
func TestReadsBoundPerOrganization(t *testing.T) {
	reads := &Reads{PerOrganization: 2}
	first, refused := reads.Begin("a")
	if refused != nil {
		t.Fatal(refused)
	}
	if _, refused := reads.Begin("a"); refused != nil {
		t.Fatal(refused)
	}
	_, refused = reads.Begin("a")
	if refused == nil || refused.Code != CodeRateLimited || refused.RetryAfter <= 0 {
		t.Fatalf("a third read of a: %+v, want rate_limited with a Retry-After", refused)
	}
	if _, refused := reads.Begin("b"); refused != nil {
		t.Fatalf("b refused while a is at its bound: %v", refused)
	}
	first()
	first()
	if _, refused := reads.Begin("a"); refused != nil {
		t.Fatalf("a refused after one read ended: %v", refused)
	}
	if _, refused := reads.Begin("a"); refused == nil {
		t.Fatal("a second release freed a second slot")
	}
}
