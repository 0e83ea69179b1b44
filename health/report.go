package health

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/policy"
)

// Source is what a report reads, all of it kept in the store (package store implements the
// first three; the service adds LastSweep from the redelivery sweeper's record).
type Source interface {
	// HealthItems calls fn for every item of a project with its record (states, locks, when
	// each state was reached; nil when none) and what the reconciler's newest walk read of it
	// (titles, open, blockers; nil when not read), in one read of the store.
	HealthItems(ctx context.Context, projectID string, fn func(rec *enforce.Record, snap *enforce.Item)) error
	// GetCursor loads a named value (the reconciler's status of each project).
	GetCursor(ctx context.Context, name string) (string, error)
	// QueueDepth counts the jobs not finished yet; -1 when the queue's table is missing.
	QueueDepth(ctx context.Context) (int, error)
	// LastSweep is when the newest complete redelivery sweep began (zero: none yet).
	LastSweep(ctx context.Context) (time.Time, error)
	// ToolCallCounts sums the façade's tool calls counted in the minutes since a time.
	ToolCallCounts(ctx context.Context, since time.Time) ([]enforce.ToolCallCount, error)
	// ProjectVerdicts lists a project's audit entries of one verdict since a time, newest first.
	ProjectVerdicts(ctx context.Context, projectID string, v enforce.Verdict, since time.Time) ([]enforce.AuditEntry, error)
}

// Options say what a report covers and when an age becomes a finding.
type Options struct {
	// Projects are the enforced projects, reported in this order.
	Projects []enforce.ProjectRef
	// Spec is the workflow: its states in display order with their kinds, its WIP limits and
	// its initial states.
	Spec policy.Spec
	// StaleLockAfter: a lock held longer is stale (0: never).
	StaleLockAfter time.Duration
	// HumanWaitAfter: an item waiting longer in a human_gate state is a long wait (0: never).
	HumanWaitAfter time.Duration
	// Mode is each project's mode (nil: enforce); a project in warn or evaluate mode reports
	// what enforce would have reverted (modes.go).
	Mode func(owner string, number int) enforce.Mode
	// Orgs, when set, lists the organizations whose policies are read from their own
	// repositories (orgs.go): the report says which commit's policy is in force for each, and
	// reports their projects after Projects.
	Orgs func(ctx context.Context) ([]Org, error)
}

// Reader computes reports.
type Reader struct {
	src  Source
	opts Options
}

// New returns a Reader of src.
func New(src Source, opts Options) *Reader {
	return &Reader{src: src, opts: opts}
}

// Only returns a Reader of one of the configured projects (owner matched without regard to
// case); false when it is not one of them.
func (r *Reader) Only(p enforce.ProjectRef) (*Reader, bool) {
	for _, q := range r.opts.Projects {
		if strings.EqualFold(q.Owner, p.Owner) && q.Number == p.Number {
			opts := r.opts
			opts.Projects = []enforce.ProjectRef{q}
			return &Reader{src: r.src, opts: opts}, true
		}
	}
	return nil, false
}

// Projects lists the projects the reader reports on, as "owner/number".
func (r *Reader) Projects() []string {
	out := make([]string, 0, len(r.opts.Projects))
	for _, p := range r.opts.Projects {
		out = append(out, p.Owner+"/"+strconv.Itoa(p.Number))
	}
	return out
}

// ParseProject reads a project named "owner/number".
func ParseProject(s string) (enforce.ProjectRef, error) {
	owner, num, ok := strings.Cut(strings.TrimSpace(s), "/")
	n, err := strconv.Atoi(num)
	if !ok || owner == "" || err != nil || n <= 0 {
		return enforce.ProjectRef{}, fmt.Errorf("%q is not a project: want owner/number, e.g. acme/3", s)
	}
	return enforce.ProjectRef{Owner: owner, Number: n}, nil
}

// Report computes the health of every configured project at now.
func (r *Reader) Report(ctx context.Context, now time.Time) (Report, error) {
	now = now.UTC()
	rep := Report{GeneratedAt: now, Projects: make([]Project, 0, len(r.opts.Projects))}
	rt := Runtime{QueueDepth: -1}
	depth, err := r.src.QueueDepth(ctx)
	if err != nil {
		return Report{}, fmt.Errorf("health: %w", err)
	}
	rt.QueueDepth = depth
	if rt.LastSweep, err = r.src.LastSweep(ctx); err != nil {
		return Report{}, fmt.Errorf("health: %w", err)
	}
	rt.LastSweep = utc(rt.LastSweep)
	for _, ref := range r.opts.Projects {
		p, err := r.project(ctx, ref, now, rt)
		if err != nil {
			return Report{}, fmt.Errorf("health of %s/%d: %w", ref.Owner, ref.Number, err)
		}
		rep.Projects = append(rep.Projects, p)
	}
	if err := r.orgs(ctx, &rep, now, rt); err != nil {
		return Report{}, fmt.Errorf("health: %w", err)
	}
	if rep.Facade, err = r.facade(ctx, now); err != nil {
		return Report{}, fmt.Errorf("health: %w", err)
	}
	return rep, nil
}

// item is one item of a project as the report sees it: its record, its snapshot, or both.
type item struct {
	rec  *enforce.Record
	snap *enforce.Item
}

func (it item) ref(state string) ItemRef {
	ref := ItemRef{State: state}
	if it.snap != nil {
		ref.ItemID, ref.Repo, ref.Number, ref.Title, ref.URL = it.snap.ID, it.snap.Repo, it.snap.Number, it.snap.Title, it.snap.URL
	}
	if it.rec != nil {
		ref.ItemID = it.rec.ItemID
		if it.rec.Repo != "" {
			ref.Repo, ref.Number = it.rec.Repo, it.rec.IssueNumber
		}
	}
	return ref
}

// state is the item's Workflow State: the record's last legal state, which follows every
// judged webhook, else what the newest walk read.
func (it item) state() string {
	if it.rec != nil && (it.rec.LastLegalState != "" || !it.rec.LegalAt.IsZero() || it.snap == nil) {
		return it.rec.LastLegalState
	}
	return it.snap.State
}

// closed reports whether the newest walk read the item closed.
func (it item) closed() bool { return it.snap != nil && !it.snap.Open }

func (r *Reader) project(ctx context.Context, ref enforce.ProjectRef, now time.Time, rt Runtime) (Project, error) {
	p := Project{Owner: ref.Owner, Number: ref.Number, States: []StateCount{}, Unset: []ItemRef{}, Locks: []Lock{},
		HumanNeeded: []Waiting{}, Unblocked: []ItemRef{}, Hygiene: []Finding{}}
	status, err := enforce.LoadPassStatus(ctx, r.src, ref)
	if err != nil {
		return p, err
	}
	p.ID, p.SnapshotAt = status.ProjectID, utc(status.Completed)
	rt.LastReconcile = utc(status.Completed)
	if rl := status.RateLimit; rl != nil {
		rt.RateLimitKnown, rt.RateRemaining, rt.RateLimit, rt.RateReset = true, rl.Remaining, rl.Limit, utc(rl.Reset)
	}
	p.Runtime = rt
	var items []item
	if p.ID != "" {
		if items, err = r.items(ctx, p.ID, status); err != nil {
			return p, err
		}
	}
	p.Items = len(items)
	p.Mode = string(r.modeOf(ref))
	if !r.modeOf(ref).Writes() && p.ID != "" {
		if p.WouldRevert, err = r.wouldRevert(ctx, p.ID, now); err != nil {
			return p, err
		}
	}
	counts := map[string]int{}
	for _, it := range items {
		state := it.state()
		counts[state]++
		r.classify(&p, it, state, now)
	}
	for _, st := range r.opts.Spec.States {
		sc := StateCount{Name: st.Name, Kind: st.Kind, Count: counts[st.Name]}
		if limit, ok := r.opts.Spec.Gates.WIPLimits[st.Name]; ok {
			sc.Limit, sc.Over = limit, sc.Count > limit
		}
		p.States = append(p.States, sc)
	}
	byItem := func(a, b ItemRef) int {
		return cmp.Or(strings.Compare(a.Repo, b.Repo), cmp.Compare(a.Number, b.Number), strings.Compare(a.ItemID, b.ItemID))
	}
	slices.SortFunc(p.Unset, byItem)
	slices.SortFunc(p.Unblocked, byItem)
	slices.SortFunc(p.Locks, func(a, b Lock) int { return cmp.Or(earliest(a.Since, b.Since), byItem(a.Item, b.Item)) })
	slices.SortFunc(p.HumanNeeded, func(a, b Waiting) int { return cmp.Or(earliest(a.Since, b.Since), byItem(a.Item, b.Item)) })
	p.Hygiene = r.hygiene(p)
	return p, nil
}

// earliest orders known times oldest first, and unknown (zero) ones after them.
func earliest(a, b time.Time) int {
	switch {
	case a.IsZero() && b.IsZero():
		return 0
	case a.IsZero():
		return 1
	case b.IsZero():
		return -1
	}
	return a.Compare(b)
}

// items joins a project's records and snapshot. Once a walk has read the whole project, a
// record the snapshot lacks counts only when it changed after that walk began (an item added
// since); an older one belongs to an item that left the project. Archived items are left out.
func (r *Reader) items(ctx context.Context, projectID string, status enforce.PassStatus) ([]item, error) {
	var out []item
	err := r.src.HealthItems(ctx, projectID, func(rec *enforce.Record, snap *enforce.Item) {
		switch {
		case snap != nil && snap.Archived:
		case snap == nil && !status.Completed.IsZero() && rec.UpdatedAt.Before(status.CompletedFrom):
		default:
			out = append(out, item{rec: rec, snap: snap})
		}
	})
	return out, err
}

// classify files one item under the lists it belongs to.
func (r *Reader) classify(p *Project, it item, state string, now time.Time) {
	if state == "" {
		p.Unset = append(p.Unset, it.ref(state))
	}
	if it.rec != nil && it.rec.LockHolder != "" {
		l := Lock{Item: it.ref(state), Holder: it.rec.LockHolder, Since: utc(it.rec.LockSince)}
		l.Age = since(now, l.Since)
		l.Stale = r.opts.StaleLockAfter > 0 && !l.Since.IsZero() && l.Age > r.opts.StaleLockAfter
		ttl := r.opts.Spec.Locks.TTL
		l.Expired = ttl > 0 && !l.Since.IsZero() && l.Age > ttl
		p.Locks = append(p.Locks, l)
	}
	kind := r.kind(state)
	if kind == policy.HumanGate.String() && !it.closed() {
		w := Waiting{Item: it.ref(state)}
		if it.rec != nil && it.rec.LastLegalState == state {
			w.Since = utc(it.rec.LegalAt)
		}
		w.Age = since(now, w.Since)
		w.Long = r.opts.HumanWaitAfter > 0 && !w.Since.IsZero() && w.Age > r.opts.HumanWaitAfter
		p.HumanNeeded = append(p.HumanNeeded, w)
	}
	if kind == policy.Queue.String() && it.snap != nil && it.snap.Open && it.snap.Blockers > 0 && it.snap.OpenBlockers == 0 {
		p.Unblocked = append(p.Unblocked, it.ref(state))
	}
}

// kind is a state's kind ("" for a state the workflow does not have).
func (r *Reader) kind(state string) string {
	for _, st := range r.opts.Spec.States {
		if st.Name == state {
			return st.Kind
		}
	}
	return ""
}

func since(now, t time.Time) time.Duration {
	if t.IsZero() || t.After(now) {
		return 0
	}
	return now.Sub(t)
}

// utc keeps the zero time zero and every other time in UTC, so both ways of reading a report
// (JSON on the command line, the MCP tool) print the same.
func utc(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC()
}
