package policy

import (
	"strings"
	"testing"
	"time"
)

func TestSequence(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	sec := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Second) }
	obs := func(id, from, to, actor string, at int) Observation {
		return Observation{Delivery: id, FromKnown: true, From: from, To: to, Actor: actor, At: sec(at), Received: sec(at)}
	}
	known := func(legal, observed string, at int) History {
		return History{Known: true, Legal: legal, Observed: observed, ObservedAt: sec(at)}
	}
	swept := func(start int) SweepProof {
		return SweepProof{Available: true, StartedAt: sec(start), Since: t0.Add(-time.Hour)}
	}
	noFrom := obs("d", "", "Ready for Plan", "alice", 5)
	noFrom.FromKnown = false
	own := obs("d", "Backlog", "Research Needed", "ralph-gate[bot]", 5)
	own.Own = true

	tests := []struct {
		name string
		in   SequenceInput
		want ActionKind
		// check inspects the action beyond its kind.
		check func(t *testing.T, a Action)
	}{
		{"first sight with a previous value adopts it", SequenceInput{
			Pending: []Observation{obs("d", "Backlog", "Research Needed", "agent-1", 5)}, Board: BoardValue{State: "Research Needed"}, Now: sec(6)},
			ActAdopt, func(t *testing.T, a Action) { want(t, a.To, "Backlog") }},
		{"first sight adopts the start of the reports' chain, whatever their order", SequenceInput{
			Pending: []Observation{obs("d2", "Research in Progress", "Ready for Plan", "agent-1", 5), obs("d1", "Research Needed", "Research in Progress", "agent-1", 5)},
			Board:   BoardValue{State: "Ready for Plan"}, Now: sec(6)},
			ActAdopt, func(t *testing.T, a Action) { want(t, a.To, "Research Needed") }},
		{"first sight without a previous value adopts the board", SequenceInput{
			Pending: []Observation{noFrom}, Board: BoardValue{State: "Ready for Plan", UpdatedAt: sec(5)}, Now: sec(6)},
			ActAdopt, func(t *testing.T, a Action) { want(t, a.To, "Ready for Plan"); wantTime(t, a.At, sec(5)) }},
		{"first sight by the reconciler adopts the board", SequenceInput{
			Board: BoardValue{State: "In Progress", UpdatedAt: sec(2)}, Now: sec(6)},
			ActAdopt, func(t *testing.T, a Action) { want(t, a.To, "In Progress") }},
		{"our own write coming back is ignored", SequenceInput{
			History: known("Backlog", "Backlog", 1), Pending: []Observation{own}, Board: BoardValue{State: "Backlog"}, Now: sec(6)},
			ActIgnore, func(t *testing.T, a Action) { want(t, a.Why, "our own write") }},
		{"a report that follows the history is judged from the value it left", SequenceInput{
			History: known("Backlog", "Backlog", 1), Pending: []Observation{obs("d", "Backlog", "Research Needed", "agent-1", 5)},
			Board: BoardValue{State: "Research Needed"}, Now: sec(6)},
			ActJudge, func(t *testing.T, a Action) { want(t, a.From, "Backlog"); want(t, a.Obs.Delivery, "d") }},
		{"a report without a previous value follows by the clock", SequenceInput{
			History: known("Backlog", "Backlog", 1), Pending: []Observation{noFrom}, Board: BoardValue{State: "Ready for Plan"}, Now: sec(6)},
			ActJudge, nil},
		{"a report just received settles first", SequenceInput{
			History: known("Backlog", "Backlog", 1), Pending: []Observation{obs("d", "Backlog", "Research Needed", "agent-1", 5)},
			Board: BoardValue{State: "Research Needed"}, Now: sec(5), Settle: 200 * time.Millisecond},
			ActWait, func(t *testing.T, a Action) {
				wantTime(t, a.Until, sec(5).Add(200*time.Millisecond))
				wantBool(t, a.Sweep, false)
			}},
		{"reports delivered in reverse order are judged in history order", SequenceInput{
			History: known("Backlog", "Backlog", 1), Pending: []Observation{
				obs("d2", "Research Needed", "Ready for Plan", "alice", 5), obs("d1", "Backlog", "Research Needed", "alice", 5)},
			Board: BoardValue{State: "Ready for Plan"}, Now: sec(6)},
			ActJudge, func(t *testing.T, a Action) { want(t, a.Obs.Delivery, "d1") }},
		{"a loop reported in one second is walked whole (X→Y→X→Z)", SequenceInput{
			History: known("Backlog", "Backlog", 1), Pending: []Observation{
				obs("d3", "Backlog", "Ready for Plan", "alice", 5), obs("d2", "Research Needed", "Backlog", "alice", 5),
				obs("d1", "Backlog", "Research Needed", "alice", 5)},
			Board: BoardValue{State: "Ready for Plan"}, Now: sec(6)},
			ActJudge, func(t *testing.T, a Action) { want(t, a.Obs.Delivery, "d1") }},
		{"a report older than the judged history that does not follow it is stale", SequenceInput{
			History: known("Ready for Plan", "Ready for Plan", 9), Pending: []Observation{obs("d", "Backlog", "Research Needed", "alice", 5)},
			Board: BoardValue{State: "Ready for Plan"}, Now: sec(10)},
			ActIgnore, func(t *testing.T, a Action) { wantPrefix(t, a.Why, "stale") }},
		{"a gap holds the later report and does not sweep at once", SequenceInput{
			History: known("Research Needed", "Research Needed", 1), Pending: []Observation{obs("d", "Research in Progress", "Ready for Plan", "agent-2", 5)},
			Board: BoardValue{State: "Ready for Plan"}, Sweep: SweepProof{Available: true}, Now: sec(5).Add(500 * time.Millisecond), Window: 5 * time.Second, Hold: time.Minute},
			ActWait, func(t *testing.T, a Action) { wantBool(t, a.Sweep, false); wantTime(t, a.GapSince, sec(5)) }},
		{"a gap older than the grace asks for a sweep", SequenceInput{
			History: History{Known: true, Legal: "Research Needed", Observed: "Research Needed", ObservedAt: sec(1), GapSince: sec(6)},
			Pending: []Observation{obs("d", "Research in Progress", "Ready for Plan", "agent-2", 5)},
			Board:   BoardValue{State: "Ready for Plan"}, Sweep: SweepProof{Available: true}, Now: sec(7), Window: 5 * time.Second, Hold: time.Minute},
			ActWait, func(t *testing.T, a Action) { wantBool(t, a.Sweep, true); wantTime(t, a.SweepSince, sec(1)) }},
		{"a sweep that began before GitHub had tried the missing delivery proves nothing", SequenceInput{
			History: History{Known: true, Legal: "Research Needed", Observed: "Research Needed", ObservedAt: sec(1), GapSince: sec(6)},
			Pending: []Observation{obs("d", "Research in Progress", "Ready for Plan", "agent-2", 5)},
			Board:   BoardValue{State: "Ready for Plan"}, Sweep: swept(8), Now: sec(9), Window: 5 * time.Second, Hold: time.Minute},
			ActWait, nil},
		{"a complete sweep after the window proves the gap: the unreported step is judged", SequenceInput{
			History: History{Known: true, Legal: "Research Needed", Observed: "Research Needed", ObservedAt: sec(1), GapSince: sec(6)},
			Pending: []Observation{obs("d", "Research in Progress", "Ready for Plan", "agent-2", 5)},
			Board:   BoardValue{State: "Ready for Plan"}, Sweep: swept(10), Now: sec(11), Window: 5 * time.Second, Hold: time.Minute},
			ActJudgeUnobserved, func(t *testing.T, a Action) {
				want(t, a.From, "Research Needed")
				want(t, a.To, "Research in Progress")
				wantTime(t, a.At, sec(5))
			}},
		{"a sweep covering less than the history proves nothing", SequenceInput{
			History: History{Known: true, Legal: "Research Needed", Observed: "Research Needed", ObservedAt: sec(1), GapSince: sec(6)},
			Pending: []Observation{obs("d", "Research in Progress", "Ready for Plan", "agent-2", 5)},
			Board:   BoardValue{State: "Ready for Plan"}, Sweep: SweepProof{Available: true, StartedAt: sec(10), Since: sec(3)}, Now: sec(11), Window: 5 * time.Second, Hold: time.Minute},
			ActWait, nil},
		{"without a sweeper a gap is waited out for the window", SequenceInput{
			History: History{Known: true, Legal: "Research Needed", Observed: "Research Needed", ObservedAt: sec(1), GapSince: sec(6)},
			Pending: []Observation{obs("d", "Research in Progress", "Ready for Plan", "agent-2", 5)},
			Board:   BoardValue{State: "Ready for Plan"}, Now: sec(11), Window: 5 * time.Second, Hold: time.Minute},
			ActJudgeUnobserved, nil},
		{"a gap past its hold is judged even without proof", SequenceInput{
			History: History{Known: true, Legal: "Research Needed", Observed: "Research Needed", ObservedAt: sec(1), GapSince: sec(6)},
			Pending: []Observation{obs("d", "Research in Progress", "Ready for Plan", "agent-2", 5)},
			Board:   BoardValue{State: "Ready for Plan"}, Sweep: SweepProof{Available: true}, Now: sec(66), Window: 5 * time.Second, Hold: time.Minute},
			ActJudgeUnobserved, func(t *testing.T, a Action) { wantContains(t, a.Why, "hold") }},
		{"the board still shows the refused value: revert", SequenceInput{
			History: known("Backlog", "In Progress", 5), Board: BoardValue{State: "In Progress"}, Now: sec(6)},
			ActRevert, func(t *testing.T, a Action) { want(t, a.To, "Backlog") }},
		{"in sync", SequenceInput{History: known("Backlog", "Backlog", 5), Board: BoardValue{State: "Backlog"}, Now: sec(6)}, ActDone, nil},
		{"a refused value already moved on waits for the report of the move", SequenceInput{
			History: known("Backlog", "In Progress", 5), Board: BoardValue{State: "In Review", UpdatedAt: sec(6)},
			Sweep: SweepProof{Available: true}, Now: sec(6), Window: 5 * time.Second, Hold: time.Minute},
			ActWait, nil},
		{"drift the reconciler finds is judged once a sweep proves no report is missing", SequenceInput{
			History: known("Backlog", "Backlog", 5), Board: BoardValue{State: "In Review", UpdatedAt: sec(20)},
			Sweep: swept(26), Now: sec(30), Window: 5 * time.Second, Hold: time.Minute},
			ActJudgeUnobserved, func(t *testing.T, a Action) { want(t, a.To, "In Review"); wantTime(t, a.At, sec(20)) }},
		{"drift with no time from GitHub is dated after the history", SequenceInput{
			History: History{Known: true, Legal: "Backlog", Observed: "Backlog", ObservedAt: sec(5), GapSince: sec(6)},
			Board:   BoardValue{State: "In Review"}, Now: sec(12), Window: 5 * time.Second, Hold: time.Minute},
			ActJudgeUnobserved, func(t *testing.T, a Action) { wantTime(t, a.At, sec(6)) }},
		{"the board back in the legal state after a revert whose record was interrupted", SequenceInput{
			History: known("Backlog", "In Progress", 5), Board: BoardValue{State: "Backlog"}, Now: sec(6)},
			ActSync, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := Sequence(tt.in)
			if a.Kind != tt.want {
				t.Fatalf("Sequence = %s (%s), want %s", a.Kind, a.Why, tt.want)
			}
			if tt.check != nil {
				tt.check(t, a)
			}
		})
	}
}

// Walking a whole burst: applying each action as enforce does ends with every report judged
// once, in the order of the item's history.
func TestSequenceWalksABurst(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	chain := []string{"Backlog", "Research Needed", "Research in Progress", "Ready for Plan", "Plan in Progress", "Plan in Review"}
	var pending []Observation
	for i := len(chain) - 1; i > 0; i-- { // delivered newest first, all in one second
		pending = append(pending, Observation{Delivery: chain[i], FromKnown: true, From: chain[i-1], To: chain[i], At: t0, Received: t0})
	}
	h := History{Known: true, Legal: "Backlog", Observed: "Backlog"}
	var judged []string
	for steps := 0; steps < 20; steps++ {
		a := Sequence(SequenceInput{History: h, Pending: pending, Board: BoardValue{State: "Plan in Review"}, Now: t0.Add(time.Second)})
		if a.Kind == ActDone {
			break
		}
		if a.Kind != ActJudge {
			t.Fatalf("step %d: %s (%s)", steps, a.Kind, a.Why)
		}
		judged = append(judged, a.Obs.To)
		h.Legal, h.Observed, h.ObservedAt = a.Obs.To, a.Obs.To, a.Obs.At
		for i, o := range pending {
			if o.Delivery == a.Obs.Delivery {
				pending = append(pending[:i], pending[i+1:]...)
				break
			}
		}
	}
	if got, wantS := strings.Join(judged, ","), strings.Join(chain[1:], ","); got != wantS {
		t.Errorf("judged %s, want %s", got, wantS)
	}
}

func want(t *testing.T, got, w string) {
	t.Helper()
	if got != w {
		t.Errorf("got %q, want %q", got, w)
	}
}

func wantPrefix(t *testing.T, got, p string) {
	t.Helper()
	if !strings.HasPrefix(got, p) {
		t.Errorf("got %q, want prefix %q", got, p)
	}
}

func wantContains(t *testing.T, got, p string) {
	t.Helper()
	if !strings.Contains(got, p) {
		t.Errorf("got %q, want it to contain %q", got, p)
	}
}

func wantBool(t *testing.T, got, w bool) {
	t.Helper()
	if got != w {
		t.Errorf("got %v, want %v", got, w)
	}
}

func wantTime(t *testing.T, got, w time.Time) {
	t.Helper()
	if !got.Equal(w) {
		t.Errorf("got %s, want %s", got, w)
	}
}
