package enforce

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/ralph-gate/ralph-gate/marker"
)

// A storm: one actor makes many refused moves at once (a column bulk-edited on the board, an
// agent in a loop). One comment per issue would spend GitHub's content budget (about 80 new
// comments a minute, 500 an hour per installation) on one person's mistake, and the comments
// would hold up the reverts that put the board right. So the first few refused moves of an
// actor are explained on their issues as they come; once they made more than StormThreshold
// within StormWindow, the rest wait StormDelay (the reverts go first) and are then explained together in one summary
// comment that mentions the actor — GitHub notifies a person who is @mentioned — and names
// every issue (docs/ENFORCEMENT.md, "A storm of refused moves"). A storm is one actor's on
// one project: a summary on a project's issue names that project's issues only (never another
// organization's).

// Storm defaults.
const (
	DefaultStormThreshold = 5
	DefaultStormDelay     = 5 * time.Second
	// StormWindow is how far back an actor's refused moves count towards a storm.
	StormWindow = 10 * time.Minute
	// maxSummaryLines bounds one summary comment (GitHub refuses bodies over 65,536
	// characters); a longer storm gets several.
	maxSummaryLines = 100
)

// SummaryMarker opens every storm summary comment.
const SummaryMarker = marker.ViolationSummary

// explainLater is an explanation that waits for a storm's summary.
type explainLater struct {
	after time.Duration
	why   string
}

func (e *explainLater) Error() string { return e.why }

// explainStep explains one refused step: on its issue, or, in a storm, in a summary. An
// actor's explanations are written one at a time (in this process and across replicas), so
// that a summary never lists a step whose own comment is being written.
func (e *Enforcer) explainStep(ctx context.Context, w *walk, o Observation) error {
	if o.Lifecycle != "" {
		// A refused close or reopen is explained on its own, never in a summary (the store
		// lists none for one): undone and explained, or, standing under warn, explained.
		// (family-seed-13010241: a storm's summary left a standing close unexplained.)
		if o.Verdict == VerdictReverted {
			return e.undoEvent(ctx, w, o)
		}
		return e.explainOne(ctx, w, o)
	}
	if unknownAuthor(o.Actor) || o.Actor == "" {
		// Nobody to address a summary to.
		return e.explainOne(ctx, w, o)
	}
	// Waiting here, rather than coming back later, costs a worker but no GitHub request: a
	// job that came back would read its item again, and a storm's jobs doing so every few
	// hundred milliseconds spend the installation's hourly budget in minutes.
	st := storm{project: cmp.Or(w.rec.ProjectID, w.it.ProjectID), actor: o.Actor}
	unlockHere := e.storms.lock(st.key())
	defer unlockHere()
	unlock, err := e.store().LockItem(ctx, "violation-explanations/"+st.key())
	if err != nil {
		return err
	}
	defer unlock()
	if err := e.settleSummary(ctx, w.board, st); err != nil {
		return err
	}
	if cur, err := e.store().GetObservation(ctx, o.DeliveryID); err != nil {
		return fmt.Errorf("load report %s: %w", o.DeliveryID, err)
	} else if cur.Explained {
		return nil // in a summary written meanwhile
	}
	if vc, err := e.store().GetActorViolationComment(ctx, w.it.Repo, w.it.Number, o.Actor); err == nil &&
		(vc.NodeID == "" || e.now().Sub(vc.UpdatedAt) < e.opts.CoalesceWindow) {
		// The actor's comment on this issue takes it in (an edit, not a new comment); or it was
		// being posted when a crash came, and GitHub may have it with this step or others of
		// its issue: explainOne settles it first (finds it, or posts it again), where a summary
		// would explain them a second time.
		return e.explainOne(ctx, w, o)
	}
	recent, err := e.store().CountRefusedBy(ctx, o.Actor, st.project, e.now().Add(-StormWindow))
	if err != nil {
		return fmt.Errorf("count the refused moves of %s: %w", o.Actor, err)
	}
	if recent <= e.opts.StormThreshold {
		return e.explainOne(ctx, w, o)
	}
	waiting, err := e.store().UnexplainedBy(ctx, o.Actor, st.project, 1)
	if err != nil {
		return fmt.Errorf("list the unexplained refused moves of %s: %w", o.Actor, err)
	}
	if len(waiting) > 0 && waiting[0].JudgedAt.Add(e.opts.StormDelay).After(e.now()) {
		wait := waiting[0].JudgedAt.Add(e.opts.StormDelay).Sub(e.now())
		return &explainLater{after: wait, why: fmt.Sprintf("%s made more than %d refused moves: explained together in a summary", o.Actor, e.opts.StormThreshold)}
	}
	return e.summarize(ctx, w, st)
}

// storm names one actor's storm on one project.
type storm struct{ project, actor string }

// key is the storm's name in locks and cursors.
func (s storm) key() string { return s.project + "/" + s.actor }

// explainOne explains one refused step on its issue and records it.
func (e *Enforcer) explainOne(ctx context.Context, w *walk, o Observation) error {
	if err := e.explain(ctx, w, o); err != nil {
		return err
	}
	if err := e.store().MarkExplained(ctx, o.DeliveryID); err != nil {
		return fmt.Errorf("record the explanation of %s: %w", o.DeliveryID, err)
	}
	return nil
}

// summarize explains every refused step of actor waiting for it, in summary comments on the
// walked item's issue, each naming its issues and mentioning the actor. The caller holds the
// actor's explanation lock.
func (e *Enforcer) summarize(ctx context.Context, w *walk, st storm) error {
	actor := st.actor
	for {
		listed, err := e.store().UnexplainedBy(ctx, actor, st.project, maxSummaryLines)
		if err != nil {
			return fmt.Errorf("list the unexplained refused moves of %s: %w", actor, err)
		}
		steps, err := e.notInterrupted(ctx, actor, listed)
		if err != nil {
			return err
		}
		if len(steps) == 0 {
			return nil
		}
		// Recorded before it is posted: a crash anywhere after leaves it to settleSummary (which
		// finds it on GitHub by its first step's marker, or posts it), whichever of the actor's
		// explanations comes next, on whatever issue — never a second explanation of its steps.
		j := summaryJournal{Subject: w.it.ContentID, Issue: w.it.Number, Needle: summaryMarker(steps[0]).String(),
			Body: renderSummary(actor, steps, e.withLink)}
		for _, s := range steps {
			j.Steps = append(j.Steps, s.DeliveryID)
		}
		if err := e.putSummaryJournal(ctx, summaryCursor(st), &j); err != nil {
			return err
		}
		c, err := w.board.AddComment(ctx, j.Subject, j.Body)
		if err != nil {
			return fmt.Errorf("add violation summary: %w", err)
		}
		if err := e.summaryPosted(ctx, summaryCursor(st), j); err != nil {
			return err
		}
		zerolog.Ctx(ctx).Info().Str("actor", actor).Int("moves", len(steps)).Int("issue", w.it.Number).Str("comment", c.ID).
			Msg("explained a storm of refused moves in one summary")
		if len(listed) < maxSummaryLines {
			return nil
		}
	}
}

// summaryJournal is a storm summary about to be posted: where, what, and which steps it
// explains (a cursor per actor, written under the actor's explanation lock).
type summaryJournal struct {
	Subject string   `json:"subject"` // the issue's node id
	Issue   int      `json:"issue"`
	Needle  string   `json:"needle"` // its first step's marker: how it is found on GitHub
	Body    string   `json:"body"`
	Steps   []string `json:"steps"` // delivery ids
}

// summaryCursor is where a storm's summary about to be posted is journaled.
func summaryCursor(st storm) string { return "explain/summary/" + st.key() }

// legacySummaryCursor is where a release that kept one storm per actor, on every project,
// journaled its summary: one interrupted by the upgrade is settled all the same.
func legacySummaryCursor(actor string) string { return "explain/summary/" + actor }

// putSummaryJournal records a summary about to be posted at a cursor (nil: none is).
func (e *Enforcer) putSummaryJournal(ctx context.Context, cursor string, j *summaryJournal) error {
	v := ""
	if j != nil {
		b, err := json.Marshal(j)
		if err != nil {
			return fmt.Errorf("record the summary to post: %w", err)
		}
		v = string(b)
	}
	if err := e.store().PutCursor(ctx, cursor, v); err != nil {
		return fmt.Errorf("record the summary to post: %w", err)
	}
	return nil
}

// summaryPosted records the summary's steps explained and clears its journal.
func (e *Enforcer) summaryPosted(ctx context.Context, cursor string, j summaryJournal) error {
	for _, d := range j.Steps {
		if err := e.store().MarkExplained(ctx, d); err != nil {
			return fmt.Errorf("record the explanation of %s: %w", d, err)
		}
	}
	return e.putSummaryJournal(ctx, cursor, nil)
}

// settleSummary finishes a summary of the storm's that a crash interrupted (its journal is
// still there), and one an earlier release journaled for the actor: it is found on GitHub, or
// posted, then its steps are recorded explained. The caller holds the storm's explanation lock.
func (e *Enforcer) settleSummary(ctx context.Context, b Board, st storm) error {
	if err := e.settleJournal(ctx, b, st.actor, summaryCursor(st)); err != nil {
		return err
	}
	return e.settleJournal(ctx, b, st.actor, legacySummaryCursor(st.actor))
}

// settleJournal settles the summary journaled at a cursor, if any.
func (e *Enforcer) settleJournal(ctx context.Context, b Board, actor, cursor string) error {
	v, err := e.store().GetCursor(ctx, cursor)
	if errors.Is(err, ErrNotFound) || (err == nil && v == "") {
		return nil
	} else if err != nil {
		return fmt.Errorf("load the summary being posted: %w", err)
	}
	var j summaryJournal
	if err := json.Unmarshal([]byte(v), &j); err != nil {
		return fmt.Errorf("load the summary being posted: %w", err)
	}
	_, found, err := b.FindComment(ctx, j.Subject, j.Needle)
	if err == nil && !found {
		_, err = b.AddComment(ctx, j.Subject, j.Body)
	}
	if errors.Is(err, ErrNotFound) {
		// Its issue is gone: the summary is not on GitHub, and its moves are explained again
		// on their own.
		zerolog.Ctx(ctx).Warn().Str("actor", actor).Int("issue", j.Issue).Msg("an interrupted storm summary's issue is gone; its moves are explained again")
		return e.putSummaryJournal(ctx, cursor, nil)
	} else if err != nil {
		return fmt.Errorf("settle an interrupted summary: %w", err)
	}
	zerolog.Ctx(ctx).Info().Str("actor", actor).Int("issue", j.Issue).Int("moves", len(j.Steps)).Msg("settled an interrupted storm summary")
	return e.summaryPosted(ctx, cursor, j)
}

// notInterrupted drops the steps whose own comment on their issue was being posted when a
// crash came (the actor's comment there is recorded but not known to be on GitHub, and names
// the step): it may be on GitHub, so the step is left to its own explanation (explainStep
// settles that comment first) rather than explained again in a summary.
func (e *Enforcer) notInterrupted(ctx context.Context, actor string, steps []RefusedStep) ([]RefusedStep, error) {
	out := steps[:0:0]
	for _, s := range steps {
		vc, err := e.store().GetActorViolationComment(ctx, s.Repo, s.IssueNumber, actor)
		switch {
		case errors.Is(err, ErrNotFound):
		case err != nil:
			return nil, fmt.Errorf("load the violation comment of %s#%d: %w", s.Repo, s.IssueNumber, err)
		case vc.NodeID == "" && strings.Contains(vc.Body, violationMarker(s.Observation).String()):
			continue
		}
		out = append(out, s)
	}
	return out, nil
}

// renderSummary is one summary comment: markers (one per step), the actor addressed, one line
// per issue.
func renderSummary(actor string, steps []RefusedStep, link func(line, deliveryID string) string) string {
	var b strings.Builder
	b.WriteString(SummaryMarker + "\n")
	for _, s := range steps {
		b.WriteString(summaryMarker(s).String() + "\n")
	}
	verb := "reverted"
	if !slices.ContainsFunc(steps, func(s RefusedStep) bool { return s.Verdict != VerdictWouldRevert }) {
		verb = "would have reverted (the project is in warn mode: nothing was reverted)"
	}
	fmt.Fprintf(&b, "@%s, **ralph-gate %s %d Workflow State changes of yours that the workflow does not allow.** ", actor, verb, len(steps))
	b.WriteString("They came together, so they are explained here at once rather than one comment per issue.\n\n")
	for _, s := range steps {
		line := fmt.Sprintf("%s#%d: **%s** → **%s** at %s. Refused: %s Now in **%s**.", s.Repo, s.IssueNumber,
			orNoState(s.LegalFrom), orNoState(s.To), s.At.UTC().Format(time.RFC3339), ensureStop(s.Reason), orNoState(s.LegalNow))
		b.WriteString("- " + link(line, s.DeliveryID) + "\n")
	}
	if r := steps[0].Recovery; r != "" {
		fmt.Fprintf(&b, "\nRecovery: %s.\n", strings.TrimSuffix(r, "."))
	}
	b.WriteString("\nAgents: hand off through ralph-gate's `handoff_ticket` tool to get the allowed moves. People: `ralph-gate policy check` explains any move.\n")
	return b.String()
}

// summaryMarker is a refused step's marker in a summary: it names the step's issue.
func summaryMarker(s RefusedStep) marker.Transition {
	m := violationMarker(s.Observation)
	m.Issue = fmt.Sprintf("%s#%d", s.Repo, s.IssueNumber)
	return m
}

// isExplainLater reports whether err is an explanation waiting for a storm's summary.
func isExplainLater(err error) (*explainLater, bool) {
	var l *explainLater
	ok := errors.As(err, &l)
	return l, ok
}
