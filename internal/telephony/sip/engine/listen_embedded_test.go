//go:build pocketsphinx

package engine

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/telephony/speech"
)

// End to end with the embedded recognizer (make test builds it in): a real
// call to baresip, whose callee says a choice's phrase in flite's voice,
// goes down that choice's branch, and one who says the other choice's goes
// down the other. The choices' phrases are the recognizer's hints, as on
// any gather.
func TestEmbeddedRecognizerBranches(t *testing.T) {
	embedded, err := speech.NewEmbedded(speech.EmbeddedOptions{Decoders: 1})
	if err != nil {
		t.Fatalf("the embedded recognizer (apt-get install libpocketsphinx-dev pocketsphinx-en-us): %v", err)
	}
	for _, tt := range []struct {
		say, branch, then string
	}{
		{"yes, that's right", "yes", "Booked."},
		{"no, cancel it", "no", "Goodbye."},
	} {
		t.Run(tt.branch, func(t *testing.T) {
			voice, _ := spoken(t, 7*time.Second, said{at: 1500 * time.Millisecond, text: tt.say})
			e := newEngine(t, EngineConfig{})
			b := startBaresip(t, voice)
			res := place(t, e, Trunk{Address: "sip:" + b.addr}, CallSpec{Script: confirmScript(time.Second), Recognizer: embedded,
				RecordPath: filepath.Join(t.TempDir(), "call.wav"), MaxDuration: 12 * time.Second})
			// The callee's words after the decision (a pause in "yes,
			// that's right" ends the first utterance) are transcribed,
			// not answered: the decision is the gather's one branch.
			var decided *Event
			for i := range res.Events {
				if res.Events[i].Branch != "" && decided == nil {
					decided = &res.Events[i]
				}
			}
			last := res.Events[len(res.Events)-1]
			if decided == nil || decided.Branch != tt.branch || decided.Recognizer != speech.EmbeddedName || last.Text != tt.then {
				t.Fatalf("the callee said %q; transcript:%s\nwant the %s branch, heard by %s, then %q",
					tt.say, describe(res.Events), tt.branch, speech.EmbeddedName, tt.then)
			}
			t.Logf("heard %q (confidence %.2f)", decided.Text, decided.Confidence)
		})
	}
}
