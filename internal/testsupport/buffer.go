package testsupport

import (
	"bytes"
	"sync"
)

// Buffer collects what a process or goroutine writes while the test reads
// it: Write and String may be called concurrently.
type Buffer struct {
	// Limit, when positive, keeps only the first Limit bytes (the start of
	// a chatty server's output, for a failure message); the rest is
	// dropped, not refused.
	Limit int

	mu sync.Mutex
	b  bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.Limit <= 0 {
		return b.b.Write(p)
	}
	if room := b.Limit - b.b.Len(); room > 0 {
		b.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
