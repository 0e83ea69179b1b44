package enforce

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/marker"
)

// Violation comments are coalesced per actor: GitHub notifies on a new comment, never on an
// edit, so another actor's violation gets a comment of its own, while one actor's violations
// within the window update their comment.
func TestViolationCommentsCoalescePerActor(t *testing.T) {
	type violation struct {
		actor string
		after time.Duration // since the previous violation
	}
	tests := []struct {
		name       string
		violations []violation
		adds       int
		updates    int
		markers    map[string][]int // actor -> the markers of each of their comments, oldest first
	}{
		{
			name:       "one actor within the window: one comment",
			violations: []violation{{"agent-1", 0}, {"agent-1", time.Minute}},
			adds:       1, updates: 1,
			markers: map[string][]int{"agent-1": {2}},
		},
		{
			name:       "another actor within the window: a comment of their own",
			violations: []violation{{"agent-1", 0}, {"agent-2", time.Minute}},
			adds:       2,
			markers:    map[string][]int{"agent-1": {1}, "agent-2": {1}},
		},
		{
			name: "interleaved actors each coalesce into their own comment",
			violations: []violation{{"agent-1", 0}, {"agent-2", time.Minute}, {"agent-1", time.Minute},
				{"alice", time.Minute}, {"agent-2", time.Minute}},
			adds: 3, updates: 2,
			markers: map[string][]int{"agent-1": {2}, "agent-2": {2}, "alice": {1}},
		},
		{
			name:       "one actor after the window: a new comment",
			violations: []violation{{"agent-1", 0}, {"agent-1", 11 * time.Minute}},
			adds:       2,
			markers:    map[string][]int{"agent-1": {1, 1}},
		},
		{
			name:       "another actor's violation does not restart the first one's window",
			violations: []violation{{"agent-1", 0}, {"agent-2", 6 * time.Minute}, {"agent-1", 6 * time.Minute}},
			adds:       3,
			markers:    map[string][]int{"agent-1": {1, 1}, "agent-2": {1}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, issueN("A", "Backlog", 1))
			for i, v := range tt.violations {
				h.now = h.now.Add(v.after + time.Second)
				// Backlog → In Review is no transition of the workflow, for anyone but bypass.
				if res := h.process(h.board.move("A", v.actor, "In Review", h.now)); res.Verdict != VerdictReverted {
					t.Fatalf("violation %d: %+v", i, res)
				}
			}
			if h.board.adds != tt.adds || h.board.updates != tt.updates {
				t.Errorf("%d comments added, %d updated; want %d and %d", h.board.adds, h.board.updates, tt.adds, tt.updates)
			}
			got := map[string][]int{}
			for n := 1; n <= h.board.adds; n++ { // in the order they were added
				body := h.board.comments["IC_I_A_"+string(rune('0'+n))]
				ms, err := marker.ParseTransitions(body)
				if err != nil || len(ms) == 0 {
					t.Fatalf("comment %d: %v\n%s", n, err, body)
				}
				actor := ms[0].Actor
				for _, m := range ms {
					if m.Actor != actor {
						t.Errorf("comment %d lists violations of %s and %s:\n%s", n, actor, m.Actor, body)
					}
				}
				if !strings.Contains(body, "`"+actor+"`") {
					t.Errorf("comment %d does not name %s:\n%s", n, actor, body)
				}
				got[actor] = append(got[actor], len(ms))
			}
			if len(got) != len(tt.markers) {
				t.Errorf("comments by actor %v, want %v", got, tt.markers)
			}
			for actor, want := range tt.markers {
				if !slices.Equal(got[actor], want) {
					t.Errorf("%s's comments list %v violations, want %v", actor, got[actor], want)
				}
				vc, err := h.st.GetActorViolationComment(bg, "acme/app", 1, actor)
				if err != nil || vc.Actor != actor || vc.NodeID == "" || vc.Count != want[len(want)-1] {
					t.Errorf("%s's record %+v %v", actor, vc, err)
				}
			}
		})
	}
}

// A comment recorded before comments were kept per actor (actor "") is never coalesced into;
// when the posting of the very violation being explained was interrupted, GitHub is asked
// first, so that it is never posted twice.
func TestCommentOfBeforeActorKeysIsSettledNotJoined(t *testing.T) {
	tests := []struct {
		name     string
		legacy   func(h *harness, ch Change) ViolationComment // the record left by an older build
		onGitHub bool                                         // the legacy comment is on GitHub
		adds     int
		lookups  int
	}{
		{
			name: "a posted comment within the window: the actor gets their own",
			legacy: func(h *harness, _ Change) ViolationComment {
				return ViolationComment{CommentID: 9, NodeID: "IC_old", Count: 1, UpdatedAt: h.now, Body: "an older build's comment"}
			},
			adds: 1,
		},
		{
			name: "an interrupted posting of this violation that reached GitHub: not posted again",
			legacy: func(h *harness, ch Change) ViolationComment {
				o := Observation{LegalFrom: "Backlog", To: ch.To, At: ch.At, Actor: ch.Actor, Rule: "transition", DeliveryID: ch.DeliveryID}
				return ViolationComment{Count: 1, UpdatedAt: h.now, Body: renderViolations([]violation{{marker: violationMarker(o), line: "x"}}, 1)}
			},
			onGitHub: true, lookups: 1,
		},
		{
			name: "an interrupted posting of this violation that never happened: posted once",
			legacy: func(h *harness, ch Change) ViolationComment {
				o := Observation{LegalFrom: "Backlog", To: ch.To, At: ch.At, Actor: ch.Actor, Rule: "transition", DeliveryID: ch.DeliveryID}
				return ViolationComment{Count: 1, UpdatedAt: h.now, Body: renderViolations([]violation{{marker: violationMarker(o), line: "x"}}, 1)}
			},
			adds: 1, lookups: 1,
		},
		{
			name: "an interrupted posting of another violation: not this actor's business",
			legacy: func(h *harness, _ Change) ViolationComment {
				o := Observation{LegalFrom: "Backlog", To: "Done", At: h.now, Actor: "agent-9", DeliveryID: "older"}
				return ViolationComment{Count: 1, UpdatedAt: h.now, Body: renderViolations([]violation{{marker: violationMarker(o), line: "x"}}, 1)}
			},
			adds: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, ch := illegalMove(t, nil)
			legacy := tt.legacy(h, ch)
			if err := h.st.PutViolationComment(bg, "acme/app", 1, legacy); err != nil {
				t.Fatal(err)
			}
			if tt.onGitHub {
				h.board.comments["IC_posted"] = legacy.Body
			}
			if res := h.process(ch); res.Verdict != VerdictReverted {
				t.Fatalf("%+v", res)
			}
			if h.board.adds != tt.adds || h.board.updates != 0 || h.board.calls["FindComment"] != tt.lookups {
				t.Errorf("%d added, %d updated, %d lookups; want %d added, none updated, %d lookups",
					h.board.adds, h.board.updates, h.board.calls["FindComment"], tt.adds, tt.lookups)
			}
			if o, _ := h.st.GetObservation(bg, ch.DeliveryID); !o.Explained {
				t.Errorf("not marked explained: %+v", o)
			}
			vc, err := h.st.GetActorViolationComment(bg, "acme/app", 1, "agent-1")
			switch {
			case tt.adds == 0 && !errors.Is(err, ErrNotFound):
				t.Errorf("agent-1's record %+v %v; want none (the older comment explains it)", vc, err)
			case tt.adds == 1 && (err != nil || vc.NodeID == "" || vc.Count != 1):
				t.Errorf("agent-1's record %+v %v", vc, err)
			}
			if old, _ := h.st.GetActorViolationComment(bg, "acme/app", 1, ""); tt.onGitHub && old.NodeID != "IC_posted" {
				t.Errorf("the older record was not settled: %+v", old)
			}
		})
	}
}
