package campaigns

import (
	"bytes"
	"fmt"
	"testing"
	"time"
)

// BenchmarkPrepare reads and checks a CSV of 100,000 contacts: the part of
// an upload spent before the store.
func BenchmarkPrepare(b *testing.B) {
	var csv bytes.Buffer
	csv.WriteString("to_number,customer_name\n")
	for i := range 100_000 {
		fmt.Fprintf(&csv, "+1212%07d,Customer %d\n", 2_000_000+i, i)
	}
	for b.Loop() {
		in, err := ReadCSV(bytes.NewReader(csv.Bytes()), 1_000_000)
		if err != nil {
			b.Fatal(err)
		}
		p, bad := Prepare(in, "US", 0, time.Now())
		if len(bad) > 0 || len(p.Contacts) != 100_000 {
			b.Fatalf("%d prepared, %v", len(p.Contacts), bad)
		}
	}
}
