package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/emiago/diago"
	sipmsg "github.com/emiago/sipgo/sip"
)

const (
	// conversationPressDelay is what a conversation's press_digit waits
	// before its keys, once the response is spoken: the default of the
	// hosted service's press_digit delay_ms, since phone menus speak
	// slowly and drop keys pressed over their prompt.
	conversationPressDelay = time.Second
	// dtmfGap is the pause between keys pressed one after the other.
	dtmfGap = 100 * time.Millisecond
	// pressPause is what a w in the digits waits (Twilio's sendDigits
	// and Retell's press_digit read it the same way).
	pressPause = 500 * time.Millisecond
	// infoDuration is how long a key sent by SIP INFO is held: the
	// Duration the far end plays it for, and our wait before the next.
	infoDuration = 250 * time.Millisecond
	// dtmfInfoType is the body of a SIP INFO key (Cisco's dtmf-relay,
	// which Asterisk, FreeSWITCH and carriers read too).
	dtmfInfoType = "application/dtmf-relay"
)

// keypad keys one digit on an answered call.
type keypad interface {
	key(ctx context.Context, digit rune) error
}

// newKeypad is the call's keypad: SIP INFO on a trunk whose DTMF is
// "info", else RFC 4733 events through w (nil: the call cannot key).
func newKeypad(trunk Trunk, d *diago.DialogClientSession, w *diago.DTMFWriter) keypad {
	if trunk.DTMF == dtmfByInfo {
		return infoKeypad{d: d}
	}
	if w == nil {
		return nil
	}
	return rtpKeypad{w: w}
}

// dtmfByInfo is Trunk.DTMF for SIP INFO.
const dtmfByInfo = "info"

// mayPress reports whether the call may key digits with RFC 4733 events,
// which needs diago's DTMF writer set up with the audio writer: a
// conversation (press_digit) or a script with a pressDigits step.
func mayPress(trunk Trunk, c CallSpec) bool {
	if trunk.DTMF == dtmfByInfo {
		return false
	}
	if c.Conversation != nil {
		return true
	}
	for _, s := range c.Script {
		if s.Press != nil {
			return true
		}
	}
	return false
}

// rtpKeypad sends RFC 4733 telephone events between the audio frames;
// a key takes its event's length (diago's writer blocks meanwhile).
type rtpKeypad struct{ w dtmfWriter }

func (k rtpKeypad) key(_ context.Context, digit rune) error { return k.w.WriteDTMF(digit) }

// infoKeypad sends each key as a SIP INFO in the call's dialog.
type infoKeypad struct{ d *diago.DialogClientSession }

func (k infoKeypad) key(ctx context.Context, digit rune) error {
	target := k.d.InviteRequest.Recipient
	if c := k.d.RemoteContact(); c != nil {
		target = c.Address
	}
	req := sipmsg.NewRequest(sipmsg.INFO, *target.Clone())
	req.AppendHeader(sipmsg.NewHeader("Content-Type", dtmfInfoType))
	req.SetBody([]byte("Signal=" + string(digit) + "\r\nDuration=" + strconv.Itoa(int(infoDuration/time.Millisecond)) + "\r\n"))
	ictx, cancel := context.WithTimeout(ctx, 64*sipmsg.T1)
	defer cancel()
	res, err := k.d.Do(ictx, req)
	if err != nil {
		return fmt.Errorf("INFO: %w", err)
	}
	if !res.IsSuccess() {
		return fmt.Errorf("INFO: %d %s", res.StatusCode, res.Reason)
	}
	// The far end plays the key for its duration: the next one waits.
	if !sleep(ctx, infoDuration) {
		return ctx.Err()
	}
	return nil
}

// validatePresses reports the pressDigits steps that cannot be keyed.
func validatePresses(script []Step) []error {
	var errs []error
	for i, s := range script {
		if s.Press == nil {
			continue
		}
		if s.Press.Delay < 0 || strings.Trim(s.Press.Digits, dtmfKeys+"w") != "" {
			errs = append(errs, fmt.Errorf("script step %d: press %q after %s: want 0-9, *, #, A-D and w, after no negative delay",
				i, s.Press.Digits, s.Press.Delay))
		}
	}
	return errs
}

// press waits delay, then keys digits one after the other (w pauses half
// a second); it checks them all before waiting, so a typo keys nothing.
func press(ctx context.Context, k keypad, digits string, delay time.Duration) error {
	if k == nil {
		return errors.New("the call negotiated no telephone-event")
	}
	for _, d := range digits {
		if d != 'w' && !strings.ContainsRune(dtmfKeys, d) {
			return fmt.Errorf("%q is not a key", d)
		}
	}
	if !sleep(ctx, delay) {
		return ctx.Err()
	}
	for _, d := range digits {
		if d == 'w' {
			if !sleep(ctx, pressPause) {
				return ctx.Err()
			}
			continue
		}
		if err := k.key(ctx, d); err != nil {
			return err
		}
		if !sleep(ctx, dtmfGap) {
			return ctx.Err()
		}
	}
	return nil
}

// pressStep runs a script step's Press after its audio: the delay, the
// keys, and the agent's note ("pressed 1w2") or why it could not.
func pressStep(ctx context.Context, p PressDigits, m *callMedia, res *Result) bool {
	if err := press(ctx, m.keypad, p.Digits, p.Delay); err != nil {
		if ctx.Err() != nil {
			return false
		}
		res.note(SpeakerAgent, "(could not press "+p.Digits+": "+err.Error()+")")
		return true
	}
	res.note(SpeakerAgent, "pressed "+p.Digits)
	return true
}
