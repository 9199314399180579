package callpolicy

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	switchboardv1 "github.com/switchboard-dev/switchboard/api/v1alpha1"
	"github.com/switchboard-dev/switchboard/internal/numberlists"
	"github.com/switchboard-dev/switchboard/internal/telephony"
)

// e164 is a dialable number: what a transfer's target must be once its
// placeholders are filled.
var e164 = regexp.MustCompile(`^\+[1-9][0-9]{6,14}$`)

// CheckTransfer returns why agent may not hand a callee of a call in
// namespace to number, or nil when it may: number must be E.164, one of the
// agent's transferDestinations (an exact number, or a prefix ending in *),
// and pass the organization's number lists as a call's to_number does (a
// person on the do-not-call list is not called by a transfer either). The
// error's text is the not_allowed outcome's detail, so it names the rule.
func CheckTransfer(agent *switchboardv1.Agent, namespace, number string, lists *numberlists.Index) error {
	if agent == nil {
		return errors.New("the call's agent is gone")
	}
	if !e164.MatchString(number) {
		return fmt.Errorf("%q is not an E.164 number", number)
	}
	if !AllowedDestination(agent.Spec.TransferDestinations, number) {
		if len(agent.Spec.TransferDestinations) == 0 {
			return fmt.Errorf("agent %s has no transferDestinations", agent.Name)
		}
		return fmt.Errorf("%s is not one of agent %s's transferDestinations", number, agent.Name)
	}
	if rej := checkNumberLists(agent, Request{Namespace: namespace, ToNumber: number}, lists); rej != nil {
		return errors.New(rej.Message)
	}
	return nil
}

// AllowedDestination reports whether number matches one of destinations:
// the same number, or a prefix written with a trailing *.
func AllowedDestination(destinations []string, number string) bool {
	for _, d := range destinations {
		if prefix, ok := strings.CutSuffix(d, "*"); ok {
			if strings.HasPrefix(number, prefix) {
				return true
			}
		} else if d == number {
			return true
		}
	}
	return false
}

// TransferGuard is the guard of a call of agent in namespace: CheckTransfer
// at the moment of the transfer, so that a number list changed during the
// call counts. Both carriers build their calls' guards with it.
func TransferGuard(agent *switchboardv1.Agent, namespace string, lists *numberlists.Index) telephony.TransferGuard {
	return func(ctx context.Context, number string) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		return CheckTransfer(agent, namespace, number, lists)
	}
}

// Transfers gives each call its guard (TransferGuard of its agent and
// namespace): what the SIP dialer and the simulated carrier are configured
// with.
func Transfers(lists *numberlists.Index) func(req telephony.Request) telephony.TransferGuard {
	return func(req telephony.Request) telephony.TransferGuard {
		return TransferGuard(req.Agent, req.Namespace, lists)
	}
}
