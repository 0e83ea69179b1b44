package enforce

import (
	"context"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/policy"
)

// Observe tells the intake when a change's job first has work to do: with items judged
// together, not before its proof can have come (the job's first run would only be put off);
// otherwise, and for the app's own writes, at once.
func TestObserveSaysWhenTheJobHasWork(t *testing.T) {
	const window = 5 * time.Second
	for _, tt := range []struct {
		name     string
		together bool
		actor    string
		at       time.Duration // the change's time, from now
		want     time.Duration // runAt from now; 0: at once (zero time)
	}{
		{"judged together", true, "agent-1", 0, window + time.Second + proofRecheck},
		{"made a second before it arrived", true, "agent-1", -time.Second, window + proofRecheck},
		{"without judging together", false, "agent-1", 0, 0},
		{"our own write", true, "ralph-gate[bot]", 0, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarnessWith(t, nil, func(h *harness, o *Options) {
				o.BatchJudge = tt.together
				o.Boards = func(context.Context, int64, string) (Board, error) { return h.board, nil }
			}, issue("A", "Backlog"))
			h.unproven()
			ch := Change{DeliveryID: "d1", ItemID: "A", ProjectID: "PVT_1", Owner: "acme", FromKnown: true,
				From: "Backlog", To: "Research", Actor: tt.actor, At: h.now.Add(tt.at), ReceivedAt: h.now}
			runAt, err := h.svc.Enforcer.Observe(context.Background(), ch)
			if err != nil {
				t.Fatal(err)
			}
			if tt.want == 0 {
				if !runAt.IsZero() {
					t.Errorf("runAt %v, want at once", runAt.Sub(h.now))
				}
				return
			}
			if got := runAt.Sub(h.now); got != tt.want {
				t.Errorf("runAt now+%v, want now+%v (due %v + recheck)", got, tt.want, policy.DueAt(ch.At, window).Sub(h.now))
			}
			// Run then, the job finds its item still waiting for the proof and stays away again
			// rather than walking (the proof has not come).
			h.now = runAt
			res := h.process(ch)
			if res.Verdict != VerdictWait {
				t.Errorf("the job run before its proof: %s (%s)", res.Verdict, res.Reason)
			}
		})
	}
}
