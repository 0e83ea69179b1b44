package enforce

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/ralph-gate/ralph-gate/policy"
)

// takeOver makes a.h.Agent the holder of the expired lock a.cur is held in (workflow.locks.ttl,
// docs/ENFORCEMENT.md "Lock expiry"), before the handoff goes on from the item's state. It is
// audited with the previous holder, whose later moves are refused as another's lock, saying it
// was taken over (policy: Change.LockTakenFrom). The board is not written: the item stays in
// its lock state. A refusal is a *policy.Refusal (policy.CheckTakeOver).
func (f *Facade) takeOver(ctx context.Context, a *handoffAttempt) error {
	now := f.now()
	prev := a.rec.LockHolder
	t := policy.TakeOver{Number: a.cur.Number, State: a.from, Holder: prev, Since: a.rec.LockSince, Agent: a.h.Agent, Role: a.h.Role}
	if r := f.Machine().CheckTakeOver(t, now); r != nil {
		return r
	}
	held := now.Sub(a.rec.LockSince).Round(time.Second)
	reason := fmt.Sprintf("took over the lock on %s from %s, held for %s (workflow.locks.ttl %s)", a.from, prev, held, f.Machine().LockTTL())
	if prev == "" {
		held, reason = 0, fmt.Sprintf("took over the lock on %s, which nobody was known to hold", a.from)
	}
	rec, err := f.items.update(ctx, a.cur.ID, func(rec Record, found bool) (Step, bool, error) {
		if !found || !strings.EqualFold(rec.LockHolder, prev) || rec.LastLegalState != a.from {
			return Step{}, false, &policy.Refusal{Tried: t.Agent + " asked to take over the lock on #" + fmt.Sprint(t.Number),
				Why: "the item changed while the take-over was being decided", Recovery: "retry in a few seconds",
				Options: []string{}, Rule: policy.RuleUnsettled, TakeOver: true}
		}
		rec.LockHolder, rec.LockSince, rec.LockTakenFrom = a.h.Agent, now, prev
		e := f.rec.handoffAudit(a, VerdictHandoff, reason)
		e.ToState, e.Cause = a.from, "mcp take_over"
		return Step{Record: rec, Audit: &e}, true, nil
	})
	if err != nil {
		return err
	}
	a.rec = rec
	zerolog.Ctx(ctx).Info().Int("issue", a.cur.Number).Str("state", a.from).Str("holder", a.h.Agent).Str("previous", prev).
		Dur("held", held).Msg("lock taken over")
	return nil
}
