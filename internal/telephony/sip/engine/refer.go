package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/emiago/diago"
	"github.com/emiago/sipgo"
	sipmsg "github.com/emiago/sipgo/sip"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/telephony"
)

// errNoTransfers refuses the transfers of a call placed without a guard.
var errNoTransfers = errors.New("the agent declares no transferDestinations")

// A cold transfer by REFER (RFC 3515) asks the callee's side to call the
// person itself: REFER sip:<callee> with Refer-To sip:<person>@<trunk
// host:port> (the Request-URI a call to the person would have), Referred-By
// our From, and the call's custom headers. The 202 only says the far end
// will try; the terminal NOTIFY's sipfrag (RFC 3515 §2.4.5) says how it
// went:
//
//	REFER response                      outcome
//	2xx                                 wait for the final NOTIFY (below)
//	405, 501, 603                       the trunk does not transfer: bridge instead
//	420, 489                            REFER (or its event package) unsupported: bridge instead
//	403 and any other failure           refused, with the status
//	none in time, or a transport error  failed
//
//	final NOTIFY sipfrag                outcome
//	2xx                                 transferred: we leave the call (BYE)
//	486, 600                            busy
//	408, 480, 487                       no_answer
//	603                                 declined
//	403, 404, 484, 485, 604             refused (the person's number refused the call)
//	any other                           failed
//	none in time                        no_answer
//
// In time is within the transfer's ring timeout and referGrace of the
// REFER.
//
// On every outcome but transferred the callee is still on our call, with
// the agent: a script goes on at once, a conversation gets the result.
const referGrace = 5 * time.Second

// referFallback are the REFER refusals that say the far end does not do
// transfers, rather than that it refuses this one: the agent bridges.
var referFallback = map[int]bool{405: true, 420: true, 489: true, 501: true, 603: true}

// notifyResults maps the final NOTIFY sipfrag statuses that are not
// failed (2xx aside).
var notifyResults = map[int]switchboardv1.TransferResult{
	403: switchboardv1.TransferRefused,
	404: switchboardv1.TransferRefused,
	408: switchboardv1.TransferNoAnswer,
	480: switchboardv1.TransferNoAnswer,
	484: switchboardv1.TransferRefused,
	485: switchboardv1.TransferRefused,
	486: switchboardv1.TransferBusy,
	487: switchboardv1.TransferNoAnswer,
	600: switchboardv1.TransferBusy,
	603: switchboardv1.TransferDeclined,
	604: switchboardv1.TransferRefused,
}

// notifyResult maps a final NOTIFY's sipfrag status to the outcome's result.
func notifyResult(status int) switchboardv1.TransferResult {
	if status >= 200 && status < 300 {
		return switchboardv1.TransferTransferred
	}
	if r, ok := notifyResults[status]; ok {
		return r
	}
	return switchboardv1.TransferFailed
}

// refer transfers the callee by REFER and waits for the final NOTIFY; a
// far end that does not take REFER is bridged instead (lc.bridge).
func (lc *liveCall) refer(ctx context.Context, t Transfer, out telephony.TransferOutcome) telephony.TransferOutcome {
	referTo, _, err := lc.trunk.target(t.To)
	if err != nil {
		out.Result, out.Detail = switchboardv1.TransferFailed, err.Error()
		return out
	}
	// The NOTIFY may come before ReferOptions returns (it crosses the
	// 202), and the handler must not block: a buffered channel, sent to
	// without waiting. Setting OnNotify also keeps diago from hanging
	// the call up on the final NOTIFY itself.
	notify := make(chan int, 8)
	onNotify := func(status int) {
		select {
		case notify <- status:
		default: // a far end repeating 1xx NOTIFYs; the final one is what counts
		}
	}
	// One bound for the REFER's answer and the final NOTIFY: the callee
	// waits no longer than the person's phone would ring.
	wait := t.RingTimeout + referGrace
	deadline := time.Now().Add(wait)
	status, reason, err := lc.sendRefer(ctx, deadline, referTo,
		diago.ReferClientOptions{Headers: lc.referHeaders(referTo.Host), OnNotify: onNotify})
	switch {
	case err != nil && ctx.Err() == nil && time.Now().After(deadline):
		out.Result, out.Detail = switchboardv1.TransferFailed, "the REFER drew no answer within "+wait.String()
		return out
	case err != nil:
		out.Result, out.Detail = switchboardv1.TransferFailed, "REFER: "+err.Error()
		return out
	case referFallback[status]:
		lc.res.note(SpeakerAgent, fmt.Sprintf("(REFER refused with %d; transferring to %s by bridge)", status, t.To))
		out.Method = switchboardv1.TransferByBridge
		return lc.bridge(ctx, t, out)
	case status >= 300:
		out.Result, out.SIPStatus = switchboardv1.TransferRefused, status
		out.Detail = fmt.Sprintf("the far end refused the REFER: %d %s", status, reason)
		return out
	}
	return awaitNotify(ctx, deadline, wait, notify, out)
}

// sendRefer sends the REFER and returns the status and reason phrase of
// its final response, or an error when none came.
func (lc *liveCall) sendRefer(ctx context.Context, deadline time.Time, referTo sipmsg.Uri,
	opts diago.ReferClientOptions) (int, string, error) {
	rctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	err := lc.d.ReferOptions(rctx, referTo, opts)
	var refused sipgo.ErrDialogResponse
	switch {
	case err == nil:
		return sipmsg.StatusAccepted, "Accepted", nil
	case errors.As(err, &refused) && refused.Res != nil:
		return refused.Res.StatusCode, refused.Res.Reason, nil // a 200 is as good as a 202
	}
	return 0, "", err
}

// referHeaders are the REFER's headers besides Refer-To: Referred-By (our
// From; diago's default would name the callee) and the call's custom
// headers.
func (lc *liveCall) referHeaders(host string) []sipmsg.Header {
	return append([]sipmsg.Header{sipmsg.NewHeader("Referred-By", "<sip:"+lc.spec.From+"@"+host+">")},
		customHeaders(lc.spec.Headers)...)
}

// awaitNotify waits for the REFER's final NOTIFY until deadline, wait
// after the REFER (the ring timeout and referGrace: the far end's call to
// the person gives up at about its own ring timeout, and its NOTIFY needs
// a moment to come back).
func awaitNotify(ctx context.Context, deadline time.Time, wait time.Duration, notify <-chan int,
	out telephony.TransferOutcome) telephony.TransferOutcome {
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	for {
		select {
		case status := <-notify:
			if status < 200 {
				continue
			}
			return notified(out, status)
		case <-timer.C:
			out.Result = switchboardv1.TransferNoAnswer
			out.Detail = "no final NOTIFY came within " + wait.String() + " of the REFER"
			return out
		case <-ctx.Done():
			// The callee may hang up right after the final NOTIFY.
			if status, ok := finalQueued(notify); ok {
				return notified(out, status)
			}
			out.Result, out.Detail = switchboardv1.TransferFailed, "the call ended before the final NOTIFY"
			return out
		}
	}
}

// finalQueued takes the NOTIFY statuses queued and returns the final one,
// if one came.
func finalQueued(notify <-chan int) (int, bool) {
	for {
		select {
		case status := <-notify:
			if status >= 200 {
				return status, true
			}
		default:
			return 0, false
		}
	}
}

// notified is the outcome of a final NOTIFY's sipfrag status.
func notified(out telephony.TransferOutcome, status int) telephony.TransferOutcome {
	out.Result, out.SIPStatus = notifyResult(status), status
	if out.Result == switchboardv1.TransferTransferred {
		out.ConnectedAt = time.Now()
		return out
	}
	out.Detail = "the final NOTIFY said " + strconv.Itoa(status)
	return out
}
