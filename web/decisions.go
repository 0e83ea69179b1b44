package web

import (
	"errors"
	"fmt"
	"html/template"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/policy"
	"github.com/ralph-gate/ralph-gate/store"
)

// decisionsForm is the filter form as typed, redisplayed as is.
type decisionsForm struct {
	Actor, Verdict, Rule, Issue, Since, Until, Limit string
}

func (f decisionsForm) values() url.Values {
	v := url.Values{}
	for _, kv := range [][2]string{{"actor", f.Actor}, {"verdict", f.Verdict}, {"rule", f.Rule}, {"issue", f.Issue},
		{"since", f.Since}, {"until", f.Until}, {"limit", f.Limit}} {
		if kv[1] != "" {
			v.Set(kv[0], kv[1])
		}
	}
	return v
}

type decisionsData struct {
	Form     decisionsForm
	Verdicts []string
	Problems []string
	Entries  []enforce.AuditEntry
	Filtered bool
	Newest   string // links; "" when there is no such page
	Newer    string
	Older    string
}

// repoNumber is "owner/name#12"; a bare number or "#12" names an issue of any repository.
var (
	repoPattern   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]*/[A-Za-z0-9._-]+$`)
	timeLayouts   = []string{time.RFC3339, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02 15:04"}
	dateOnly      = "2006-01-02"
	timeFormatMsg = "use 2006-01-02, 2006-01-02T15:04 (UTC) or RFC 3339 such as 2006-01-02T15:04:05+02:00"
)

// decisionsParams are the decisions page's query parameters.
var decisionsParams = []string{"actor", "verdict", "rule", "issue", "since", "until", "limit", "before", "after"}

// parseDecisionsQuery reads the filters and the page of the decisions page. Every problem
// is reported, in the order of the form.
func parseDecisionsQuery(q url.Values) (decisionsForm, store.AuditQuery, []string) {
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	for _, k := range slices.Sorted(maps.Keys(q)) {
		if !slices.Contains(decisionsParams, k) {
			bad("Unknown parameter %q: the filters are actor, verdict, rule, issue, since, until and limit; follow the Older and Newer links to page.", k)
		}
	}
	f := decisionsForm{
		Actor: strings.TrimSpace(q.Get("actor")), Verdict: strings.TrimSpace(q.Get("verdict")),
		Rule: strings.TrimSpace(q.Get("rule")), Issue: strings.TrimSpace(q.Get("issue")),
		Since: strings.TrimSpace(q.Get("since")), Until: strings.TrimSpace(q.Get("until")),
		Limit: strings.TrimSpace(q.Get("limit")),
	}
	aq := store.AuditQuery{Actor: f.Actor, Rule: f.Rule}
	if f.Verdict != "" {
		if v := enforce.Verdict(strings.ToLower(f.Verdict)); v.Recorded() {
			aq.Verdict = v
		} else {
			bad("Verdict %q is not one the audit log records: use one of %s.", f.Verdict, strings.Join(verdictNames(), ", "))
		}
	}
	if f.Issue != "" {
		repo, num, ok := parseIssue(f.Issue)
		if ok {
			aq.Repo, aq.IssueNumber = repo, num
		} else {
			bad("Issue %q: write owner/repo#12, #12 or 12 (any repository), or owner/repo (all its issues).", f.Issue)
		}
	}
	var err error
	if aq.Since, err = parseTime(f.Since, false); err != nil {
		bad("Since %q: %s.", f.Since, timeFormatMsg)
	}
	if aq.Until, err = parseTime(f.Until, true); err != nil {
		bad("Until %q: %s.", f.Until, timeFormatMsg)
	}
	if !aq.Since.IsZero() && !aq.Until.IsZero() && !aq.Since.Before(aq.Until) {
		bad("Since (%s) must be before until (%s).", when(aq.Since), when(aq.Until))
	}
	if f.Limit != "" {
		n, err := strconv.Atoi(f.Limit)
		if err != nil || n < 1 || n > store.MaxAuditPage {
			bad("Limit %q: the number of decisions per page is a whole number from 1 to %d.", f.Limit, store.MaxAuditPage)
		} else {
			aq.Limit = n
		}
	}
	before, after := q.Get("before"), q.Get("after")
	switch {
	case before != "" && after != "":
		bad("Use before or after to page, not both.")
	case before != "":
		if c, err := store.ParseAuditCursor(before); err == nil {
			aq.Before = &c
		} else {
			bad("before=%q is not a page of this list: follow the Older and Newer links.", before)
		}
	case after != "":
		if c, err := store.ParseAuditCursor(after); err == nil {
			aq.After = &c
		} else {
			bad("after=%q is not a page of this list: follow the Older and Newer links.", after)
		}
	}
	return f, aq, problems
}

// parseIssue reads "owner/repo#12", "#12", "12" or "owner/repo".
func parseIssue(s string) (repo string, number int, ok bool) {
	repo, n, hasHash := strings.Cut(s, "#")
	if !hasHash && !strings.Contains(s, "/") {
		repo, n = "", s
	}
	if repo != "" && !repoPattern.MatchString(repo) {
		return "", 0, false
	}
	if n == "" {
		return repo, 0, repo != "" && !hasHash
	}
	number, err := strconv.Atoi(n)
	if err != nil || number <= 0 {
		return "", 0, false
	}
	return repo, number, true
}

// parseTime reads a time in UTC unless it says its zone. A date alone is its start for
// since, and the start of the next day for until, so that until includes the day it names.
func parseTime(s string, until bool) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(dateOnly, s); err == nil {
		if until {
			t = t.AddDate(0, 0, 1)
		}
		return t, nil
	}
	for _, l := range timeLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, errors.New("unknown time format")
}

func verdictNames() []string {
	var out []string
	for _, v := range enforce.AuditVerdicts() {
		out = append(out, string(v))
	}
	return out
}

func (h *handler) decisions(w http.ResponseWriter, r *http.Request) {
	form, q, problems := parseDecisionsQuery(r.URL.Query())
	d := decisionsData{Form: form, Verdicts: verdictNames(), Problems: problems, Filtered: len(form.values()) > 0}
	v := h.view(r, "Decisions", "decisions", &d)
	if len(problems) > 0 {
		v.Status = http.StatusBadRequest
		v.Problem = "The filters could not be read; nothing is listed until they are fixed."
		h.render(w, r, "decisions", v)
		return
	}
	visible, err := h.visibleDecisions(r)
	if err != nil {
		h.internal(w, r, "reading the board health failed", err)
		return
	}
	var (
		page   store.AuditPage
		resume *store.AuditCursor // where a viewer's reading of the log stopped (visiblePage)
	)
	if visible == nil {
		page, err = h.o.Decisions.ListAudit(r.Context(), q)
	} else {
		page, resume, err = h.visiblePage(r.Context(), q, visible)
	}
	if err != nil {
		h.internal(w, r, "reading the audit log failed", err)
		return
	}
	d.Entries = page.Entries
	base := form.values()
	link := func(key, cursor string) string {
		u := url.Values{}
		for k, vs := range base {
			u[k] = vs
		}
		if key != "" {
			u.Set(key, cursor)
		}
		if len(u) == 0 {
			return h.o.BasePath + "/decisions"
		}
		return h.o.BasePath + "/decisions?" + u.Encode()
	}
	if page.Newer && len(page.Entries) > 0 {
		d.Newer = link("after", store.CursorOf(page.Entries[0]).String())
	}
	if page.Older && len(page.Entries) > 0 {
		d.Older = link("before", store.CursorOf(page.Entries[len(page.Entries)-1]).String())
	}
	// A viewer's page may hold none of the entries read (visiblePage): its links go on from
	// the place it was asked for, that place included.
	if page.Newer && len(page.Entries) == 0 && q.Before != nil {
		d.Newer = link("after", justBefore(*q.Before).String())
	}
	if page.Older && len(page.Entries) == 0 && q.After != nil {
		d.Older = link("before", store.AuditCursor{At: q.After.At, ID: q.After.ID + 1}.String())
	}
	if resume != nil && q.After != nil {
		d.Newer = link("after", resume.String())
	} else if resume != nil {
		d.Older = link("before", resume.String())
	}
	if q.Before != nil || q.After != nil {
		d.Newest = link("", "")
	}
	h.render(w, r, "decisions", v)
}

// decisionData is what the decision page shows.
type decisionData struct {
	E          enforce.AuditEntry
	IssueURL   string
	IssueLabel string
	IssueLog   string // the issue's decisions
	Recovery   string
	RecoveryOf string // why there is no Recovery text
	Explained  string // whether the explanation is on GitHub ("" unknown)
	Allowed    []string
	ActorKind  string // as policy understands it
	Diagram    template.HTML
}

func (h *handler) decision(w http.ResponseWriter, r *http.Request) {
	raw := r.PathValue("id")
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || id <= 0 {
		h.fail(w, r, http.StatusBadRequest, fmt.Sprintf("The decision id %q is not a positive whole number.", raw))
		return
	}
	e, err := h.o.Decisions.GetAudit(r.Context(), id)
	if errors.Is(err, enforce.ErrNotFound) {
		h.fail(w, r, http.StatusNotFound, fmt.Sprintf("There is no decision %d in the audit log.", id))
		return
	}
	if err != nil {
		h.internal(w, r, "reading the audit log failed", err)
		return
	}
	visible, err := h.visibleDecisions(r)
	if err != nil {
		h.internal(w, r, "reading the board health failed", err)
		return
	}
	if visible != nil && !visible(e) {
		// A decision on another organization's project is not found, as one that does not exist.
		h.fail(w, r, http.StatusNotFound, fmt.Sprintf("There is no decision %d in the audit log.", id))
		return
	}
	d := decisionData{E: e, IssueURL: h.issueURL(e.Repo, e.IssueNumber)}
	switch {
	case e.IssueNumber > 0 && e.Repo != "":
		d.IssueLabel = fmt.Sprintf("%s#%d", e.Repo, e.IssueNumber)
	case e.IssueNumber > 0:
		d.IssueLabel = fmt.Sprintf("#%d", e.IssueNumber)
	}
	if d.IssueLabel != "" {
		d.IssueLog = h.o.BasePath + "/decisions?" + url.Values{"issue": {d.IssueLabel}}.Encode()
	}
	h.recovery(r, &d)

	// The moves policy allows this kind of actor from the state the move left; an actor
	// kind policy does not know is judged as an agent's, the most restricted.
	kind, err := policy.ParseActorKind(e.ActorKind)
	if err != nil {
		kind = policy.ActorAgent
	}
	d.ActorKind = kind.String()
	d.Allowed = h.o.Machine.AllowedNext(e.FromState, kind)
	hl := Highlight{States: []string{e.FromState}, Target: e.ToState}
	for _, to := range d.Allowed {
		hl.Moves = append(hl.Moves, policy.TransitionRef{From: e.FromState, To: to})
	}
	d.Diagram = template.HTML(diagram(h.o.Machine, DiagramOptions{Highlight: hl}))
	h.render(w, r, "decision", h.view(r, fmt.Sprintf("Decision %d", id), "decisions", d))
}

// recovery finds a refused move's Recovery text in the judged report behind it.
func (h *handler) recovery(r *http.Request, d *decisionData) {
	e := d.E
	if e.Verdict != enforce.VerdictReverted {
		return
	}
	if e.DeliveryID == "" {
		d.RecoveryOf = "This decision names no report, so its Recovery text is not known."
		return
	}
	o, err := h.o.Decisions.GetObservation(r.Context(), e.DeliveryID)
	switch {
	case errors.Is(err, enforce.ErrNotFound):
		d.RecoveryOf = "The report behind this decision is no longer kept (old reports are pruned), and its Recovery text with it."
		return
	case err != nil:
		zerolog.Ctx(r.Context()).Warn().Err(err).Int64("decision", e.ID).Msg("reading a decision's report failed")
		d.RecoveryOf = "The report behind this decision could not be read; the service log has the details."
		return
	}
	d.Recovery = cmpOr(o.Recovery, "ask a human")
	d.Explained = "no, not yet"
	if o.Explained {
		d.Explained = "yes"
	}
}

// verdictClass is a verdict's CSS class: the audit log's own names, nothing else.
func verdictClass(v enforce.Verdict) string {
	if slices.Contains(enforce.AuditVerdicts(), v) {
		return "v-" + string(v)
	}
	return "v-other"
}

// DeliveryPath is where a violation comment links for the decision on the change a webhook
// delivery reported (under the base path): it redirects to that decision's page.
const DeliveryPath = "/decisions/by-delivery/"

// byDelivery redirects to the decision on a reported change: its revert when it was refused.
func (h *handler) byDelivery(w http.ResponseWriter, r *http.Request) {
	d := r.PathValue("delivery")
	visible, err := h.visibleDecisions(r)
	if err != nil {
		h.internal(w, r, "reading the board health failed", err)
		return
	}
	page, err := h.o.Decisions.ListAudit(r.Context(), store.AuditQuery{DeliveryID: d, Limit: store.MaxAuditPage})
	if err != nil {
		h.internal(w, r, "reading the audit log failed", err)
		return
	}
	var pick *enforce.AuditEntry
	for i, e := range page.Entries {
		if visible != nil && !visible(e) {
			continue // another organization's: not found
		}
		if pick == nil || e.Verdict == enforce.VerdictReverted {
			pick = &page.Entries[i]
		}
	}
	if pick == nil {
		h.fail(w, r, http.StatusNotFound, "No decision was recorded for that change.")
		return
	}
	http.Redirect(w, r, fmt.Sprintf("%s/decisions/%d", h.o.BasePath, pick.ID), http.StatusSeeOther)
}
