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
	const window = 5 * time.Second
	// proven: every change up to `until` minus the window has been reported.
	proven := func(until int) SweepProof {
		return SweepProof{Available: true, Since: t0.Add(-72 * time.Hour), Until: sec(until).Add(time.Second), Full: true}
	}
	in := func(h History, pending []Observation, board BoardValue, sweep SweepProof, now int) SequenceInput {
		// GitHub dates changes to the second: `now` and proofs are a second later than the
		// whole seconds the rows name, so that a change dated t is covered at t + window.
		return SequenceInput{History: h, Pending: pending, Board: board, Sweep: sweep, Now: sec(now).Add(time.Second), Window: window, Hold: 2 * time.Minute}
	}
	unknown := BoardValue{Unknown: true}
	received := func(o Observation, ms int) Observation {
		o.Received = t0.Add(time.Duration(ms) * time.Millisecond)
		return o
	}
	noFrom := obs("d", "", "Ready for Plan", "alice", 5)
	noFrom.FromKnown = false
	own := obs("d", "Backlog", "Research Needed", "ralph-gate[bot]", 5)
	own.Own = true
	late := obs("d", "Backlog", "Research Needed", "alice", 5)
	late.Received = sec(100)
	eventAt := func(at int) Observation {
		return Observation{Delivery: "e", To: "Done", Actor: "agent-1", At: sec(at), Received: sec(at), Event: true}
	}
	event := eventAt(5)
	closing := Observation{Delivery: "close", To: "Done", Actor: "alice", At: sec(5), Received: sec(6), Event: true, Closes: true}
	reopening := Observation{Delivery: "reopen", To: "Backlog", Actor: "agent-1", At: sec(5), Received: sec(5), Event: true}
	provisionalOwn := obs("own", "In Progress", "Backlog", "ralph-gate[bot]", 5)
	provisionalOwn.Own = true
	edit := func(id, from, to string, at int) Observation {
		return Observation{Delivery: id, FromKnown: true, From: from, To: to, Actor: "alice", At: sec(at), Received: sec(at), Field: "Estimate"}
	}
	withFields := func(h History, v string) History { h.Fields = map[string]string{"Estimate": v}; return h }
	own5 := func(id, from, to string) Observation {
		o := obs(id, from, to, "ralph-gate[bot]", 5)
		o.Own = true
		return o
	}

	tests := []struct {
		name string
		in   SequenceInput
		want ActionKind
		// check inspects the action beyond its kind.
		check func(t *testing.T, a Action)
	}{
		// Required fields' edits: no value of the card, placed by time, before the card
		// reports and events of their own second.
		{"a field edit is taken in once the proof covers it", in(known("Backlog", "Backlog", 1), []Observation{edit("f", "", "S", 5)}, unknown, proven(10), 11),
			ActJudge, func(t *testing.T, a Action) { want(t, a.Obs.Delivery, "f") }},
		{"a field edit waits for the proof", in(known("Backlog", "Backlog", 1), []Observation{edit("f", "", "S", 5)}, unknown, proven(8), 9), ActWait, nil},
		{"a field edit is taken in without reading the board", in(known("Backlog", "Backlog", 1), []Observation{edit("f", "", "S", 5)}, unknown, proven(10), 11),
			ActJudge, func(t *testing.T, a Action) { want(t, a.Obs.Field, "Estimate") }},
		{"a card report made before a field edit is judged first", in(known("Backlog", "Backlog", 1),
			[]Observation{edit("f", "", "S", 5), obs("c", "Backlog", "Research Needed", "alice", 4)}, unknown, proven(10), 11),
			ActJudge, func(t *testing.T, a Action) { want(t, a.Obs.Delivery, "c") }},
		{"a field edit comes before a card report of its own second", in(known("Backlog", "Backlog", 1),
			[]Observation{obs("c", "Backlog", "Research Needed", "alice", 5), edit("f", "", "S", 5)}, unknown, proven(10), 11),
			ActJudge, func(t *testing.T, a Action) { want(t, a.Obs.Delivery, "f") }},
		{"a field edit comes before an event of its own second", in(known("Backlog", "Backlog", 1),
			[]Observation{event, edit("f", "", "S", 5)}, unknown, proven(10), 11),
			ActJudge, func(t *testing.T, a Action) { want(t, a.Obs.Delivery, "f") }},
		{"an event made before a field edit comes first", in(known("Backlog", "Backlog", 1),
			[]Observation{edit("f", "", "S", 6), event}, unknown, proven(12), 13),
			ActJudge, func(t *testing.T, a Action) { want(t, a.Obs.Delivery, "e") }},
		{"a card report covered while a later field edit is not is judged", in(known("Backlog", "Backlog", 1),
			[]Observation{obs("c", "Backlog", "Research Needed", "alice", 4), edit("f", "", "S", 9)}, unknown, proven(10), 11),
			ActJudge, func(t *testing.T, a Action) { want(t, a.Obs.Delivery, "c") }},
		{"a field edit not covered yet holds the history's end", in(known("Backlog", "Backlog", 1),
			[]Observation{edit("f", "", "S", 9)}, BoardValue{State: "Backlog"}, proven(10), 11), ActWait, nil},
		{"edits of one field in one second follow the value the history holds", in(withFields(known("Backlog", "Backlog", 1), "S"),
			[]Observation{edit("f1", "M", "L", 5), edit("f2", "S", "M", 5)}, unknown, proven(10), 11),
			ActJudge, func(t *testing.T, a Action) { want(t, a.Obs.Delivery, "f2") }},
		{"edits of one field in one second are taken in the order that chains from the value held", in(withFields(known("Backlog", "Backlog", 1), "S"),
			[]Observation{edit("f2", "M", "S", 5), edit("f3", "S", "", 5), edit("f1", "S", "M", 5)}, unknown, proven(10), 11),
			ActJudge, func(t *testing.T, a Action) { want(t, a.Obs.Delivery, "f1") }},
		{"edits of one field in one second, the value not held: in arrival order", in(known("Backlog", "Backlog", 1),
			[]Observation{edit("f1", "M", "L", 5), edit("f2", "S", "M", 5)}, unknown, proven(10), 11),
			ActJudge, func(t *testing.T, a Action) { want(t, a.Obs.Delivery, "f1") }},
		{"a field edit leaving from the value a write of ours wrote over is no race", in(
			History{Known: true, Legal: "Backlog", Observed: "Backlog", ObservedAt: sec(5), Writes: []Write{{Over: "", To: "Backlog", At: sec(1)}}},
			[]Observation{edit("f", "", "S", 5)}, unknown, proven(10), 11),
			ActJudge, func(t *testing.T, a Action) { want(t, a.Obs.Delivery, "f") }},
		{"someone's change from the value a write of ours wrote over, made by its second, raced it", in(
			History{Known: true, Legal: "Backlog", Observed: "Backlog", ObservedAt: sec(5), Writes: []Write{{Over: "Done", To: "Backlog", At: sec(1)}}},
			[]Observation{obs("x", "Done", "In Progress", "bob", 5)}, unknown, proven(10), 11),
			ActRaced, func(t *testing.T, a Action) { want(t, a.Obs.Delivery, "x") }},
		{"… not when the write's report came back as written", in(
			History{Known: true, Legal: "Backlog", Observed: "Backlog", ObservedAt: sec(5), Writes: []Write{{Over: "Done", To: "Backlog", At: sec(1), Reported: true}}},
			[]Observation{obs("x", "Done", "In Progress", "bob", 5)}, unknown, proven(10), 11),
			ActJudgeUnobserved, nil},
		{"our write's report leaving from another value than the one it wrote over: raced", in(
			History{Known: true, Legal: "Backlog", Observed: "Backlog", ObservedAt: sec(5), Writes: []Write{{Over: "Done", To: "Backlog", At: sec(1)}}},
			[]Observation{own5("o", "In Progress", "Backlog")}, unknown, proven(10), 11),
			ActRaced, func(t *testing.T, a Action) { want(t, a.Obs.Delivery, "o") }},
		{"someone's change to the very value a write of ours set, with no report of the write: it came first", in(
			History{Known: true, Legal: "Human Needed", Observed: "Human Needed", ObservedAt: sec(5), Writes: []Write{{Over: "In Review", To: "Human Needed", At: sec(1)}}},
			[]Observation{obs("x", "In Review", "Human Needed", "bob", 5), obs("y", "Human Needed", "In Review", "agent-1", 5)}, unknown, proven(10), 11),
			ActRaced, func(t *testing.T, a Action) { want(t, a.Obs.Delivery, "x") }},
		{"an item never seen with only a field edit is adopted first", in(History{}, []Observation{edit("f", "", "S", 5)}, BoardValue{State: "Backlog"}, proven(10), 11),
			ActAdopt, nil},
		// Lifecycle events (a close, a reopen): their actor's move, placed by time alone.
		{"a lifecycle event is judged once the proof covers it", in(known("Backlog", "Backlog", 1), []Observation{event}, unknown, proven(10), 11),
			ActJudge, func(t *testing.T, a Action) { want(t, a.Obs.Delivery, "e") }},
		{"a lifecycle event waits for the proof", in(known("Backlog", "Backlog", 1), []Observation{event}, unknown, proven(8), 9), ActWait, nil},
		{"a card report made before a lifecycle event is judged first", in(known("Backlog", "Backlog", 1),
			[]Observation{event, obs("c", "Backlog", "Research Needed", "alice", 4)}, unknown, proven(10), 11),
			ActJudge, func(t *testing.T, a Action) { want(t, a.Obs.Delivery, "c") }},
		{"a card report made after a lifecycle event comes after it", in(known("Backlog", "Backlog", 1),
			[]Observation{obs("c", "Backlog", "Research Needed", "alice", 6), event}, unknown, proven(12), 13),
			ActJudge, func(t *testing.T, a Action) { want(t, a.Obs.Delivery, "e") }},
		{"a card report of the event's second comes before it", in(known("Backlog", "Backlog", 1),
			[]Observation{event, obs("c", "Backlog", "Research Needed", "alice", 5)}, unknown, proven(12), 13),
			ActJudge, func(t *testing.T, a Action) { want(t, a.Obs.Delivery, "c") }},
		{"a card report covered while the event is not is judged", in(known("Backlog", "Backlog", 1),
			[]Observation{obs("c", "Backlog", "Research Needed", "alice", 4), eventAt(9)}, unknown, proven(10), 11),
			ActJudge, func(t *testing.T, a Action) { want(t, a.Obs.Delivery, "c") }},
		{"a lifecycle event the proof does not cover yet waits", in(known("Backlog", "Backlog", 1),
			[]Observation{eventAt(9)}, unknown, proven(10), 11), ActWait, nil},
		{"our own write made after an unjudged event waits for it", in(known("Backlog", "Backlog", 1),
			[]Observation{eventAt(9), {Delivery: "own", FromKnown: true, From: "Backlog", To: "Done", Actor: "ralph-gate[bot]", At: sec(10), Received: sec(10), Own: true}},
			unknown, proven(10), 11), ActWait, nil},
		{"a close and a reopen of one second: the one that leaves the issue as it is now comes last", in(known("Backlog", "Backlog", 1),
			[]Observation{closing, reopening}, BoardValue{State: "Backlog", Closed: false}, proven(10), 11),
			ActJudge, func(t *testing.T, a Action) { want(t, a.Obs.Delivery, "close") }},
		{"a reopen and a close of one second, the issue closed now: the close last", in(known("Backlog", "Backlog", 1),
			[]Observation{closing, reopening}, BoardValue{State: "Backlog", Closed: true}, proven(10), 11),
			ActJudge, func(t *testing.T, a Action) { want(t, a.Obs.Delivery, "reopen") }},
		{"events of one second before the board is read: in arrival order", in(known("Backlog", "Backlog", 1),
			[]Observation{closing, reopening}, unknown, proven(10), 11),
			ActJudge, func(t *testing.T, a Action) { want(t, a.Obs.Delivery, "reopen") }},
		{"a close and a merge of one second: the merge first, whatever arrived first (the merge closed the issue)", in(known("Backlog", "Backlog", 1),
			[]Observation{closing, {Delivery: "merge", To: "In Review", Actor: "alice", At: sec(5), Received: sec(6), Event: true, Closes: true, Merges: true}},
			BoardValue{State: "Backlog", Closed: true}, proven(10), 11),
			ActJudge, func(t *testing.T, a Action) { want(t, a.Obs.Delivery, "merge") }},
		{"… a close of an earlier second still comes before a merge", in(known("Backlog", "Backlog", 1),
			[]Observation{{Delivery: "merge", To: "In Review", Actor: "alice", At: sec(6), Received: sec(6), Event: true, Closes: true, Merges: true}, closing},
			BoardValue{State: "Backlog", Closed: true}, proven(10), 11),
			ActJudge, func(t *testing.T, a Action) { want(t, a.Obs.Delivery, "close") }},
		{"first sight with only a lifecycle event reads the board", in(History{}, []Observation{event}, unknown, proven(10), 11), ActRead, nil},
		// First sight.
		{"first sight by the reconciler reads the board", in(History{}, nil, unknown, proven(0), 6), ActRead, nil},
		{"first sight by the reconciler adopts the board", in(History{}, nil, BoardValue{State: "In Progress", UpdatedAt: sec(2)}, proven(0), 6),
			ActAdopt, func(t *testing.T, a Action) { want(t, a.To, "In Progress") }},
		{"first sight of a report waits for the proof", in(History{}, []Observation{obs("d", "Backlog", "Research Needed", "agent-1", 5)}, unknown, proven(8), 9),
			ActWait, nil},
		{"first sight adopts the value before the reports' chain, whatever their order", in(History{},
			[]Observation{obs("d2", "Research in Progress", "Ready for Plan", "agent-1", 5), obs("d1", "Research Needed", "Research in Progress", "agent-1", 5)},
			unknown, proven(10), 11),
			ActAdopt, func(t *testing.T, a Action) { want(t, a.To, "Research Needed") }},
		{"first sight without a previous value adopts the board", in(History{}, []Observation{noFrom},
			BoardValue{State: "Ready for Plan", UpdatedAt: sec(5)}, proven(10), 11),
			ActAdopt, func(t *testing.T, a Action) { want(t, a.To, "Ready for Plan"); wantTime(t, a.At, sec(5)) }},
		// Duplicates are dropped by the store (one record per delivery); our own writes here.
		{"our own write coming back, already recorded, is ignored", in(known("Research Needed", "Research Needed", 1), []Observation{own}, unknown, proven(10), 11),
			ActIgnore, func(t *testing.T, a Action) { want(t, a.Why, "our own write") }},
		{"our own write to the value the record happens to hold, made after unjudged reports, comes after them", in(known("Ready for Plan", "Ready for Plan", 1), []Observation{
			{Delivery: "own", FromKnown: true, From: "Research Needed", To: "Ready for Plan", Actor: "ralph-gate[bot]", At: sec(7), Received: sec(7), Own: true},
			obs("d1", "Ready for Plan", "Human Needed", "alice", 5), obs("d2", "Human Needed", "Research Needed", "agent-2", 6)}, unknown, proven(12), 13),
			ActJudge, func(t *testing.T, a Action) { want(t, a.Obs.Delivery, "d1") }},
		{"two writes of ours in a row coming back after the second was recorded: the first is held too", in(known("Research in Progress", "Research in Progress", 1), []Observation{
			{Delivery: "own2", FromKnown: true, From: "Research Needed", To: "Research in Progress", Actor: "ralph-gate[bot]", At: sec(6), Received: sec(6), Own: true},
			{Delivery: "own1", FromKnown: true, From: "Backlog", To: "Research Needed", Actor: "ralph-gate[bot]", At: sec(6), Received: sec(6), Own: true}},
			unknown, proven(0), 7),
			ActIgnore, func(t *testing.T, a Action) { want(t, a.Why, "our own write") }},
		{"… the second too, once the first is taken in", in(known("Research in Progress", "Research in Progress", 1), []Observation{
			{Delivery: "own2", FromKnown: true, From: "Research Needed", To: "Research in Progress", Actor: "ralph-gate[bot]", At: sec(6), Received: sec(6), Own: true}},
			unknown, proven(0), 7),
			ActIgnore, func(t *testing.T, a Action) { want(t, a.Why, "our own write") }},
		{"a journaled write of ours coming back before its completion was recorded completes it", in(History{Known: true, Legal: "Research Needed",
			Observed: "Backlog", ObservedAt: sec(1), RevertPending: "Research Needed"}, []Observation{own}, unknown, proven(0), 6),
			ActSync, func(t *testing.T, a Action) { want(t, a.To, "Research Needed"); want(t, a.Obs.Delivery, "d") }},
		{"our own write that its record missed waits for its place in the history", in(known("Backlog", "Backlog", 1), []Observation{own}, unknown, proven(0), 6),
			ActWait, nil},
		{"… and is then taken as the app's legal move", in(known("Backlog", "Backlog", 1), []Observation{own}, unknown, proven(10), 11),
			ActSync, func(t *testing.T, a Action) { want(t, a.To, "Research Needed") }},
		{"our own write made while earlier reports were unjudged comes after them", in(known("Backlog", "Backlog", 1), []Observation{
			{Delivery: "own", FromKnown: true, From: "Research Needed", To: "Ready for Plan", Actor: "ralph-gate[bot]", At: sec(6), Received: sec(6), Own: true},
			obs("d", "Backlog", "Research Needed", "alice", 5)}, unknown, proven(11), 12),
			ActJudge, func(t *testing.T, a Action) { want(t, a.Obs.Delivery, "d") }},
		{"our own write the record does not hold, after a change nobody reported: that change is judged first", in(known("Research Needed", "Research Needed", 1), []Observation{
			{Delivery: "own", FromKnown: true, From: "Ready for Plan", To: "In Progress", Actor: "ralph-gate[bot]", At: sec(6), Received: sec(6), Own: true}},
			unknown, proven(11), 12),
			ActJudgeUnobserved, func(t *testing.T, a Action) { want(t, a.From, "Research Needed"); want(t, a.To, "Ready for Plan") }},
		// Certainty: a report is judged once a proof reaches the window past it.
		{"a report not yet covered by a proof waits, without a sweep inside the window", in(known("Backlog", "Backlog", 1),
			[]Observation{obs("d", "Backlog", "Research Needed", "agent-1", 5)}, unknown, proven(4), 6),
			ActWait, func(t *testing.T, a Action) {
				wantBool(t, a.Sweep, false)
				wantTime(t, a.Until, sec(11))
				wantTime(t, a.Due, sec(11)) // the proof it waits for: its second + 1 s + the window
			}},
		{"past the window it asks for a sweep", in(known("Backlog", "Backlog", 1),
			[]Observation{obs("d", "Backlog", "Research Needed", "agent-1", 5)}, unknown, proven(4), 10),
			ActWait, func(t *testing.T, a Action) { wantBool(t, a.Sweep, true); wantTime(t, a.Due, sec(11)) }},
		{"a covered report is judged from the value it left", in(known("Backlog", "Backlog", 1),
			[]Observation{obs("d", "Backlog", "Research Needed", "agent-1", 5)}, unknown, proven(10), 11),
			ActJudge, func(t *testing.T, a Action) { want(t, a.From, "Backlog"); want(t, a.Obs.Delivery, "d") }},
		{"a proof that does not reach back to the item's history covers nothing", in(known("Backlog", "Backlog", 1),
			[]Observation{obs("d", "Backlog", "Research Needed", "agent-1", 5)}, unknown,
			SweepProof{Available: true, Since: sec(3), Until: sec(20)}, 21),
			ActWait, nil},
		{"without a sweeper a report waits for no proof", SequenceInput{History: known("Backlog", "Backlog", 1),
			Pending: []Observation{obs("d", "Backlog", "Research Needed", "agent-1", 5)}, Board: unknown, Now: sec(8), Window: window},
			ActWait, func(t *testing.T, a Action) { wantTime(t, a.Until, sec(11)); wantTime(t, a.Due, time.Time{}) }},
		{"without a sweeper a report is judged once it is a window old", SequenceInput{History: known("Backlog", "Backlog", 1),
			Pending: []Observation{obs("d", "Backlog", "Research Needed", "agent-1", 5)}, Board: unknown, Now: sec(11), Window: window},
			ActJudge, nil},
		{"a report past the hold is judged without proof", in(known("Backlog", "Backlog", 1),
			[]Observation{obs("d", "Backlog", "Research Needed", "agent-1", 5)}, unknown, SweepProof{Available: true}, 126),
			ActJudge, nil},
		{"a report without a previous value follows by the clock", in(known("Backlog", "Backlog", 1), []Observation{noFrom}, unknown, proven(10), 11),
			ActJudge, nil},
		// Order.
		{"reports delivered in reverse order are judged in history order", in(known("Backlog", "Backlog", 1), []Observation{
			obs("d2", "Research Needed", "Ready for Plan", "alice", 5), obs("d1", "Backlog", "Research Needed", "alice", 5)}, unknown, proven(10), 11),
			ActJudge, func(t *testing.T, a Action) { want(t, a.Obs.Delivery, "d1") }},
		{"a loop reported in one second is walked whole (X→Y→X→Z)", in(known("Backlog", "Backlog", 1), []Observation{
			obs("d3", "Backlog", "Ready for Plan", "alice", 5), obs("d2", "Research Needed", "Backlog", "alice", 5),
			obs("d1", "Backlog", "Research Needed", "alice", 5)}, unknown, proven(10), 11),
			ActJudge, func(t *testing.T, a Action) { want(t, a.Obs.Delivery, "d1") }},
		{"a report older than the judged history that does not follow it is stale", in(known("Ready for Plan", "Ready for Plan", 9),
			[]Observation{late}, unknown, proven(20), 100),
			ActIgnore, func(t *testing.T, a Action) { wantPrefix(t, a.Why, "stale") }},
		// Gaps the proof shows will never be filled.
		{"a covered report that follows nothing: the unreported step before it is judged first", in(known("Research Needed", "Research Needed", 1),
			[]Observation{obs("d", "Research in Progress", "Ready for Plan", "agent-2", 5)}, unknown, proven(10), 11),
			ActJudgeUnobserved, func(t *testing.T, a Action) {
				want(t, a.From, "Research Needed")
				want(t, a.To, "Research in Progress")
				wantTime(t, a.At, sec(5))
			}},
		// The board.
		{"everything judged: read the board", in(known("Backlog", "In Progress", 5), nil, unknown, proven(10), 11), ActRead, nil},
		{"the board still shows the refused value: revert", in(known("Backlog", "In Progress", 5), nil,
			BoardValue{State: "In Progress", UpdatedAt: sec(5)}, proven(10), 11),
			ActRevert, func(t *testing.T, a Action) { want(t, a.To, "Backlog") }},
		{"a close or reopen of the issue since, not reported yet: no write before its report", in(known("Backlog", "In Progress", 5), nil,
			BoardValue{State: "In Progress", UpdatedAt: sec(5), IssueEventAt: sec(8)}, proven(10), 11),
			ActWait, func(t *testing.T, a Action) { wantTime(t, a.Due, sec(8).Add(time.Second+window)) }},
		{"… once no report of it can be missing, the write is made", in(known("Backlog", "In Progress", 5), nil,
			BoardValue{State: "In Progress", UpdatedAt: sec(5), IssueEventAt: sec(8)}, proven(13), 14),
			ActRevert, func(t *testing.T, a Action) { want(t, a.To, "Backlog") }},
		{"… and with no proof, once it is older than the hold", in(known("Backlog", "In Progress", 5), nil,
			BoardValue{State: "In Progress", UpdatedAt: sec(5), IssueEventAt: sec(8)}, proven(10), 8+121),
			ActRevert, func(t *testing.T, a Action) { want(t, a.To, "Backlog") }},
		{"in sync", in(known("Backlog", "Backlog", 5), nil, BoardValue{State: "Backlog"}, proven(10), 11), ActDone, nil},
		{"in sync whatever the issue's timeline says", in(known("Backlog", "Backlog", 5), nil, BoardValue{State: "Backlog", IssueEventAt: sec(8)}, proven(10), 11), ActDone, nil},
		{"the board shows the value of an interrupted revert: the report of the change tells whose it was", in(
			History{Known: true, Legal: "Backlog", Observed: "In Progress", ObservedAt: sec(5), RevertPending: "Backlog"}, nil,
			BoardValue{State: "Backlog", UpdatedAt: sec(6)}, proven(8), 9),
			ActWait, nil},
		{"… and once no report can come, it was the revert", in(
			History{Known: true, Legal: "Backlog", Observed: "In Progress", ObservedAt: sec(5), RevertPending: "Backlog"}, nil,
			BoardValue{State: "Backlog", UpdatedAt: sec(6)}, proven(12), 13),
			ActSync, nil},
		// Reports without a previous value (GitHub marks changes.field_value.from optional):
		// such a report may follow any change of its second or earlier; the reports after it,
		// later ones not covered yet, and the board's value place it.
		{"a report without a previous value of the history's own second follows it", in(known("Ready for Plan", "Ready for Plan", 5),
			[]Observation{{Delivery: "w", To: "Plan in Progress", Actor: "agent-1", At: sec(5), Received: sec(5)}}, unknown, proven(12), 13),
			ActJudge, func(t *testing.T, a Action) { want(t, a.Obs.Delivery, "w") }},
		{"one second's reports, one without a previous value: of the orders that use them all, the one ending where the board shows", in(known("Backlog", "Backlog", 1),
			[]Observation{obs("b", "Backlog", "Done", "alice", 5), {Delivery: "w", To: "Backlog", Actor: "bob", At: sec(5), Received: sec(5)}, obs("a", "Backlog", "Research Needed", "alice", 5)},
			BoardValue{State: "Done", UpdatedAt: sec(5)}, proven(12), 13),
			ActJudge, func(t *testing.T, a Action) { want(t, a.Obs.Delivery, "a") }},
		{"… the board showing the other end, the other order", in(known("Backlog", "Backlog", 1),
			[]Observation{obs("a", "Backlog", "Research Needed", "alice", 5), {Delivery: "w", To: "Backlog", Actor: "bob", At: sec(5), Received: sec(5)}, obs("b", "Backlog", "Done", "alice", 5)},
			BoardValue{State: "Research Needed", UpdatedAt: sec(5)}, proven(12), 13),
			ActJudge, func(t *testing.T, a Action) { want(t, a.Obs.Delivery, "b") }},
		{"… the board changed since (a change not reported yet): its report tells their order, and is waited for", in(known("Backlog", "Backlog", 1),
			[]Observation{obs("a", "Backlog", "Research Needed", "alice", 5), {Delivery: "w", To: "Backlog", Actor: "bob", At: sec(5), Received: sec(5)}, obs("b", "Backlog", "Done", "alice", 5)},
			BoardValue{State: "Research Needed", UpdatedAt: sec(8)}, proven(12), 13),
			ActWait, func(t *testing.T, a Action) {
				if !a.Due.Equal(sec(8).Add(time.Second + window)) {
					t.Errorf("due %s, want the proof past the board's change", a.Due)
				}
			}},
		{"… the board not read yet: read first", in(known("Backlog", "Backlog", 1),
			[]Observation{obs("a", "Backlog", "Research Needed", "alice", 5), {Delivery: "w", To: "Backlog", Actor: "bob", At: sec(5), Received: sec(5)}, obs("b", "Backlog", "Done", "alice", 5)},
			unknown, proven(12), 13),
			ActRead, nil},
		{"… once no report of that change can come, nothing tells their order: the first that arrived", in(known("Backlog", "Backlog", 1),
			[]Observation{obs("a", "Backlog", "Research Needed", "alice", 5), {Delivery: "w", To: "Backlog", Actor: "bob", At: sec(5), Received: sec(5)}, obs("b", "Backlog", "Done", "alice", 5)},
			BoardValue{State: "Research Needed", UpdatedAt: sec(8)}, proven(30), 31),
			ActJudge, func(t *testing.T, a Action) { want(t, a.Obs.Delivery, "a") }},
		// Second 5: Canceled → Backlog, one without a previous value to Canceled, Canceled →
		// Done, in either order; second 6 is a circuit (Done → Backlog → Done, or Backlog →
		// Done → Backlog): the board, last changed in second 6, shows where it ended, so where
		// it started, and so where second 5 ended.
		{"… the next second a circuit: it starts where the board shows it ended", in(known("Canceled", "Canceled", 5),
			[]Observation{{Delivery: "w", To: "Canceled", Actor: "agent-3", At: sec(5), Received: sec(5).Add(200 * time.Millisecond)},
				received(obs("c", "Canceled", "Done", "agent-2", 5), 5300), obs("d", "Done", "Backlog", "bob", 6), obs("e", "Backlog", "Done", "agent-1", 6),
				received(obs("b", "Canceled", "Backlog", "agent-1", 5), 6800)},
			BoardValue{State: "Done", UpdatedAt: sec(6)}, proven(12), 13),
			ActJudge, func(t *testing.T, a Action) { want(t, a.Obs.Delivery, "b") }},
		// Nine reports of one second, past the exhaustive search: the others make no trail by
		// themselves (Backlog is left and never entered), the one without a previous value
		// enters it from where the trail needs it.
		{"more reports of one second than are searched: one without a previous value placed where the others need it", in(known("Ready for Plan", "Ready for Plan", 4),
			[]Observation{{Delivery: "w", To: "Backlog", Actor: "owner", At: sec(4), Received: sec(4)}, obs("a", "Backlog", "Ready for Plan", "agent-3", 4),
				obs("b", "Ready for Plan", "Plan in Progress", "bob", 4), obs("c", "Plan in Progress", "In Progress", "alice", 4),
				obs("d", "In Progress", "Human Needed", "alice", 4), obs("e", "Human Needed", "Research Needed", "bob", 4),
				obs("f", "Research Needed", "Research in Progress", "agent-1", 4), obs("g", "Research in Progress", "Human Needed", "agent-1", 4),
				obs("h", "Human Needed", "In Progress", "alice", 4)},
			BoardValue{State: "In Progress", UpdatedAt: sec(4)}, proven(12), 13),
			ActJudge, func(t *testing.T, a Action) { want(t, a.Obs.Delivery, "w") }},
		{"… a later report not covered yet: waited for until its second is (another of that second may come late and change where it started)", in(known("Backlog", "Backlog", 1),
			[]Observation{obs("b", "Backlog", "Canceled", "alice", 5), {Delivery: "w", To: "Backlog", Actor: "bob", At: sec(5), Received: sec(5)},
				obs("a", "Backlog", "Research Needed", "alice", 5), obs("c", "Canceled", "Backlog", "alice", 9)},
			unknown, proven(12), 13),
			ActWait, func(t *testing.T, a Action) {
				if !a.Due.Equal(sec(9).Add(time.Second + window)) {
					t.Errorf("due %s, want the proof past the next second", a.Due)
				}
			}},
		{"… once its second is covered, the later report that follows one order only decides it", in(known("Backlog", "Backlog", 1),
			[]Observation{obs("b", "Backlog", "Canceled", "alice", 5), {Delivery: "w", To: "Backlog", Actor: "bob", At: sec(5), Received: sec(5)},
				obs("a", "Backlog", "Research Needed", "alice", 5), obs("c", "Canceled", "Backlog", "alice", 9)},
			unknown, proven(16), 17),
			ActJudge, func(t *testing.T, a Action) { want(t, a.Obs.Delivery, "a") }},
		// A journaled revert landed when its own report comes back: GitHub reports every write
		// that changes the card, and the proof says every report made by then has come. Others'
		// reports that follow on from its value do not say it landed (nothing is guessed).
		{"a report leaving the value of a journaled revert, the revert's own report missing, is no landing of it", in(
			History{Known: true, Legal: "Backlog", Observed: "In Progress", ObservedAt: sec(5), RevertPending: "Backlog"},
			[]Observation{obs("d", "Backlog", "Research Needed", "alice", 7)}, unknown, proven(12), 13),
			ActJudgeUnobserved, func(t *testing.T, a Action) { want(t, a.From+" → "+a.To, "In Progress → Backlog") }},
		{"… with its own report, the revert landed", in(
			History{Known: true, Legal: "Backlog", Observed: "In Progress", ObservedAt: sec(5), RevertPending: "Backlog"},
			[]Observation{obs("d", "Backlog", "Research Needed", "alice", 7),
				{Delivery: "own", FromKnown: true, From: "In Progress", To: "Backlog", Actor: "ralph-gate[bot]", At: sec(6), Received: sec(6), Own: true}},
			unknown, proven(12), 13),
			ActSync, func(t *testing.T, a Action) { want(t, a.Obs.Delivery, "own") }},
		{"a report leaving that value after one that follows the history is not taken for the revert", in(
			History{Known: true, Legal: "Done", Observed: "Ready for Plan", ObservedAt: sec(5), RevertPending: "Done"},
			[]Observation{obs("d2", "Done", "Research Needed", "alice", 7), obs("d1", "Ready for Plan", "Done", "agent-2", 7)}, unknown, proven(12), 13),
			ActJudge, func(t *testing.T, a Action) { want(t, a.Obs.Delivery, "d1") }},
		{"a person's move to the value of an interrupted revert, a second later, is no landing of it", in(
			History{Known: true, Legal: "Human Needed", Observed: "Research in Progress", ObservedAt: sec(0), RevertPending: "Human Needed"},
			[]Observation{obs("d6", "Research in Progress", "Human Needed", "alice", 3), obs("d7", "Human Needed", "In Review", "agent-2", 4),
				obs("d8", "In Review", "Human Needed", "agent-3", 4)}, unknown, proven(12), 13),
			ActJudge, func(t *testing.T, a Action) { want(t, a.Obs.Delivery, "d6") }},
		// Provisional reverts (a refused move set back before its proof): its own report is
		// taken in as the board's value only, once the move it set back is judged.
		{"a provisional revert's report waits while the move it set back does", in(
			History{Known: true, Legal: "Backlog", Observed: "Backlog", ObservedAt: sec(1), Provisional: "Backlog", ProvisionalOver: "In Progress", ProvisionalAt: sec(5)},
			[]Observation{obs("d", "Backlog", "In Progress", "agent-1", 5), provisionalOwn}, unknown, proven(8), 9),
			ActWait, nil},
		{"… the move is judged first", in(
			History{Known: true, Legal: "Backlog", Observed: "Backlog", ObservedAt: sec(1), Provisional: "Backlog", ProvisionalOver: "In Progress", ProvisionalAt: sec(5)},
			[]Observation{provisionalOwn, obs("d", "Backlog", "In Progress", "agent-1", 5)}, unknown, proven(12), 13),
			ActJudge, func(t *testing.T, a Action) { want(t, a.Obs.Delivery, "d") }},
		{"… then the revert's report is the board's value, not a legal step", in(
			History{Known: true, Legal: "Backlog", Observed: "In Progress", ObservedAt: sec(5), Provisional: "Backlog", ProvisionalOver: "In Progress", ProvisionalAt: sec(5)},
			[]Observation{provisionalOwn}, unknown, proven(12), 13),
			ActSync, func(t *testing.T, a Action) {
				if !a.Provisional || a.To != "Backlog" {
					t.Errorf("want a provisional sync to Backlog, got %+v", a)
				}
			}},
		{"… after the moves of its second, in the order they chain", in(
			History{Known: true, Legal: "Backlog", Observed: "In Progress", ObservedAt: sec(5), Provisional: "Backlog", ProvisionalOver: "In Progress", ProvisionalAt: sec(5)},
			[]Observation{provisionalOwn, obs("x", "In Progress", "Canceled", "alice", 5), obs("y", "Canceled", "In Progress", "alice", 5)}, unknown, proven(12), 13),
			ActJudge, func(t *testing.T, a Action) { want(t, a.Obs.Delivery, "x") }},
		{"… or, when no report of it comes, the board showing it", in(
			History{Known: true, Legal: "Backlog", Observed: "In Progress", ObservedAt: sec(5), Provisional: "Backlog", ProvisionalOver: "In Progress", ProvisionalAt: sec(5)},
			nil, BoardValue{State: "Backlog", UpdatedAt: sec(5)}, proven(12), 13),
			ActSync, func(t *testing.T, a Action) {
				if !a.Provisional {
					t.Errorf("want a provisional sync, got %+v", a)
				}
			}},
		{"an older write of ours with the same values is no provisional revert", in(
			History{Known: true, Legal: "Backlog", Observed: "In Progress", ObservedAt: sec(5), Provisional: "Backlog", ProvisionalOver: "In Progress", ProvisionalAt: sec(9)},
			[]Observation{provisionalOwn}, unknown, proven(12), 13),
			ActIgnore, nil},
		{"a newer move back to the refused value after an interrupted revert is not reverted blindly", in(
			History{Known: true, Legal: "Human Needed", Observed: "Plan in Progress", ObservedAt: sec(5), RevertPending: "Human Needed"}, nil,
			BoardValue{State: "Plan in Progress", UpdatedAt: sec(7)}, proven(8), 9),
			ActWait, nil},
		{"the refused value set again after it was refused is not reverted before its report", in(known("Backlog", "In Progress", 5), nil,
			BoardValue{State: "In Progress", UpdatedAt: sec(7)}, proven(8), 9),
			ActWait, nil},
		{"the board back in the legal state by someone's unreported move waits for its report", in(known("Backlog", "In Progress", 5), nil,
			BoardValue{State: "Backlog", UpdatedAt: sec(6)}, proven(8), 9),
			ActWait, func(t *testing.T, a Action) { wantTime(t, a.GapSince, sec(10)) }},
		{"a value on the board no report explains is judged once the proof covers it", in(known("Backlog", "Backlog", 5), nil,
			BoardValue{State: "In Review", UpdatedAt: sec(20)}, proven(26), 30),
			ActJudgeUnobserved, func(t *testing.T, a Action) { want(t, a.To, "In Review"); wantTime(t, a.At, sec(20)) }},
		{"a value with no time from GitHub is dated when it was first noticed", in(
			History{Known: true, Legal: "Backlog", Observed: "Backlog", ObservedAt: sec(5), GapSince: sec(6)}, nil,
			BoardValue{State: "In Review"}, proven(12), 13),
			ActJudgeUnobserved, func(t *testing.T, a Action) { wantTime(t, a.At, sec(6)) }},
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
		if a.Kind == ActRead {
			t.Fatal("the board is known")
		}
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

// TestCovers: a move the app makes for its actor at `at` waits for the proof a report of that
// time waits for.
func TestCovers(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	sec := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Second) }
	const window = 5 * time.Second
	proof := func(until int, full bool) SweepProof {
		return SweepProof{Available: true, Since: sec(-100), Until: sec(until), Full: full}
	}
	tests := []struct {
		name     string
		h        History
		sweep    SweepProof
		now      int
		at, recv int
		want     bool
	}{
		{"a proof reaching window past the move covers it", History{Known: true, ObservedAt: sec(1)}, proof(11, true), 12, 5, 5, true},
		{"a proof short of window past the move does not", History{Known: true, ObservedAt: sec(1)}, proof(10, true), 12, 5, 5, false},
		{"no proof yet", History{Known: true}, SweepProof{Available: true}, 12, 5, 5, false},
		{"a proof not reaching back to the item's history covers nothing", History{Known: true, ObservedAt: sec(-200)}, proof(20, false), 21, 5, 5, false},
		{"a proof reaching back to it covers", History{Known: true, ObservedAt: sec(-50)}, proof(20, false), 21, 5, 5, true},
		{"without a sweeper: once window old", History{Known: true}, SweepProof{}, 11, 5, 5, true},
		{"without a sweeper: not before", History{Known: true}, SweepProof{}, 10, 5, 5, false},
		{"after the hold, judged all the same", History{Known: true}, SweepProof{Available: true}, 200, 5, 5, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := SequenceInput{History: tc.h, Sweep: tc.sweep, Now: sec(tc.now), Window: window, Hold: 2 * time.Minute}
			if got := in.Covers(sec(tc.at), sec(tc.recv)); got != tc.want {
				t.Errorf("Covers = %v, want %v", got, tc.want)
			}
		})
	}
}

// A report may be reverted provisionally only when nothing else of its item is waiting and
// the board shows it as the newest change.
func TestProvisional(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	h := History{Known: true, Legal: "Backlog", Observed: "Backlog", ObservedAt: t0}
	o := Observation{Delivery: "d", FromKnown: true, From: "Backlog", To: "In Progress", Actor: "agent-1", At: t0.Add(2 * time.Second)}
	board := BoardValue{State: "In Progress", UpdatedAt: o.At}
	with := func(edit func(*SequenceInput)) SequenceInput {
		in := SequenceInput{History: h, Pending: []Observation{o}, Board: board}
		edit(&in)
		return in
	}
	own, event, noFrom, other := o, o, o, o
	own.Own = true
	event.Event = true
	noFrom.FromKnown = false
	other.From = "Research Needed"
	tests := []struct {
		name string
		in   SequenceInput
		want bool
	}{
		{"the only report, from the legal value, shown on the board", with(func(*SequenceInput) {}), true},
		{"GitHub gave no change time", with(func(in *SequenceInput) { in.Board.UpdatedAt = time.Time{} }), true},
		{"never recorded", with(func(in *SequenceInput) { in.History.Known = false }), false},
		{"a refused value still on the board", with(func(in *SequenceInput) { in.History.Observed = "Done" }), false},
		{"a revert being written", with(func(in *SequenceInput) { in.History.RevertPending = "Backlog" }), false},
		{"a provisional revert already made", with(func(in *SequenceInput) { in.History.Provisional = "Backlog" }), false},
		{"another report waiting", with(func(in *SequenceInput) { in.Pending = append(in.Pending, other) }), false},
		{"our own write", with(func(in *SequenceInput) { in.Pending = []Observation{own} }), false},
		{"a close or reopen", with(func(in *SequenceInput) { in.Pending = []Observation{event} }), false},
		{"no previous value reported", with(func(in *SequenceInput) { in.Pending = []Observation{noFrom} }), false},
		{"from another value (a change before it unreported)", with(func(in *SequenceInput) { in.Pending = []Observation{other} }), false},
		{"older than the judged history", with(func(in *SequenceInput) { in.History.ObservedAt = t0.Add(5 * time.Second) }), false},
		{"of the second the judged history ends in", with(func(in *SequenceInput) { in.History.ObservedAt = o.At }), false},
		{"the board not read", with(func(in *SequenceInput) { in.Board = BoardValue{Unknown: true} }), false},
		{"the board shows another value", with(func(in *SequenceInput) { in.Board.State = "Done" }), false},
		{"the board changed in a later second", with(func(in *SequenceInput) { in.Board.UpdatedAt = o.At.Add(time.Second) }), false},
		{"the issue closed or reopened since", with(func(in *SequenceInput) { in.Board.IssueEventAt = o.At }), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Provisional(tt.in)
			if ok != tt.want || (ok && got.Delivery != "d") {
				t.Errorf("Provisional = %+v, %v; want %v", got, ok, tt.want)
			}
		})
	}
}

// secondStart reads where one second's reports may start from: the value they leave more often
// than they set, or any value of a circuit.
func TestSecondStart(t *testing.T) {
	at := time.Date(2026, 11, 1, 9, 0, 5, 0, time.UTC)
	o := func(from, to string, sec int) Observation {
		return Observation{FromKnown: from != "?", From: from, To: to, At: at.Add(time.Duration(sec) * time.Second)}
	}
	for _, tt := range []struct {
		name    string
		pending []Observation
		want    string // the values, joined by ","
	}{
		{"a path starts where it leaves once more than it sets", []Observation{o("C", "HN", 0), o("Done", "C", 0)}, "Done"},
		{"a circuit starts anywhere on it", []Observation{o("B", "C", 0), o("C", "B", 0)}, "B,C"},
		{"only the earliest second counts", []Observation{o("Done", "C", 0), o("X", "Y", 1)}, "Done"},
		{"no trail through them says nothing", []Observation{o("A", "B", 0), o("C", "D", 0)}, ""},
		{"reports without a previous value say nothing", []Observation{o("?", "B", 0)}, ""},
	} {
		if got := strings.Join(secondStart(tt.pending), ","); got != tt.want {
			t.Errorf("%s: secondStart = %q, want %q", tt.name, got, tt.want)
		}
	}
}
