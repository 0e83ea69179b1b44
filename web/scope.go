package web

import (
	"cmp"
	"context"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/health"
	"github.com/ralph-gate/ralph-gate/store"
)

// Who sees what. The layer in front says, per request, which organizations the viewer belongs
// to (Options.Scope). A viewer who belongs to every organization served sees everything; one
// who belongs to some sees those organizations' projects, the decisions on them and the façade
// use of their agents, and nothing else: another organization's board or decision answers 404,
// as one that does not exist, and what belongs to no single organization (the service's queue,
// decisions on no project it shows) is left out.

// Scope is what one viewer may see.
type Scope struct {
	// All: everything (the viewer belongs to every organization served).
	All bool
	// Orgs: otherwise, the organizations whose projects the viewer sees (none: nothing).
	Orgs []string
}

// sees reports whether the viewer sees an organization's projects.
func (s Scope) sees(owner string) bool {
	return s.All || slices.ContainsFunc(s.Orgs, func(o string) bool { return strings.EqualFold(o, owner) })
}

// scope is the request's viewer's scope (everything without Options.Scope).
func (h *handler) scope(r *http.Request) Scope {
	if h.o.Scope == nil {
		return Scope{All: true}
	}
	return h.o.Scope(r)
}

// report is the health report as the request's viewer may see it: the projects and policies
// of their organizations only, and none of the façade's use (viewerFacade).
func (h *handler) report(r *http.Request) (health.Report, Scope, error) {
	sc := h.scope(r)
	now := h.o.Now()
	rep, err := h.o.Reports.Report(r.Context(), now)
	if err != nil || sc.All {
		return rep, sc, err
	}
	rep.Projects = slices.DeleteFunc(slices.Clone(rep.Projects), func(p health.Project) bool { return !sc.sees(p.Owner) })
	rep.Orgs = slices.DeleteFunc(slices.Clone(rep.Orgs), func(o health.Org) bool { return !sc.sees(o.Owner) })
	rep.Facade = health.Facade{Hour: health.Window(now.Add(-time.Hour).Truncate(time.Minute), nil),
		Day: health.Window(now.Add(-24*time.Hour).Truncate(time.Minute), nil)}
	return rep, sc, nil
}

// viewerFacade is the façade's use a viewer who does not see every organization is shown:
// their organizations' agents' (Options.Facade), or none.
func (h *handler) viewerFacade(r *http.Request, sc Scope, none health.Facade) (health.Facade, error) {
	if h.o.Facade == nil || len(sc.Orgs) == 0 {
		return none, nil
	}
	return h.o.Facade(r.Context(), h.o.Now(), sc.Orgs)
}

// visibleDecisions is which decisions the request's viewer may see: nil for every one, else
// those on the projects they see (by the project's node id, as the audit log names it).
func (h *handler) visibleDecisions(r *http.Request) (func(enforce.AuditEntry) bool, error) {
	rep, sc, err := h.report(r)
	if err != nil || sc.All {
		return nil, err
	}
	ids := map[string]bool{}
	for _, p := range rep.Projects {
		if p.ID != "" {
			ids[p.ID] = true
		}
	}
	return func(e enforce.AuditEntry) bool { return ids[e.ProjectID] }, nil
}

// maxScanned bounds the audit entries one page of a viewer who sees some projects reads to
// find theirs (handler.scan), reading store.MaxAuditPage at a time: a page that reaches it
// shows what it found, and its link to the next page goes on from where the reading stopped.
const maxScanned = 10 * store.MaxAuditPage

// scanBounds are how scanAudit reads the audit log: entries per read, and at most how many
// for one page.
type scanBounds struct{ read, budget int }

// visiblePage is ListAudit for a viewer who sees only what visible keeps: one page of those
// entries, in the same order, with the same cursors. resume, when set, is where the reading
// stopped (maxScanned) in the direction of travel: the link to the next page starts there.
func (h *handler) visiblePage(ctx context.Context, q store.AuditQuery, visible func(enforce.AuditEntry) bool) (page store.AuditPage, resume *store.AuditCursor, err error) {
	limit := cmp.Or(q.Limit, store.DefaultAuditPage)
	if q.After == nil {
		found, stopped, err := h.scanAudit(ctx, q, q.Before, true, limit, visible)
		if err != nil {
			return store.AuditPage{}, nil, err
		}
		page.Entries, page.Older, resume = found[:min(limit, len(found))], len(found) > limit || stopped != nil, stopped
		if q.Before != nil {
			edge := q.Before
			if len(page.Entries) > 0 {
				c := store.CursorOf(page.Entries[0])
				edge = &c
			}
			newer, stopped, err := h.scanAudit(ctx, q, edge, false, 0, visible)
			if err != nil {
				return store.AuditPage{}, nil, err
			}
			page.Newer = len(newer) > 0 || stopped != nil
		}
		return page, resume, nil
	}
	found, stopped, err := h.scanAudit(ctx, q, q.After, false, limit, visible)
	if err != nil {
		return store.AuditPage{}, nil, err
	}
	page.Entries, page.Newer, resume = found[:min(limit, len(found))], len(found) > limit || stopped != nil, stopped
	slices.Reverse(page.Entries) // newest first
	edge := q.After
	if len(page.Entries) > 0 {
		c := store.CursorOf(page.Entries[len(page.Entries)-1])
		edge = &c
	}
	older, stopped, err := h.scanAudit(ctx, q, edge, true, 0, visible)
	if err != nil {
		return store.AuditPage{}, nil, err
	}
	page.Older = len(older) > 0 || stopped != nil
	return page, resume, nil
}

// scanAudit reads the entries matching q's filters from a place in the audit log (nil: its
// newest end), towards older ones or newer ones, keeping those visible keeps, until it has
// want+1 of them, the log ends, or it has read maxScanned entries. found are in the order of
// travel; stopped is where the reading stopped for want of budget (nil when it did not).
func (h *handler) scanAudit(ctx context.Context, q store.AuditQuery, from *store.AuditCursor, older bool, want int,
	visible func(enforce.AuditEntry) bool) (found []enforce.AuditEntry, stopped *store.AuditCursor, err error) {
	sq := q
	sq.Limit = h.scan.read
	for scanned := 0; ; {
		sq.Before, sq.After = nil, nil
		if older {
			sq.Before = from
		} else {
			sq.After = from
		}
		page, err := h.o.Decisions.ListAudit(ctx, sq)
		if err != nil {
			return nil, nil, err
		}
		entries, more := page.Entries, page.Older // newest first
		if !older {
			entries, more = slices.Clone(entries), page.Newer
			slices.Reverse(entries) // oldest first: the order of travel
		}
		for _, e := range entries {
			scanned++
			c := store.CursorOf(e)
			from = &c
			if visible(e) {
				if found = append(found, e); len(found) > want {
					return found, nil, nil
				}
			}
		}
		switch {
		case !more || len(entries) == 0:
			return found, nil, nil
		case scanned >= h.scan.budget:
			return found, from, nil
		}
	}
}

// justBefore is the place in the audit log's order right before c's (an entry's time is kept
// to the microsecond, its id is positive).
func justBefore(c store.AuditCursor) store.AuditCursor {
	if c.ID > 1 {
		return store.AuditCursor{At: c.At, ID: c.ID - 1}
	}
	return store.AuditCursor{At: c.At.Add(-time.Microsecond), ID: math.MaxInt64}
}
