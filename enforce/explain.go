package enforce

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/ralph-gate/ralph-gate/marker"
)

// ViolationMarker opens every violation comment.
const ViolationMarker = marker.Violation

// maxListedViolations bounds how many violations one coalesced comment lists.
const maxListedViolations = 20

// violation is one refused move, as a comment line.
type violation struct {
	marker marker.Transition
	line   string
}

// explain posts the explanation of a refused step (o, judged), or folds it into a recent
// violation comment of the same actor on the same issue. Each actor's violations have their own
// comment: GitHub notifies on a new comment, never on an edit, so a second actor's violation
// folded into someone else's comment would reach nobody.
func (e *Enforcer) explain(ctx context.Context, w *walk, o Observation) error {
	now, it := e.now(), w.it
	v := violation{marker: violationMarker(o), line: e.withLink(violationLine(o, w.rec.LastLegalState), o.DeliveryID)}
	prev, found, err := e.violationComment(ctx, w, o.Actor, v)
	if err != nil {
		return err
	}
	if found && strings.Contains(prev.Body, v.marker.String()) && prev.NodeID != "" {
		return nil // already explained (a retry after a crash or a failed call)
	}
	// A comment recorded before comments were kept per actor (settled above) is not the actor's.
	own := found && prev.Actor == o.Actor
	if own && prev.NodeID != "" && now.Sub(prev.UpdatedAt) < e.opts.CoalesceWindow {
		body := coalesce(prev.Body, v, prev.Count+1)
		err := w.board.UpdateComment(ctx, prev.NodeID, body)
		if err == nil {
			prev.Body, prev.Count, prev.UpdatedAt = body, prev.Count+1, now
			return e.store().PutViolationComment(ctx, it.Repo, it.Number, prev)
		}
		if !errors.Is(err, ErrNotFound) {
			return fmt.Errorf("update violation comment: %w", err)
		}
		// Someone deleted the comment: the violation is told in a new one, at once (retrying
		// the edit would only fail again), which the record then keeps.
		zerolog.Ctx(ctx).Info().Int("issue", it.Number).Str("comment", prev.NodeID).Str("actor", o.Actor).
			Msg("the violation comment was deleted; posting a new one")
		own = false
	}
	vs, count := []violation{v}, 1
	if own && prev.NodeID == "" {
		// The interrupted comment was never posted: this one carries its violations too.
		vs = parseViolations(prev.Body)
		count = prev.Count
		if !strings.Contains(prev.Body, v.marker.String()) {
			vs, count = append(vs, v), count+1
		}
	}
	body := renderViolations(vs, count)
	// Write-ahead: remember the comment before posting it, so that a crash between GitHub
	// creating it and the store recording it cannot lead to a second comment (settlePending).
	pending := ViolationComment{Actor: o.Actor, Count: count, UpdatedAt: now, Body: body}
	if err := e.store().PutViolationComment(ctx, it.Repo, it.Number, pending); err != nil {
		return fmt.Errorf("record the violation comment to post: %w", err)
	}
	c, err := w.board.AddComment(ctx, it.ContentID, body)
	if err != nil {
		return fmt.Errorf("add violation comment: %w", err)
	}
	return e.store().PutViolationComment(ctx, it.Repo, it.Number, ViolationComment{
		Actor: o.Actor, CommentID: c.DatabaseID, NodeID: c.ID, Count: count, UpdatedAt: now, Body: body,
	})
}

// violationComment loads the violation comment kept for the issue and the actor, after settling
// one whose posting was interrupted (settlePending). When the actor has none, a comment
// recorded before comments were kept per actor ("" actor) is taken only if its posting of this
// very violation was interrupted: GitHub may have it, and it must not be posted twice.
func (e *Enforcer) violationComment(ctx context.Context, w *walk, actor string, v violation) (ViolationComment, bool, error) {
	c, err := e.store().GetActorViolationComment(ctx, w.it.Repo, w.it.Number, actor)
	if errors.Is(err, ErrNotFound) && actor != "" {
		c, err = e.store().GetActorViolationComment(ctx, w.it.Repo, w.it.Number, "")
		if err == nil && (c.NodeID != "" || !strings.Contains(c.Body, v.marker.String())) {
			return ViolationComment{}, false, nil
		}
	}
	switch {
	case errors.Is(err, ErrNotFound):
		return ViolationComment{}, false, nil
	case err != nil:
		return ViolationComment{}, false, fmt.Errorf("load violation comment: %w", err)
	case c.NodeID == "":
		// An earlier attempt recorded a comment it was about to post, then failed or died:
		// ask GitHub whether the comment exists before posting anything.
		c, err = e.settlePending(ctx, w, c)
		return c, err == nil, err
	}
	return c, true, nil
}

// settlePending resolves a violation comment recorded as about to be posted (NodeID ""): when
// GitHub has it, the record gets its ids; when not, the record stays pending and the caller
// posts it.
func (e *Enforcer) settlePending(ctx context.Context, w *walk, prev ViolationComment) (ViolationComment, error) {
	markers, _ := marker.ParseTransitions(prev.Body)
	if len(markers) == 0 {
		return prev, nil
	}
	// The newest marker identifies the comment: it is unique to one refused move.
	needle := markers[len(markers)-1].String()
	c, found, err := w.board.FindComment(ctx, w.it.ContentID, needle)
	if err != nil {
		return prev, fmt.Errorf("look for an interrupted violation comment: %w", err)
	}
	if !found {
		return prev, nil
	}
	prev.NodeID, prev.CommentID = c.ID, c.DatabaseID
	if err := e.store().PutViolationComment(ctx, w.it.Repo, w.it.Number, prev); err != nil {
		return prev, fmt.Errorf("record the violation comment: %w", err)
	}
	zerolog.Ctx(ctx).Info().Int("issue", w.it.Number).Str("comment", c.ID).Str("actor", prev.Actor).
		Msg("found an interrupted violation comment on GitHub")
	return prev, nil
}

// violationLine is one refused step in words. legalNow is the item's last legal state now.
func violationLine(o Observation, legalNow string) string {
	from := orNoState(o.LegalFrom)
	who := fmt.Sprintf("`%s` (%s)", o.Actor, o.ActorKind)
	switch o.Actor {
	case DriftActor:
		who = fmt.Sprintf("A change no webhook reported (the author is unknown, so it is judged as an %s's)", o.ActorKind)
	case NoSender, "":
		who = fmt.Sprintf("A change whose webhook named no sender (the author is unknown, so it is judged as an %s's)", o.ActorKind)
	}
	back := fmt.Sprintf("It is back in **%s**.", from)
	switch {
	case o.Verdict == VerdictWouldRevert:
		back = fmt.Sprintf("It was not reverted, because the project is in warn mode; under enforce it would have been set back to **%s**.", from)
	case legalNow != o.LegalFrom:
		back = fmt.Sprintf("It was moved on by a later legal change before ralph-gate set it back; it is now in **%s**.", orNoState(legalNow))
	}
	recovery := o.Recovery
	if recovery == "" {
		recovery = "ask a human"
	}
	return fmt.Sprintf("%s moved this from **%s** to **%s** at %s. Refused: %s %s Recovery: %s.",
		who, from, orNoState(o.To), o.At.UTC().Format(time.RFC3339), ensureStop(o.Reason), back, strings.TrimSuffix(recovery, "."))
}

// withLink ends a violation's line with a link to its decision page, when there is one.
func (c *core) withLink(line, deliveryID string) string {
	if c.opts.DecisionLink == nil || deliveryID == "" {
		return line
	}
	if link := c.opts.DecisionLink(deliveryID); link != "" {
		return line + " [Decision](" + link + ")"
	}
	return line
}

func ensureStop(s string) string {
	s = strings.TrimSpace(s)
	if s == "" || strings.HasSuffix(s, ".") {
		return s
	}
	return s + "."
}

// renderViolations builds the whole comment: marker, one hidden transition marker and one
// line per violation (newest last), and how to get help.
func renderViolations(vs []violation, count int) string {
	var b strings.Builder
	b.WriteString(ViolationMarker + "\n")
	for _, v := range vs {
		b.WriteString(v.marker.String() + "\n")
	}
	verb := "reverted"
	if standing(vs) {
		verb = "would have reverted (the project is in warn mode: nothing was reverted)"
	}
	if count == 1 {
		fmt.Fprintf(&b, "**ralph-gate %s a Workflow State change that the workflow does not allow.**\n\n", verb)
	} else {
		fmt.Fprintf(&b, "**ralph-gate %s %d Workflow State changes that the workflow does not allow.**\n\n", verb, count)
	}
	for _, v := range vs {
		b.WriteString("- " + v.line + "\n")
	}
	b.WriteString("\nAgents: hand off through ralph-gate's `handoff_ticket` tool to get the allowed moves. People: `ralph-gate policy check` explains any move.\n")
	return b.String()
}

// standing reports whether every violation listed stood (warn mode): none was reverted.
func standing(vs []violation) bool {
	for _, v := range vs {
		if v.marker.Verdict != string(VerdictWouldRevert) {
			return false
		}
	}
	return len(vs) > 0
}

// coalesce folds a new violation into an existing comment body.
func coalesce(prevBody string, v violation, count int) string {
	vs := parseViolations(prevBody)
	vs = append(vs, v)
	if len(vs) > maxListedViolations {
		vs = vs[len(vs)-maxListedViolations:]
	}
	return renderViolations(vs, count)
}

// parseViolations recovers the violations listed in a comment the app wrote. Markers are read
// from the lines that are not list lines only: a list line is text, whatever it holds (a line
// edited to carry a marker would otherwise count twice once rendered again).
func parseViolations(body string) []violation {
	var lines, rest []string
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, "- ") {
			lines = append(lines, strings.TrimPrefix(l, "- "))
		} else {
			rest = append(rest, l)
		}
	}
	markers, _ := marker.ParseTransitions(strings.Join(rest, "\n"))
	if len(lines) != len(markers) {
		return nil // edited by hand: start the list afresh rather than mismatch lines
	}
	out := make([]violation, len(markers))
	for i := range markers {
		out[i] = violation{marker: markers[i], line: lines[i]}
	}
	return out
}
