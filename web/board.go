package web

import (
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/health"
)

// boardData is what the board page shows of one project.
type boardData struct {
	P health.Project
	// Policy is the project's organization's policy in force, when it is read from the
	// organization's repository (nil when config.yml lists the projects).
	Policy      *health.Org
	GeneratedAt time.Time
	Diagram     template.HTML
	Limited     []health.StateCount // the states with a WIP limit
	All         bool                // every row of every list, not ListLimit
	AllURL      string
	Decisions   string // the project's decisions page

	Locks         []health.Lock
	LocksMore     int
	Human         []health.Waiting
	HumanMore     int
	Unset         []health.ItemRef
	UnsetMore     int
	Unblocked     []health.ItemRef
	UnblockedMore int
	Hygiene       []health.Finding
	HygieneMore   int
	Stale         int // stale locks
	Long          int // long waits
	// Facade is what agents did through the MCP façade: every project's calls together, or
	// for a viewer who does not see every organization, their organizations' agents' calls.
	Facade []facadeWindow
	// Shared: the viewer does not see every organization, so what is every organization's
	// together (the service's queue) is not shown.
	Shared bool
}

// usageTable is one table of the façade section: its rows by tool or by agent.
type usageTable struct {
	By   string
	Rows []health.Usage
}

// facadeWindow is the façade's use over one span, for the page.
type facadeWindow struct {
	Name string
	health.FacadeWindow
}

// capped is the first n elements of s (all of them when all is set) and how many are left.
func capped[T any](s []T, n int, all bool) ([]T, int) {
	if all || len(s) <= n {
		return s, 0
	}
	return s[:n], len(s) - n
}

func (h *handler) board(w http.ResponseWriter, r *http.Request) {
	owner := r.PathValue("owner")
	number, err := strconv.Atoi(r.PathValue("number"))
	if err != nil || number <= 0 {
		h.fail(w, r, http.StatusBadRequest, fmt.Sprintf("The project number %q is not a positive whole number.", r.PathValue("number")))
		return
	}
	for k := range r.URL.Query() {
		if k != "all" {
			h.fail(w, r, http.StatusBadRequest, fmt.Sprintf("Unknown parameter %q: a board page takes only all=1 (every row of every list).", k))
			return
		}
	}
	var all bool
	switch v := r.URL.Query().Get("all"); v {
	case "", "0":
	case "1":
		all = true
	default:
		h.fail(w, r, http.StatusBadRequest, fmt.Sprintf("all=%q: use all=1 to list every item, or leave it out.", v))
		return
	}
	rep, sc, err := h.report(r)
	if err != nil {
		h.internal(w, r, "reading the board health failed", err)
		return
	}
	// Another organization's board is not found, as one that does not exist (h.report).
	var p *health.Project
	for i := range rep.Projects {
		if strings.EqualFold(rep.Projects[i].Owner, owner) && rep.Projects[i].Number == number {
			p = &rep.Projects[i]
			break
		}
	}
	if p == nil {
		what := "an enforced project"
		if !sc.All {
			what = "an enforced project of your organizations" // (another's is not told apart)
		}
		h.fail(w, r, http.StatusNotFound, fmt.Sprintf("%s/%d is not %s.", owner, number, what))
		return
	}
	if !sc.All {
		if rep.Facade, err = h.viewerFacade(r, sc, rep.Facade); err != nil {
			h.internal(w, r, "reading the façade's use failed", err)
			return
		}
	}
	d := boardData{P: *p, GeneratedAt: rep.GeneratedAt, All: all, Shared: !sc.All,
		Facade: []facadeWindow{{"Last hour", rep.Facade.Hour}, {"Last day", rep.Facade.Day}}}
	for i := range rep.Orgs {
		if strings.EqualFold(rep.Orgs[i].Owner, p.Owner) {
			d.Policy = &rep.Orgs[i]
		}
	}
	counts, limits := make(map[string]int, len(p.States)), map[string]int{}
	var over []string
	for _, s := range p.States {
		counts[s.Name] = s.Count
		if s.Limit > 0 {
			d.Limited = append(d.Limited, s)
			limits[s.Name] = s.Limit
		}
		if s.Over {
			over = append(over, s.Name)
		}
	}
	d.Diagram = template.HTML(diagram(h.o.Machine, DiagramOptions{Counts: counts, Limits: limits, Unset: len(p.Unset),
		Highlight: Highlight{States: over}}))
	n := h.o.ListLimit
	d.Locks, d.LocksMore = capped(p.Locks, n, all)
	d.Human, d.HumanMore = capped(p.HumanNeeded, n, all)
	d.Unset, d.UnsetMore = capped(p.Unset, n, all)
	d.Unblocked, d.UnblockedMore = capped(p.Unblocked, n, all)
	d.Hygiene, d.HygieneMore = capped(p.Hygiene, n, all)
	for _, l := range p.Locks {
		if l.Stale {
			d.Stale++
		}
	}
	for _, wt := range p.HumanNeeded {
		if wt.Long {
			d.Long++
		}
	}
	d.AllURL = h.projectPath(p.Owner, p.Number) + "?all=1"
	d.Decisions = h.o.BasePath + "/decisions"
	h.render(w, r, "board", h.view(r, fmt.Sprintf("%s/%d", p.Owner, p.Number), "projects", d))
}

// funcs are the templates' helpers.
func (h *handler) funcs() template.FuncMap {
	return template.FuncMap{
		"itemURL":      h.itemURL,
		"itemLabel":    itemLabel,
		"issueURL":     h.issueURL,
		"when":         when,
		"shortCommit":  shortCommit,
		"age":          age,
		"ago":          ago,
		"findingLabel": findingLabel,
		"projectPath":  h.projectPath,
		"decisionPath": func(id int64) string { return h.o.BasePath + "/decisions/" + strconv.FormatInt(id, 10) },
		"orNone":       func(s string) string { return cmpOr(s, "(no state)") },
		"verdictClass": verdictClass,
		"statusText":   http.StatusText,
		// Text from outside (an agent's reason, a login) without bidi overrides or other
		// invisible characters, as comments show it.
		"visible":  enforce.VisibleText,
		"quantile": health.QuantileText,
		"byRule":   health.ByCount,
		"usageTable": func(by string, rows []health.Usage) usageTable {
			return usageTable{By: by, Rows: rows}
		},
	}
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// itemURL is an item's issue on GitHub: the URL the snapshot carries, or one built from the
// repository and number ("" for an item without either, such as a draft).
func (h *handler) itemURL(it health.ItemRef) string {
	if it.URL != "" {
		if u, err := url.Parse(it.URL); err == nil && (u.Scheme == "https" || u.Scheme == "http") {
			return it.URL
		}
	}
	return h.issueURL(it.Repo, it.Number)
}

func (h *handler) issueURL(repo string, number int) string {
	if repo == "" || number <= 0 || strings.Count(repo, "/") != 1 {
		return ""
	}
	owner, name, _ := strings.Cut(repo, "/")
	return fmt.Sprintf("%s/%s/%s/issues/%d", h.o.WebURL, pathEscape(owner), pathEscape(name), number)
}

// itemLabel names an item: "owner/repo#12", "#12", or its node id when it has no number.
func itemLabel(it health.ItemRef) string {
	switch {
	case it.Number > 0 && it.Repo != "":
		return fmt.Sprintf("%s#%d", it.Repo, it.Number)
	case it.Number > 0:
		return fmt.Sprintf("#%d", it.Number)
	case it.ItemID != "":
		return "item " + it.ItemID
	}
	return "unknown item"
}

var findingLabels = map[string]string{
	health.FindingStaleLock:        "stale lock",
	health.FindingLongHumanWait:    "long wait for a person",
	health.FindingWIPOverLimit:     "over WIP limit",
	health.FindingUnsetState:       "no state",
	health.FindingUnblockedWaiting: "unblocked, waiting",
}

func findingLabel(kind string) string { return cmpOr(findingLabels[kind], kind) }

// when is a time as the pages show it, in UTC ("" for the zero time).
func when(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

// age is a duration in the two largest units that matter: "3d 4h", "5h 12m", "7m 3s", "45s".
func age(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	d = d.Truncate(time.Second)
	days, hours, mins, secs := int(d/(24*time.Hour)), int(d/time.Hour)%24, int(d/time.Minute)%60, int(d/time.Second)%60
	switch {
	case days > 0:
		return fmt.Sprintf("%dd %dh", days, hours)
	case hours > 0:
		return fmt.Sprintf("%dh %dm", hours, mins)
	case mins > 0:
		return fmt.Sprintf("%dm %ds", mins, secs)
	}
	return fmt.Sprintf("%ds", secs)
}

// ago is how long before now t was ("" for the zero time).
func ago(now, t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return age(now.Sub(t)) + " ago"
}

func pathEscape(s string) string { return url.PathEscape(s) }

// shortCommit is a commit's short form, as GitHub shows it.
func shortCommit(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}
