package quota

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"
)

// RecordingStorage holds each organization to its recording storage
// (Limits.RecordingStorage): once the recordings it has stored reach its
// quota, the recordings of its next calls are not stored. The calls
// themselves go on; a recording is refused whole, never cut, so a stored
// recording is always the whole call (up to --recording-max-bytes), and an
// organization is over its quota by at most one recording.
type RecordingStorage struct {
	// Limits are an organization's limits now (Admission.Limits).
	Limits func(ctx context.Context, ns string) (Limits, error)
	// Stored is the size of the recordings ns has stored
	// (history.Store.RecordingBytes).
	Stored func(ctx context.Context, ns string) (int64, error)
}

// Check says whether ns may store one more recording: nil, or the
// refusal, whose message says the usage and the quota.
func (r RecordingStorage) Check(ctx context.Context, ns string) (*Exceeded, error) {
	limits, err := r.Limits(ctx, ns)
	if err != nil || limits.RecordingStorage == 0 {
		return nil, err
	}
	stored, err := r.Stored(ctx, ns)
	if err != nil {
		return nil, fmt.Errorf("reading the recording storage of %s: %w", ns, err)
	}
	if stored < limits.RecordingStorage {
		return nil, nil
	}
	return &Exceeded{Code: CodeRecordingStorage, Message: fmt.Sprintf(
		"The organization's recordings take %s, its quota is %s (%s): this call's recording was not stored.",
		size(stored), size(limits.RecordingStorage), RecordingStorageAnnotation)}, nil
}

// size is n bytes as a quantity a person reads (1536Mi, 3Gi).
func size(n int64) string {
	return resource.NewQuantity(n, resource.BinarySI).String()
}
