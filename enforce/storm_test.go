package enforce

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/marker"
)

// A storm: one person moves twelve issues to a state the workflow refuses, at once. Every move
// is reverted at once; the first StormThreshold are explained on their issues as they come;
// the rest wait StormDelay, then one summary comment mentions the person and names each of
// their issues. Every refused move is explained exactly once, and nothing is posted twice when
// the summary's job runs again.
func TestStormIsExplainedInOneSummary(t *testing.T) {
	const n = 12
	h := stormHarness(t, n)
	var waiting []Change
	for i := 1; i <= n; i++ {
		h.now = h.now.Add(100 * time.Millisecond)
		ch := h.board.move(fmt.Sprintf("S%02d", i), "alice", "In Review", h.now)
		res := h.process(ch)
		switch {
		case i <= DefaultStormThreshold && res.Verdict != VerdictReverted:
			t.Fatalf("move %d: %+v, want reverted and explained at once", i, res)
		case i > DefaultStormThreshold && (res.Verdict != VerdictWait || res.RetryAfter <= 0 || res.RetryAfter > DefaultStormDelay):
			t.Fatalf("move %d: %+v, want reverted, its explanation waiting for the summary", i, res)
		}
		if got := h.boardItem(fmt.Sprintf("S%02d", i)).State; got != "Backlog" {
			t.Fatalf("move %d: the card shows %q, want it reverted at once", i, got)
		}
		if i > DefaultStormThreshold {
			waiting = append(waiting, ch)
		}
	}
	if h.board.adds != DefaultStormThreshold {
		t.Fatalf("%d comments before the summary is due, want %d (one per issue for the first)", h.board.adds, DefaultStormThreshold)
	}
	h.now = h.now.Add(DefaultStormDelay)
	for _, ch := range waiting { // the waiting jobs come back; the first writes the summary
		if res := h.process(ch); res.Verdict != VerdictReverted {
			t.Fatalf("job of %s after the delay: %+v, want its verdict, reverted", ch.ItemID, res)
		}
	}
	if h.board.adds != DefaultStormThreshold+1 {
		t.Fatalf("%d comments, want %d on their issues and one summary", h.board.adds, DefaultStormThreshold)
	}
	explainedOnce(t, h, n)
	var summary string
	for _, body := range h.commentBodies() {
		if strings.HasPrefix(body, SummaryMarker) {
			summary = body
		}
	}
	if !strings.Contains(summary, "@alice") {
		t.Errorf("the summary does not mention the person:\n%s", summary)
	}
	for i := DefaultStormThreshold + 1; i <= n; i++ {
		if !strings.Contains(summary, fmt.Sprintf("acme/app#%d:", i)) {
			t.Errorf("the summary does not name #%d:\n%s", i, summary)
		}
	}
	if waitingNow, err := h.st.UnexplainedBy(bg, "alice", "", 0); err != nil || len(waitingNow) != 0 {
		t.Fatalf("still unexplained: %+v %v", waitingNow, err)
	}
	// A job run again (a retry) posts nothing more.
	if res := h.process(waiting[0]); res.Verdict != VerdictReverted || h.board.adds != DefaultStormThreshold+1 {
		t.Fatalf("a repeated job: %+v, %d comments", res, h.board.adds)
	}
}

// With a decision page configured, each line of a violation comment and of a summary links to
// the decision on its change.
func TestViolationLinesLinkToTheirDecision(t *testing.T) {
	link := func(d string) string { return "https://gate.example/ui/decisions/by-delivery/" + d }
	h, ch := illegalMove(t, func(_ *harness, o *Options) { o.DecisionLink = link })
	if res := h.process(ch); res.Verdict != VerdictReverted {
		t.Fatalf("%+v", res)
	}
	bodies := h.commentBodies()
	if len(bodies) != 1 || !strings.Contains(bodies[0], "[Decision]("+link(ch.DeliveryID)+")") {
		t.Fatalf("the comment does not link to its decision:\n%v", bodies)
	}
	steps := []RefusedStep{{Observation: Observation{DeliveryID: "d-9", To: "Done", At: h.now}, Repo: "acme/app", IssueNumber: 9}}
	withLink := (&core{opts: Options{DecisionLink: link}}).withLink
	if body := renderSummary("alice", steps, withLink); !strings.Contains(body, "acme/app#9: ") || !strings.Contains(body, "[Decision]("+link("d-9")+")") {
		t.Fatalf("the summary line does not link to its decision:\n%s", body)
	}
}

// A step whose own comment was posted but not recorded (a crash between GitHub creating it and
// the store keeping its id), followed by a storm of its actor: the summary leaves that step out,
// and the step's job finds its comment on GitHub rather than explaining it again.
func TestInterruptedCommentIsNotSummarizedAgain(t *testing.T) {
	const n = 9
	h := stormHarness(t, n)
	const interrupted = DefaultStormThreshold // its comment is posted, its record lost
	puts := 0
	var changes []Change
	for i := 1; i <= n; i++ {
		h.now = h.now.Add(100 * time.Millisecond)
		ch := h.board.move(fmt.Sprintf("S%02d", i), "alice", "In Review", h.now)
		changes = append(changes, ch)
		if i == interrupted {
			h.st.fail = func(op string) error {
				if op == "put-comment" {
					if puts++; puts == 2 {
						return errInjected
					}
				}
				return nil
			}
			if _, err := h.svc.Enforcer.ProcessChange(bg, h.board, ch); !errors.Is(err, errInjected) {
				t.Fatalf("move %d: %v, want the injected failure after the comment was posted", i, err)
			}
			h.st.fail = nil
			continue
		}
		h.process(ch)
	}
	h.now = h.now.Add(DefaultStormDelay)
	for _, ch := range changes { // every job comes back; the interrupted one too
		if res := h.process(ch); res.Verdict != VerdictReverted {
			t.Fatalf("job of %s: %+v, want reverted", ch.ItemID, res)
		}
	}
	explainedOnce(t, h, n)
}

// stormHarness is a harness over n issues in Backlog, S01…, numbered 1….
func stormHarness(t *testing.T, n int) *harness {
	var items []Item
	for i := 1; i <= n; i++ {
		items = append(items, issueN(fmt.Sprintf("S%02d", i), "Backlog", i))
	}
	return newHarnessWith(t, nil, nil, items...)
}

// explainedOnce checks that the comments explain n refused moves, each exactly once.
func explainedOnce(t *testing.T, h *harness, n int) {
	t.Helper()
	explained := map[string]int{}
	for _, body := range h.commentBodies() {
		ms, err := marker.ParseTransitions(body)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			explained[m.Delivery]++
		}
	}
	if len(explained) != n {
		t.Errorf("%d refused moves explained, want %d: %v", len(explained), n, explained)
	}
	for d, c := range explained {
		if c != 1 {
			t.Errorf("%s explained %d times", d, c)
		}
	}
}

// A storm is one actor's on one project: the same person's refused moves on two
// organizations' projects at once are summarized apart, each summary on its own project's
// issue naming only that project's issues (never another organization's repository).
func TestStormsOfTwoProjectsAreSummarizedApart(t *testing.T) {
	const n = 8
	var items []Item
	for i := 1; i <= n; i++ {
		a := issueN(fmt.Sprintf("A%02d", i), "Backlog", i)
		g := issueN(fmt.Sprintf("G%02d", i), "Backlog", i)
		g.Owner, g.Repo, g.ProjectID, g.ProjectNumber = "globex", "globex/web", "PVT_2", 1
		items = append(items, a, g)
	}
	h := newHarnessWith(t, nil, nil, items...)
	var waiting []Change
	for i := 1; i <= n; i++ {
		for _, id := range []string{fmt.Sprintf("A%02d", i), fmt.Sprintf("G%02d", i)} {
			h.now = h.now.Add(50 * time.Millisecond)
			ch := h.board.move(id, "alice", "In Review", h.now)
			if res := h.process(ch); res.Verdict == VerdictWait {
				waiting = append(waiting, ch)
			}
		}
	}
	h.now = h.now.Add(DefaultStormDelay)
	for _, ch := range waiting {
		h.process(ch)
	}
	explainedOnce(t, h, 2*n)
	summaries := 0
	for _, body := range h.commentBodies() {
		if !strings.HasPrefix(body, SummaryMarker) {
			continue
		}
		summaries++
		if strings.Contains(body, "acme/app#") == strings.Contains(body, "globex/web#") {
			t.Errorf("a summary names both projects' issues, or neither:\n%s", body)
		}
	}
	if summaries != 2 {
		t.Errorf("%d summaries, want one per project", summaries)
	}
}
