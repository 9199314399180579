//go:build pocketsphinx

package speech

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

// The candidates for the embedded voice (issue 40): flite's built-in
// voices, festival's HTS voice of festvox-us-slt-hts and espeak-ng's US
// English, each as hack/speech/generate.sh names it.
var voiceCandidates = []struct {
	voice string
	// needs is a file that exists when the voice is installed.
	needs string
	// command renders text into the WAV file out, as generate.sh does.
	command func(text, out string) *exec.Cmd
}{
	{"flite:kal", "", fliteCommand("kal")},
	{"flite:kal16", "", fliteCommand("kal16")},
	{"flite:slt", "", fliteCommand("slt")},
	{"flite:rms", "", fliteCommand("rms")},
	{"flite:awb", "", fliteCommand("awb")},
	{"festival:cmu_us_slt_arctic_hts", "/usr/share/festival/voices/us/cmu_us_slt_arctic_hts", func(text, out string) *exec.Cmd {
		cmd := exec.Command("text2wave", "-eval", "(voice_cmu_us_slt_arctic_hts)", "-o", out)
		cmd.Stdin = strings.NewReader(text + "\n")
		return cmd
	}},
	{"espeak:en-us", "", func(text, out string) *exec.Cmd {
		return exec.Command("espeak-ng", "-v", "en-us", "-s", "160", "-w", out, text)
	}},
}

func fliteCommand(voice string) func(text, out string) *exec.Cmd {
	return func(text, out string) *exec.Cmd { return exec.Command("flite", "-voice", voice, "-t", text, "-o", out) }
}

// BenchmarkVoices compares the candidate voices on what the embedded
// voice is chosen by: the word error rate of the embedded recognizer's
// open transcript of each voice's speech of hack/speech/voices.tsv, after
// the telephone band and G.711 (generate.sh, no noise), and the CPU the
// synthesis takes per second of speech (the engine's process: user +
// system time). A process per line costs a fixed amount besides: the
// intercept of CPU against speech length over the lines, fork and exec
// and the engine's start and voice load. Voices not installed are skipped,
// saying so. go test -tags pocketsphinx -bench Voices -benchtime 1x.
func BenchmarkVoices(b *testing.B) {
	testsupport.Needs(b, "flite, espeak-ng and sox (festival and festvox-us-slt-hts for its voice)")
	emb, err := NewEmbedded(EmbeddedOptions{Decoders: 1})
	if err != nil {
		b.Skipf("no embedded recognizer: %v", err)
	}
	lines := voiceLines(b)
	var voices []string
	for _, c := range voiceCandidates {
		bin := c.command("", "").Path
		if _, err := exec.LookPath(bin); err != nil {
			fmt.Printf("%s: skipped: %s is not installed\n", c.voice, filepath.Base(bin))
			continue
		}
		if _, err := os.Stat(c.needs); c.needs != "" && err != nil {
			fmt.Printf("%s: skipped: %s is not installed (apt-get install festival festvox-us-slt-hts)\n", c.voice, c.needs)
			continue
		}
		voices = append(voices, c.voice)
	}
	dir := b.TempDir()
	cmd := exec.Command("../../../hack/speech/generate.sh", append([]string{dir, "../../../hack/speech/voices.tsv"}, voices...)...)
	cmd.Env = append(os.Environ(), "NOISE_LEVELS=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("generate.sh: %v\n%s", err, out)
	}
	set := loadHeldOut(b, dir)
	fmt.Printf("%d lines per voice; | voice | WER %% | exact %% | synthesis CPU-s per speech-s, all in | of which per speech-s | fixed CPU ms per line | wall ms per line |\n", len(lines))
	for _, c := range voiceCandidates {
		label := strings.NewReplacer(":", "-", "+", "-").Replace(c.voice)
		var mine []utterance
		for _, u := range set {
			if u.voice == label || c.voice == "flite:slt" && u.voice == "flite" || c.voice == "espeak:en-us" && u.voice == "espeak" {
				mine = append(mine, u)
			}
		}
		if len(mine) == 0 {
			continue
		}
		b.Run(label, func(b *testing.B) {
			for b.Loop() {
				ev := evaluate(b, emb, mine, false, -1, testing.Verbose())
				wer := 100 * float64(ev.errors["open"]) / float64(max(ev.refWords["open"], 1))
				exact := 100 * float64(ev.right["open"]) / float64(max(ev.total["open"], 1))
				allIn, perSecond, fixed, wall := synthesisCost(b, c.command, lines)
				b.ReportMetric(wer, "WER%")
				b.ReportMetric(allIn, "cpu-s/speech-s")
				b.ReportMetric(perSecond, "marginal-cpu-s/speech-s")
				b.ReportMetric(fixed*1000, "fixed-cpu-ms/line")
				b.ReportMetric(float64(wall.Milliseconds()), "wall-ms/line")
				fmt.Printf("| %s | %.1f | %.0f | %.3f | %.3f | %.0f | %d |\n", c.voice, wer, exact, allIn, perSecond, fixed*1000, wall.Milliseconds())
			}
		})
	}
}

// voiceLines are the texts of hack/speech/voices.tsv.
func voiceLines(tb testing.TB) []string {
	data, err := os.ReadFile("../../../hack/speech/voices.tsv")
	if err != nil {
		tb.Fatal(err)
	}
	var lines []string
	for line := range strings.Lines(string(data)) {
		if fields := strings.Split(strings.TrimRight(line, "\n"), "\t"); len(fields) == 5 && !strings.HasPrefix(line, "#") {
			lines = append(lines, fields[4])
		}
	}
	return lines
}

// synthesisCost renders every line with a process of the engine each and
// measures its CPU time (user + system): all of it per second of speech,
// and fitted against the speech's length, the slope (CPU-seconds per
// second of speech) and the intercept (the fixed CPU-seconds of a process
// per line); and the mean wall time per line.
func synthesisCost(tb testing.TB, command func(text, out string) *exec.Cmd, lines []string) (allIn, perSecond, fixed float64, wall time.Duration) {
	out := filepath.Join(tb.TempDir(), "speech.wav")
	var xs, ys []float64
	start := time.Now()
	for _, text := range lines {
		cmd := command(text, out)
		if msg, err := cmd.CombinedOutput(); err != nil {
			tb.Fatalf("%v: %v\n%s", cmd.Args, err, msg)
		}
		cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		xs = append(xs, wavSeconds(tb, out))
		ys = append(ys, cpu.Seconds())
	}
	wall = time.Since(start) / time.Duration(len(lines))
	var mx, my, sxx, sxy float64
	for i := range xs {
		mx += xs[i] / float64(len(xs))
		my += ys[i] / float64(len(ys))
	}
	allIn = my / mx
	for i := range xs {
		sxx += (xs[i] - mx) * (xs[i] - mx)
		sxy += (xs[i] - mx) * (ys[i] - my)
	}
	perSecond = sxy / sxx
	return allIn, perSecond, my - perSecond*mx, wall
}

// wavSeconds is the length of a PCM WAV file at whatever rate and width
// the engine wrote it (espeak-ng writes a data size of its own, so the
// length is the bytes after the data chunk's header).
func wavSeconds(tb testing.TB, file string) float64 {
	data, err := os.ReadFile(file)
	if err != nil {
		tb.Fatal(err)
	}
	fmtAt, dataAt := bytes.Index(data, []byte("fmt ")), bytes.Index(data, []byte("data"))
	if len(data) < 44 || fmtAt < 0 || dataAt < 0 {
		tb.Fatalf("%s: not a WAV file", file)
	}
	byteRate := binary.LittleEndian.Uint32(data[fmtAt+16:])
	return float64(len(data)-dataAt-8) / float64(byteRate)
}
