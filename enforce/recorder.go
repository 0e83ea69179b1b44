package enforce

import (
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/rs/zerolog"

	"github.com/ralph-gate/ralph-gate/marker"
	"github.com/ralph-gate/ralph-gate/policy"
)

// recorder builds everything the app tells about a move: the audit entry, the hidden marker
// and the comment. Every use case goes through it, so one move reads the same in the audit
// log, on GitHub and in the metrics.
type recorder struct {
	now Clock
	app string // the app's own login
}

// Cause is the kind of automation that moved an item (the metrics' label).
type Cause string

// Causes of automated moves.
const (
	CauseCascade     Cause = "cascade"     // a parent's move carried its children along
	CauseConvergence Cause = "convergence" // every child reached a parent gate
	CauseLifecycle   Cause = "lifecycle"   // an issue closed or reopened, a pull request merged
)

// verdictOf is the verdict of a policy decision.
func verdictOf(d policy.Decision) Verdict {
	if d.Verdict == policy.Allow {
		return VerdictAllowed
	}
	return VerdictReverted
}

// step is the audit entry of one step of an item's history: o as judged (its actor, actor
// kind, verdict, rule and reason), moving from `from`.
func (r recorder) step(rec Record, o Observation, from string) AuditEntry {
	return AuditEntry{
		At: r.now(), DeliveryID: o.DeliveryID, ProjectID: rec.ProjectID, ItemID: rec.ItemID,
		IssueNumber: rec.IssueNumber, Repo: rec.Repo, Actor: o.Actor, ActorKind: o.ActorKind,
		FromState: from, ToState: o.To, Verdict: o.Verdict, Rule: o.Rule, Reason: o.Reason,
	}
}

// moveLine is what every decision line of the log says: the issue, the move, who made it and
// what became of it. The item's id is the caller's logger's `item` (the job's or the
// reconciliation's item), or `moved_item` for an item the app moved by itself. The caller's
// logger must not carry `actor`: it is the move's own, not necessarily the job's sender.
type moveLine struct {
	Issue    int
	From, To string
	Actor    string
	Verdict  Verdict
}

// on adds the line's fields to a log event.
func (m moveLine) on(ev *zerolog.Event) *zerolog.Event {
	return ev.Int("issue", m.Issue).Str("from", m.From).Str("to", m.To).Str("actor", m.Actor).Str("verdict", string(m.Verdict))
}

// appMove is a move the app made by itself or for an agent.
type appMove struct {
	Item     Item
	From, To string // the board's value before, and the value written
	Kind     Cause
	Why      string // what set it off, in words
	Agent    string // the agent a handoff moved it for ("" for automation)
	// At is when the move that caused it was made: the step is dated then in the item's
	// history (zero: now).
	At time.Time
}

// appStep is the move as a judged step of the item's history (legalFrom: the item's legal
// state before it), so that what an item's legal state was when can be read back from it.
func (r recorder) appStep(mv appMove, legalFrom string) Observation {
	at := r.now()
	stepAt := at
	if !mv.At.IsZero() {
		stepAt = mv.At
	}
	verdict, why := VerdictAutomated, mv.Why
	if mv.Agent != "" {
		verdict, why = VerdictHandoff, "handoff by "+mv.Agent
	}
	return Observation{DeliveryID: fmt.Sprintf("app:%s:%d:%s", mv.Item.ID, at.UnixNano(), mv.To), ItemID: mv.Item.ID,
		FromKnown: true, From: mv.From, To: mv.To, Actor: mv.Agent, At: stepAt, ReceivedAt: at, Status: ObservationJudged,
		JudgedAt: at, Verdict: verdict, ActorKind: policy.ActorApp.String(), LegalFrom: legalFrom, Reason: why}
}

// automation is the audit entry of an automated move.
func (r recorder) automation(mv appMove) AuditEntry {
	it := mv.Item
	return AuditEntry{
		At: r.now(), ProjectID: it.ProjectID, ItemID: it.ID, IssueNumber: it.Number, Repo: it.Repo,
		Actor: r.app, ActorKind: policy.ActorApp.String(), FromState: mv.From, ToState: mv.To,
		Verdict: VerdictAutomated, Rule: "automation", Reason: mv.Why, Cause: mv.Why,
	}
}

// automationComment explains an automated move on its issue.
func (r recorder) automationComment(mv appMove) string {
	m := marker.Transition{From: mv.From, To: mv.To, At: r.stamp(), Actor: r.app, Verdict: string(VerdictAutomated), Cause: mv.Why}
	return fmt.Sprintf("%s\nralph-gate moved this from **%s** to **%s**: %s.\n", m.String(), orNoState(mv.From), orNoState(mv.To), mv.Why)
}

// adoption is the audit entry of a value taken as legal on first sight.
func (r recorder) adoption(rec Record, rule, reason string) AuditEntry {
	return AuditEntry{At: r.now(), ProjectID: rec.ProjectID, ItemID: rec.ItemID, IssueNumber: rec.IssueNumber, Repo: rec.Repo,
		Actor: DriftActor, ActorKind: "unknown", ToState: rec.LastLegalState, Verdict: VerdictAdopted, Rule: rule, Reason: reason}
}

// handoffAudit is the audit entry of a handoff, done (VerdictHandoff) or refused
// (VerdictIgnored: nothing was written).
func (r recorder) handoffAudit(a *handoffAttempt, v Verdict, reason string) AuditEntry {
	it := a.cur
	return AuditEntry{
		At: r.now(), ProjectID: it.ProjectID, ItemID: it.ID, IssueNumber: it.Number, Repo: it.Repo,
		Actor: a.h.Agent, ActorKind: policy.ActorAgent.String(), FromState: a.from, ToState: a.to,
		Verdict: v, Rule: string(a.dec.Rule), Reason: reason, Cause: "mcp " + a.cmd,
	}
}

// handoffComment is a handoff's audit comment: a hidden transition marker, who moved what with
// which command and why, and what comes next.
func (r recorder) handoffComment(a *handoffAttempt, g Guidance) string {
	h, cmd := a.h, a.cmd
	tm := marker.Transition{From: a.from, To: a.to, Command: &cmd, At: r.stamp(), Actor: h.Agent,
		Verdict: string(VerdictHandoff), Reason: cleanAgentText(h.Reason)}
	var b strings.Builder
	b.WriteString(tm.String() + "\n")
	how := "to_state `" + inlineCode(h.ToState) + "`"
	if h.Intent != "" {
		how = "intent `" + inlineCode(h.Intent) + "`"
	}
	fmt.Fprintf(&b, "**`%s` handed this off with `%s` (%s): %s → %s.**\n\n", inlineCode(h.Agent), cmd, how, orNoState(a.from), a.to)
	if reason := strings.TrimSpace(h.Reason); reason != "" {
		b.WriteString("The agent's reason, as it gave it:\n\n" + agentText(reason) + "\n")
	}
	switch {
	case g.IsLock:
		fmt.Fprintf(&b, "Locked by `%s`. ", h.Agent)
	case g.NeedsHuman:
		b.WriteString("Waiting for a human. ")
	}
	if len(g.CommandsExpecting) > 0 {
		fmt.Fprintf(&b, "Next: %s.", strings.Join(g.CommandsExpecting, ", "))
	} else if len(g.AllowedNext) > 0 {
		fmt.Fprintf(&b, "Agents may move it to %s.", strings.Join(g.AllowedNext, ", "))
	}
	b.WriteString("\n")
	return b.String()
}

// violationMarker is the hidden marker of a refused step: unique to it (its delivery), so a
// retried job can tell whether it explained the step already.
func violationMarker(o Observation) marker.Transition {
	return marker.Transition{From: o.LegalFrom, To: o.To, At: o.At.UTC().Format(time.RFC3339), Actor: o.Actor,
		Verdict: string(refusedVerdict(o.Verdict)), Rule: o.Rule, Delivery: o.DeliveryID}
}

func (r recorder) stamp() string { return r.now().UTC().Format(time.RFC3339) }

func orNoState(s string) string {
	if s == "" {
		return "(no state)"
	}
	return s
}

// maxAgentText bounds the agent-supplied text one comment carries.
const maxAgentText = 2000

// agentText renders text an agent supplied so that it shows as it was written and can do
// nothing else: it sits in a fenced code block longer than any backtick run inside it (so it
// cannot close the block), where a mention does not notify, HTML and links are not rendered
// and no heading or bold line can pass for the App's own words. Line breaks are normalized
// (a bare carriage return cannot end the block), control characters dropped, a hidden-comment
// opener defused (no forged ralph-transition marker) and the text bounded.
func agentText(text string) string {
	text = cleanAgentText(text)
	fence := strings.Repeat("`", max(3, longestRun(text, '`')+1))
	return fence + "text\n" + text + "\n" + fence + "\n"
}

// cleanAgentText is agent-supplied text with its line breaks normalized, control and invisible
// formatting characters (bidi overrides included) dropped, hidden-comment openers defused and
// its length bounded: what the comment shows and its marker records.
func cleanAgentText(text string) string {
	text = VisibleText(strings.NewReplacer("\r\n", "\n", "\r", "\n", "\u2028", "\n", "\u2029", "\n").Replace(text))
	// Defused before the bound, so the bound holds for what is shown; a cut cannot make an
	// opener again (no prefix of "< !--" contains "<!--").
	return truncateRunes(strings.ReplaceAll(strings.TrimSpace(text), "<!--", "< !--"), maxAgentText)
}

// VisibleText is text with its control characters (but line breaks and tabs) and invisible
// formatting characters (bidi overrides and isolates included; the zero-width joiner of emoji
// kept) dropped: what a comment, and a page, shows of text an agent supplied.
func VisibleText(text string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\t':
			return r
		case unicode.IsControl(r), unicode.Is(unicode.Cf, r) && r != '\u200D':
			return -1
		}
		return r
	}, text)
}

// inlineCode makes a short value safe inside a `code span`: no backtick, no line break.
func inlineCode(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '`' || unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return -1
		}
		return r
	}, truncateRunes(s, 100))
}

func longestRun(s string, c rune) int {
	best, n := 0, 0
	for _, r := range s {
		if r == c {
			n++
			best = max(best, n)
		} else {
			n = 0
		}
	}
	return best
}

func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}
