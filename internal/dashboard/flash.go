package dashboard

import "sync"

// flash is what a form's answer hands, once, to the page it redirects to
// (POST-redirect-GET, so that a reload never sends the form again): the
// result of a test event, or a new signing secret, which must never
// appear in a URL. It is about one endpoint, so that another page does
// not take it.
type flash struct {
	endpointID string
	test       *testOutcome
	secret     *secretData
}

// flashBox holds a session's flash; requests of one session may run at
// once.
type flashBox struct {
	mu sync.Mutex
	f  *flash
}

// put replaces the flash: only the latest answer is shown.
func (b *flashBox) put(f flash) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.f = &f
}

// take removes and returns the flash if keep says the page shows it.
func (b *flashBox) take(keep func(*flash) bool) *flash {
	b.mu.Lock()
	defer b.mu.Unlock()
	f := b.f
	if f == nil || !keep(f) {
		return nil
	}
	b.f = nil
	return f
}
