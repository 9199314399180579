package engine

import (
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/telephony"
	"github.com/switchboard-dev/switchboard/internal/telephony/amd"
	"github.com/switchboard-dev/switchboard/internal/telephony/audio"
	"github.com/switchboard-dev/switchboard/internal/testsupport"
)

// These tests call baresip playing an answering machine's greeting or a
// human's "Hello?", spoken by flite (Debian package flite).

// speak is text spoken by flite, 8 kHz mono 16-bit.
func speak(t *testing.T, text string) []int16 {
	t.Helper()
	testsupport.Needs(t, "flite")
	if _, err := exec.LookPath("flite"); err != nil {
		t.Fatalf("flite is not on PATH: these tests need it to speak; install it with `apt-get install -y flite` (%v)", err)
	}
	path := filepath.Join(t.TempDir(), "speech.wav")
	if out, err := exec.Command("flite", "-t", text, "-o", path).CombinedOutput(); err != nil {
		t.Fatalf("flite: %v\n%s", err, out)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	pcm, err := audio.DecodeMono(f)
	if err != nil {
		t.Fatal(err)
	}
	return pcm
}

// machineGreeting is a voicemail greeting, its beep, then silence long
// enough for the message: baresip hangs up when its audio ends.
func machineGreeting(t *testing.T) []int16 {
	greeting := speak(t, "Hi, you have reached Jane. I can't take your call right now. Please leave a message after the tone.")
	beep := make([]int16, sampleRate/2)
	for i := range beep {
		beep[i] = int16(8000 * math.Sin(2*math.Pi*1000*float64(i)/sampleRate))
	}
	return slices.Concat(greeting, make([]int16, sampleRate*3/10), beep, make([]int16, 15*sampleRate))
}

// voicedFrames says, per 20 ms frame of a recording's channel, whether it
// is voice (the detector's rule).
func voicedFrames(pcm []int) []bool {
	var v []bool
	for i := 0; i+frameSamples <= len(pcm); i += frameSamples {
		v = append(v, meanAbs(pcm[i:i+frameSamples]) >= float64(amd.DefaultParams().SilenceThreshold))
	}
	return v
}

// firstVoiced and lastVoiced are the times of the first and last voiced
// frames of a channel, -1 when none.
func firstVoiced(pcm []int) time.Duration {
	return frameTime(slices.Index(voicedFrames(pcm), true))
}

func lastVoiced(pcm []int) time.Duration {
	v := voicedFrames(pcm)
	for i := len(v) - 1; i >= 0; i-- {
		if v[i] {
			return frameTime(i)
		}
	}
	return -1
}

func frameTime(i int) time.Duration {
	if i < 0 {
		return -1
	}
	return time.Duration(i) * 20 * time.Millisecond
}

func defaultAMD() *amd.Params {
	p := amd.DefaultParams()
	return &p
}

// A machine's greeting: the detector says MACHINE, and without a message to
// leave we hang up at once, without running the script.
func TestMachineHangsUpAtOnce(t *testing.T) {
	e := newEngine(t, EngineConfig{})
	b := startBaresip(t, machineGreeting(t))
	res := place(t, e, Trunk{Address: "sip:" + b.addr}, CallSpec{
		AMD:         defaultAMD(),
		Script:      []Step{{Text: "Hi, this is Switchboard.", Audio: tone(time.Second)}},
		MaxDuration: 30 * time.Second,
	})
	b.waitCallEnded(t)
	if !res.Answered || !res.Machine || res.AMDStatus != amd.Machine || res.HangupBy != HangupByVoicemail {
		t.Fatalf("result %+v: want a machine, voicemail hangup", res)
	}
	t.Logf("AMD: %s (%s)", res.AMDStatus, res.AMDCause)
	if got := res.Disposition(); got != telephony.AnsweringMachine {
		t.Errorf("disposition %q, want answering_machine", got)
	}
	if d := res.EndedAt.Sub(res.AnsweredAt); d > 5*time.Second {
		t.Errorf("connected for %s, want a hangup once detected (the greeting lasts 7 s)", d)
	}
	assertTranscript(t, res, []Event{{Turn: telephony.Turn{Speaker: SpeakerCallee, Text: "(answering machine greeting)"}}})
}

// With a message to leave, we wait for the greeting and its beep to end,
// play the message, and hang up; the recording has the greeting on the
// right, then the message on the left.
func TestMachineLeaveMessage(t *testing.T) {
	e := newEngine(t, EngineConfig{})
	b := startBaresip(t, machineGreeting(t))
	rec := filepath.Join(t.TempDir(), "call.wav")
	message := tone(1500 * time.Millisecond)
	res := place(t, e, Trunk{Address: "sip:" + b.addr}, CallSpec{
		AMD:         defaultAMD(),
		Voicemail:   Voicemail{LeaveMessage: true, Message: message, MessageText: "Please call us back."},
		Script:      []Step{{Text: "Hi, this is Switchboard.", Audio: tone(time.Second)}},
		RecordPath:  rec,
		MaxDuration: 30 * time.Second,
	})
	b.waitCallEnded(t)
	if !res.Machine || res.HangupBy != HangupByVoicemail {
		t.Fatalf("result %+v: want a machine, voicemail hangup", res)
	}
	assertTranscript(t, res, []Event{{Turn: telephony.Turn{Speaker: SpeakerCallee, Text: "(answering machine greeting)"}}, {Turn: telephony.Turn{Speaker: SpeakerAgent, Text: "Please call us back."}}})

	left, right := readRecording(t, rec)
	greetingEnd, messageStart, messageEnd := lastVoiced(right), firstVoiced(left), lastVoiced(left)
	t.Logf("greeting and beep end at %s; the message plays from %s to %s; the recording lasts %s",
		greetingEnd, messageStart, messageEnd, frameTime(len(left)/frameSamples))
	if greetingEnd < 6*time.Second {
		t.Fatalf("the greeting ends at %s in the recording, want the whole 7 s greeting and beep", greetingEnd)
	}
	// The default rule: 1 s of silence after the greeting's last voiced frame.
	if gap := messageStart - greetingEnd; gap < 900*time.Millisecond || gap > 2500*time.Millisecond {
		t.Errorf("the message starts %s after the greeting, want about 1 s", gap)
	}
	if d := messageEnd - messageStart; d < 1300*time.Millisecond || d > 1700*time.Millisecond {
		t.Errorf("the message lasts %s in the recording, want 1.5 s", d)
	}
}

// A human says "Hello?" and waits: the detector says HUMAN after the
// silence that follows, and the script runs then.
func TestHumanRunsScript(t *testing.T) {
	e := newEngine(t, EngineConfig{})
	b := startBaresip(t, slices.Concat(speak(t, "Hello?"), make([]int16, 15*sampleRate)))
	rec := filepath.Join(t.TempDir(), "call.wav")
	res := place(t, e, Trunk{Address: "sip:" + b.addr}, CallSpec{
		AMD:        defaultAMD(),
		Voicemail:  Voicemail{LeaveMessage: true, Message: tone(time.Second)},
		Script:     []Step{{Text: "Hi, this is Switchboard.", Audio: tone(time.Second)}},
		RecordPath: rec,
	})
	b.waitCallEnded(t)
	if !res.Answered || res.Machine || res.AMDStatus != amd.Human || res.HangupBy != HangupByAgent {
		t.Fatalf("result %+v: want a human, agent hangup after the script", res)
	}
	if res.AMDCause != amd.CauseAfterGreetingSilence {
		t.Errorf("AMD cause %q, want %q", res.AMDCause, amd.CauseAfterGreetingSilence)
	}
	assertTranscript(t, res, []Event{{Turn: telephony.Turn{Speaker: SpeakerAgent, Text: "Hi, this is Switchboard."}}})
	if got := res.Disposition(); got != telephony.Answered {
		t.Errorf("disposition %q, want answered", got)
	}

	left, right := readRecording(t, rec)
	hello, script := lastVoiced(right), firstVoiced(left)
	t.Logf("hello ends at %s, the script starts at %s", hello, script)
	if hello < 0 || hello > 1500*time.Millisecond {
		t.Fatalf("hello ends at %s in the recording, want it in the first 1.5 s", hello)
	}
	// The detector waits for 800 ms of silence after the hello.
	if gap := script - hello; gap < 700*time.Millisecond || gap > 2500*time.Millisecond {
		t.Errorf("the script starts %s after the hello, want about 0.8 s", gap)
	}
	if d := lastVoiced(left) - script; d < 800*time.Millisecond || d > 1200*time.Millisecond {
		t.Errorf("the script's audio lasts %s in the recording, want 1 s", d)
	}
}

// A callee that sends no audio at all is silent to the detector (not
// undecided): MACHINE after the initial silence.
func TestMachineOnSilentLine(t *testing.T) {
	e := newEngine(t, EngineConfig{})
	s := startSipp(t, "udp", scenario(t, "uas.xml")...)
	res := place(t, e, Trunk{Address: "sip:" + s.addr}, CallSpec{AMD: defaultAMD(), Script: sayTone(time.Second)})
	s.wait(t)
	if !res.Machine || res.AMDCause != amd.CauseInitialSilence || res.HangupBy != HangupByVoicemail {
		t.Fatalf("result %+v: want a machine by initial silence, voicemail hangup", res)
	}
	if d := res.EndedAt.Sub(res.AnsweredAt); d < 2500*time.Millisecond || d > 4*time.Second {
		t.Errorf("connected for %s, want about the 2.5 s initial silence", d)
	}
}

// NOTSURE (here: the analysis time ran out before the initial silence
// decided) runs the script, as HUMAN does.
func TestNotSureRunsScript(t *testing.T) {
	e := newEngine(t, EngineConfig{})
	s := startSipp(t, "udp", scenario(t, "uas.xml")...)
	p := amd.DefaultParams()
	p.TotalAnalysisTime = time.Second
	res := place(t, e, Trunk{Address: "sip:" + s.addr}, CallSpec{AMD: &p, Script: sayTone(time.Second)})
	s.wait(t)
	if res.Machine || res.AMDStatus != amd.NotSure || res.HangupBy != HangupByAgent {
		t.Fatalf("result %+v: want NOTSURE, agent hangup after the script", res)
	}
	assertTranscript(t, res, []Event{{Turn: telephony.Turn{Speaker: SpeakerAgent, Text: "a tone"}}})
}

// The callee hangs up while the detector still listens: the call ends,
// undecided, and neither the script nor the voicemail runs.
func TestCalleeHangsUpDuringDetection(t *testing.T) {
	e := newEngine(t, EngineConfig{})
	b := startBaresip(t, speak(t, "Hello?")) // baresip hangs up when it ends
	res := place(t, e, Trunk{Address: "sip:" + b.addr}, CallSpec{
		AMD:       defaultAMD(),
		Voicemail: Voicemail{LeaveMessage: true, Message: tone(time.Second)},
		Script:    sayTone(time.Second),
	})
	b.waitCallEnded(t)
	if !res.Answered || res.HangupBy != HangupByCallee || res.AMDStatus != "" || res.Machine || len(res.Events) != 0 {
		t.Fatalf("result %+v: want a callee hangup before a verdict, nothing played", res)
	}
}
