package enforce

import (
	"cmp"
	"container/heap"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ralph-gate/ralph-gate/internal/oracle"
	"github.com/ralph-gate/ralph-gate/marker"
	"github.com/ralph-gate/ralph-gate/policy"
)

// This file is the world the history suites run in: a board that can fail, GitHub's delivery
// log with its faults (dropped, duplicated, late deliveries; redelivery on request), a
// virtual clock, and the app (Service) processing each delivery as its job would. Everything
// runs on one goroutine in virtual time, so a seed replays exactly.

// simMove is one move of a history, with the faults of its webhook.
type simMove struct {
	Item    int           `json:"item"`
	Actor   string        `json:"actor"`
	To      string        `json:"to"`
	After   time.Duration `json:"after"`   // after the previous move
	Drop    bool          `json:"drop"`    // the delivery fails (GitHub lists it; redeliverable)
	Dup     bool          `json:"dup"`     // delivered twice
	Latency time.Duration `json:"latency"` // from the change to its delivery
	// Kind is what the actor does: move the card (""), close or reopen the item's issue
	// (its webhook has the move's faults), or hand the item off through the façade
	// (handoff_ticket with Command and To as to_state), advance the item's children, or claim
	// the best issue in state To (pick_actionable_issue).
	Kind    string `json:"kind,omitempty"`
	Command string `json:"command,omitempty"`
	// NoFrom: the card move's report carries no previous value (GitHub marks
	// changes.field_value.from optional).
	NoFrom bool `json:"no_from,omitempty"`
}

// The kinds of simMove besides a card move.
const (
	simClose   = "close"
	simReopen  = "reopen"
	simMerge   = "merge" // a pull request that closes the item's issue is merged
	simHandoff = "handoff"
	simAdvance = "advance" // advance_children of the item to To
	simClaim   = "claim"   // pick_actionable_issue with claim: true, in state To, for Command
	simEdit    = "edit"    // the item's Estimate set to To ("" clears it)
)

// simPR is the number of the pull request that closes issue n.
const simPR = 1000

// simHistory is a generated history: the items' first states and the moves.
type simHistory struct {
	Seed  uint64    `json:"seed"` // drives crashes and redelivery failures
	Items []string  `json:"items"`
	Moves []simMove `json:"moves"`
	// Crash is the chance that any one write (to GitHub or the store) fails mid-way.
	Crash float64 `json:"crash"`
	// Together has each completed sweep judge the items it released together
	// (Options.BatchJudge, as the app does), besides their jobs.
	Together bool `json:"together,omitempty"`
	// Parents makes families: Parents[i] is item i's parent (an index), -1 for none. Missing:
	// no item has a parent.
	Parents []int `json:"parents,omitempty"`
	// Mode is the project's mode (Options.Mode): "" and enforce revert, warn and evaluate
	// leave refused moves standing.
	Mode Mode `json:"mode,omitempty"`
	// Estimates, when set, are the items' Estimate values ("" none) before the history (its
	// edits, simEdit, change them), and the workflow has requirements on them
	// (simRequirements).
	Estimates []string `json:"estimates,omitempty"`
	// Races is the chance that a guarded write which passed its guard has someone's move land
	// before it (GitHub has no conditional write: simWorld.race).
	Races float64 `json:"races,omitempty"`
	// Pushes are pushes of the organization's policy file during the history: each change is
	// judged by the policy in force when it was made (Options.Policies).
	Pushes []simPush `json:"pushes,omitempty"`
	// WriteOutcomes, when set, says how each of the app's writes to a card ends, in order
	// (writeLanded, writeFailed, writeAnswerLost, writeRaced; landed past the list), in place
	// of Crash's and Races' chances.
	WriteOutcomes []string `json:"write_outcomes,omitempty"`
	// Replicas: two replicas share the store, the board and the sweeper; each delivery's
	// intake, each job, each façade call is served by one of them, drawn at random, and each
	// completed sweep has both judge what they hold waiting.
	Replicas bool `json:"replicas,omitempty"`
}

// How a write of the app's ends (simHistory.WriteOutcomes).
const (
	writeLanded     = ""
	writeFailed     = "failed"      // not made
	writeAnswerLost = "answer-lost" // made, its answer lost
	writeRaced      = "raced"       // made, someone's move landing between its read and it
)

// simPush is a push of the organization's policy file: in force from the second after At
// (InForceFrom), the workflow widened or not, in a mode.
type simPush struct {
	At time.Duration `json:"at"` // after the history's start
	// Wide lets Backlog go straight to In Progress, and makes agent-2 a bypass login.
	Wide bool `json:"wide,omitempty"`
	Mode Mode `json:"mode,omitempty"` // "": enforce
}

// simPolicy is a policy of the history's organization, in force from a time.
type simPolicy struct {
	from   time.Time
	m      *policy.Machine
	actors policy.Actors
	mode   Mode
}

// simPolicies is the history's policies, oldest first: the one it starts under, then each
// push's (enforce.Policies, and the oracle's PolicyAt).
type simPolicies []simPolicy

func (p simPolicies) at(t time.Time) simPolicy {
	for i := len(p) - 1; i > 0; i-- {
		if !p[i].from.After(t) {
			return p[i]
		}
	}
	return p[0]
}

func (p simPolicies) Of(_ string, at time.Time) (*policy.Machine, policy.Actors, bool) {
	sp := p.at(at)
	return sp.m, sp.actors, true
}

func (p simPolicies) Mode(_ string, _ int, at time.Time) (Mode, bool) { return p.at(at).mode, true }

// policies is the history's policies: m and actors in its mode, then each push's.
func (h simHistory) policies(m *policy.Machine, actors policy.Actors) simPolicies {
	out := simPolicies{{m: m, actors: actors, mode: cmp.Or(h.Mode, ModeEnforce)}}
	for _, p := range h.Pushes {
		sp := simPolicy{from: InForceFrom(simT0.Add(p.At)), m: m, actors: actors, mode: cmp.Or(p.Mode, ModeEnforce)}
		if p.Wide {
			spec := m.Spec()
			for i := range spec.States {
				if spec.States[i].Name == "Backlog" {
					spec.States[i].Next = append(slices.Clone(spec.States[i].Next), "In Progress")
				}
			}
			wm, problems := policy.Compile(spec)
			if len(problems) > 0 {
				panic(fmt.Sprint(problems))
			}
			sp.m = wm
			sp.actors.Bypass = append(slices.Clone(actors.Bypass), "agent-2")
		}
		out = append(out, sp)
	}
	return out
}

// simRequirements are the requirements a history with Estimates runs under: an agent needs an
// Estimate to enter Ready for Plan, anyone to enter In Progress, and an agent a merged pull
// request to enter Done. An issue has a merged pull request from its first merge on (simMerge).
var simRequirements = []policy.Requirement{
	{Into: []string{"Ready for Plan"}, Fields: []string{"Estimate"}},
	{Into: []string{"In Progress"}, Fields: []string{"Estimate"}, For: []string{"agent", "human"}},
	{Into: []string{"Done"}, PullRequest: policy.PullRequestMerged},
}

// machineFor is the machine a history runs under: m, or m's spec with simRequirements.
func machineFor(m *policy.Machine, h simHistory) *policy.Machine {
	if len(h.Estimates) == 0 {
		return m
	}
	spec := m.Spec()
	spec.Requirements = simRequirements
	rm, problems := policy.Compile(spec)
	if len(problems) > 0 {
		panic(fmt.Sprint(problems))
	}
	return rm
}

// fieldsOf is item i's field values as the board reads them (nil without requirements).
func (h simHistory) fieldsOf(i int) map[string]string {
	if len(h.Estimates) == 0 {
		return nil
	}
	return map[string]string{"Estimate": h.Estimates[i]}
}

// parentOf is item i's parent, -1 for none.
func (h simHistory) parentOf(i int) int {
	if i < len(h.Parents) {
		return h.Parents[i]
	}
	return -1
}

// childrenOf lists item i's sub-issues, in order.
func (h simHistory) childrenOf(i int) []int {
	var out []int
	for c := range h.Items {
		if h.parentOf(c) == i {
			out = append(out, c)
		}
	}
	return out
}

type simDelivery struct {
	id        string
	ch        Change
	ev        *Lifecycle // an issue closed or reopened (then ch is unused)
	delivered bool       // GitHub recorded a successful attempt
	first     time.Time  // when it first reached the app (zero: never)
}

// simBoard is the board: items, values with their change times, comments, every app write.
type simBoard struct {
	mu       sync.Mutex
	w        *simWorld
	items    map[string]Item
	updated  map[string]time.Time // by item id: when its state or a field last changed
	comments map[string][]Comment // by content id
	bodies   map[string]string    // by comment id
	n        int
	// requests counts the app's GitHub requests, as GitHub would: a read of up to 100 items,
	// a mutation of up to 50 writes, a comment, a family.
	requests int
}

func (b *simBoard) request(n int) {
	b.mu.Lock()
	b.requests += n
	b.mu.Unlock()
}

func (b *simBoard) fail(op string) error {
	if b.w.crashing && b.w.rng.Float64() < b.w.h.Crash {
		b.w.crashes++
		b.w.trace("crash before %s", op)
		return fmt.Errorf("%s: %w", op, errInjected)
	}
	return nil
}

// lostAnswer: GitHub did the write, but its answer never reached the app.
func (b *simBoard) lostAnswer(op string) error {
	if b.w.crashing && b.w.rng.Float64() < b.w.h.Crash {
		b.w.crashes++
		b.w.trace("crash after %s", op)
		return fmt.Errorf("%s (answer lost): %w", op, errInjected)
	}
	return nil
}

func (b *simBoard) Item(_ context.Context, id string) (Item, error) {
	b.request(1)
	return b.item(id)
}

func (b *simBoard) item(id string) (Item, error) {
	if err := b.fail("read item"); err != nil {
		return Item{}, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.items[id], nil
}

// Items implements ItemsReader: one read of several items (each may fail on its own).
func (b *simBoard) Items(_ context.Context, ids []string) ([]Item, []error) {
	b.request((len(ids) + 99) / 100)
	items, errs := make([]Item, len(ids)), make([]error, len(ids))
	for i, id := range ids {
		items[i], errs[i] = b.item(id)
	}
	return items, errs
}

func (b *simBoard) SetState(_ context.Context, it Item, state string) error {
	b.request(1)
	return b.setState(it, state)
}

func (b *simBoard) setState(it Item, state string) error {
	if outcome, ok := b.w.nextWriteOutcome(); ok {
		// The history says how each write of the app's ends (exhaustive checks).
		switch outcome {
		case writeFailed:
			b.w.trace("crash before set state")
			return fmt.Errorf("set state: %w", errInjected)
		case writeAnswerLost:
			b.w.appWrite(it.ID, state)
			b.w.trace("crash after set state")
			return fmt.Errorf("set state (answer lost): %w", errInjected)
		}
		b.w.appWrite(it.ID, state)
		return nil
	}
	if err := b.fail("set state"); err != nil {
		return err
	}
	b.w.appWrite(it.ID, state)
	return b.lostAnswer("set state")
}

// nextWriteOutcome is how the app's next write to a card ends when the history says
// (WriteOutcomes, whether faults are still on or not); false when it is left to chance.
func (w *simWorld) nextWriteOutcome() (string, bool) {
	if w.h.WriteOutcomes == nil {
		return "", false
	}
	k := w.writesMade
	w.writesMade++
	if k < len(w.h.WriteOutcomes) {
		return w.h.WriteOutcomes[k], true
	}
	return writeLanded, true
}

func (b *simBoard) AddComment(_ context.Context, subject, body string) (Comment, error) {
	b.request(1)
	if err := b.fail("add comment"); err != nil {
		return Comment{}, err
	}
	b.mu.Lock()
	b.n++
	c := Comment{ID: fmt.Sprintf("IC_%d", b.n), DatabaseID: int64(b.n)}
	b.comments[subject] = append(b.comments[subject], c)
	b.bodies[c.ID] = body
	b.mu.Unlock()
	if err := b.lostAnswer("add comment"); err != nil {
		return Comment{}, err
	}
	return c, nil
}

func (b *simBoard) UpdateComment(_ context.Context, id, body string) error {
	b.request(1)
	if err := b.fail("update comment"); err != nil {
		return err
	}
	b.mu.Lock()
	b.bodies[id] = body
	b.mu.Unlock()
	return b.lostAnswer("update comment")
}

func (b *simBoard) FindComment(_ context.Context, subject, contains string) (Comment, bool, error) {
	b.request(1)
	if err := b.fail("find comment"); err != nil {
		return Comment{}, false, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, c := range b.comments[subject] {
		if strings.Contains(b.bodies[c.ID], contains) {
			return c, true, nil
		}
	}
	return Comment{}, false, nil
}

// Family reads an issue's parent and sub-issues with their values (one request, as a family
// of fewer than 100 sub-issues is on GitHub).
func (b *simBoard) Family(_ context.Context, issueID, _ string) (Family, error) {
	b.request(1)
	if err := b.fail("read family"); err != nil {
		return Family{}, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := range b.w.h.Items {
		it := b.items[simItemID(i)]
		if it.ContentID != issueID {
			continue
		}
		f := Family{Self: b.relative(i)}
		if p := b.w.h.parentOf(i); p >= 0 {
			r := b.relative(p)
			f.Parent = &r
		}
		for _, c := range b.w.h.childrenOf(i) {
			f.Children = append(f.Children, b.relative(c))
		}
		return f, nil
	}
	return Family{}, nil
}

func (b *simBoard) relative(i int) Relative {
	it := b.items[simItemID(i)]
	return Relative{IssueID: it.ContentID, Number: it.Number, Title: it.Title, Repo: it.Repo, ItemID: it.ID, State: it.State,
		StateUpdatedAt: it.StateUpdatedAt, Open: it.Open, SubIssues: it.SubIssues, IssueEvents: it.IssueEvents, Fields: it.Fields,
		MergedPR: it.MergedPR, MergedAt: it.MergedAt, UpdatedAt: b.updated[it.ID]}
}

// timeline adds a close or reopen to an issue's latest ones, as the app reads them (the last
// three).
func timeline(evs []IssueEvent, ev IssueEvent) []IssueEvent {
	evs = append(slices.Clone(evs), ev)
	return evs[max(0, len(evs)-3):]
}

// SetStatesIf reads up to 100 items per request and writes up to 50 per request, each only
// where its guard lets it on the card as read.
func (b *simBoard) SetStatesIf(ctx context.Context, ws []StateWrite) []error {
	b.request((len(ws) + 99) / 100)
	errs := make([]error, len(ws))
	written := 0
	for i, w := range ws {
		b.mu.Lock()
		cur := b.items[w.Item.ID]
		b.mu.Unlock()
		if errs[i] = w.Guard(ctx, cur); errs[i] != nil {
			continue
		}
		b.w.race(w.Item.ID)
		written++
		errs[i] = b.setState(w.Item, w.State)
		b.w.raced = false
	}
	b.request((written + 49) / 50)
	return errs
}

func (b *simBoard) RateLimit() (RateLimit, bool) { return RateLimit{}, false }

// IssueItems lists the issue's items (one request).
func (b *simBoard) IssueItems(_ context.Context, _, _ string, number int) ([]Item, error) {
	b.request(1)
	if err := b.fail("read issue items"); err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, it := range b.items {
		if it.Number == number {
			return []Item{it}, nil
		}
	}
	return nil, nil
}

// ProjectItems lists the project's items: the family's, on one page (one request).
func (b *simBoard) ProjectItems(context.Context, string, int, string) (ItemsPage, error) {
	b.request(1)
	if err := b.fail("read project items"); err != nil {
		return ItemsPage{}, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	page := ItemsPage{Total: len(b.w.h.Items)}
	for i := range b.w.h.Items {
		page.Items = append(page.Items, b.items[simItemID(i)])
	}
	return page, nil
}

// SetIssueOpen reopens or closes an issue (GitHub sends no lifecycle webhook the app acts on
// for its own: the app's undo is no one's move).
func (b *simBoard) SetIssueOpen(_ context.Context, issueID string, open bool, _ string) error {
	b.request(1)
	if err := b.fail("set issue open"); err != nil {
		return err
	}
	b.mu.Lock()
	for id, it := range b.items {
		if it.ContentID == issueID && it.Open != open {
			it.Open = open
			// (GraphQL names a bot by its slug, without "[bot]".)
			it.IssueEvents = timeline(it.IssueEvents, IssueEvent{Closed: !open,
				Actor: strings.TrimSuffix(b.w.svc.Automation.opts.AppLogin, "[bot]"), At: b.w.now.Truncate(time.Second)})
			b.items[id] = it
		}
	}
	b.mu.Unlock()
	b.w.trace("app sets %s open=%v", issueID, open)
	return b.lostAnswer("set issue open")
}

// ClosingIssues names the issue the pull request closes (simPR + its number; one request).
func (b *simBoard) ClosingIssues(_ context.Context, owner, repo string, number int) ([]IssueRef, error) {
	b.request(1)
	if err := b.fail("read closing issues"); err != nil {
		return nil, err
	}
	return []IssueRef{{Owner: owner, Repo: repo, Number: number - simPR}}, nil
}

// event is one thing that happens at a moment of virtual time.
type event struct {
	at  time.Time
	seq int
	run func()
}

type eventQueue []*event

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	if !q[i].at.Equal(q[j].at) {
		return q[i].at.Before(q[j].at)
	}
	return q[i].seq < q[j].seq
}
func (q eventQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *eventQueue) Push(x any)   { *q = append(*q, x.(*event)) }
func (q *eventQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// simWorld runs one history.
type simWorld struct {
	h        simHistory
	now      time.Time
	rng      *rand.Rand
	q        eventQueue
	seq      int
	board    *simBoard
	st       *memStore
	svc      *Service
	or       *oracle.Oracle
	dels     []*simDelivery
	crashing bool // faults are on (the history is still being made)
	// sweeps
	sweepQueued, sweepAgain bool
	proof                   policy.SweepProof
	sweeps                  int
	// what went wrong, and the trace that led there
	problems []string
	traceLog []string
	jobRuns  int
	m        *policy.Machine
	actors   policy.Actors
	// moves are the history's moves in true order; orderAmbiguous is set once two moves of a
	// family are made in one second (their order cannot be told from GitHub's reports).
	moves          []oracle.ItemMove
	orderAmbiguous bool
	// ownWrites and crashes count the app's writes to the board and the faults injected.
	ownWrites, crashes int
	together           int  // items judged together when a sweep completed
	ticking            bool // the sweep ticker is armed
	// handing is set while a handoff is served: the app's writes meanwhile (heldWrites: item,
	// before, after) are checked once the handoff is in the true history; handoffs lists the
	// handoffs the app made.
	handing    bool
	replicas   []*Service        // the replicas (simHistory.Replicas); w.svc is the one serving now
	heldSteps  []oracle.ItemMove // moves that raced a façade call's writes (step), and those writes
	racedCall  map[string]bool   // the items a write of the façade call under way raced on
	heldWrites [][3]string
	handoffs   []oracle.ItemMove
	made       map[string]int // façade moves the app made, by kind (simHandoff, simAdvance, simClaim)
	// provisional counts the provisional reverts the true history confirmed (true) and
	// withdrew (false).
	provisional map[bool]int
	claimTries  int // candidates claims tried beyond their first
	// extraEvents counts the reported events a move made besides its own (a merge's close).
	extraEvents int
	// races counts the moves that landed between a guarded write's read and the write
	// (simHistory.Races); raced is set until that write is made (it lands over the move).
	races         int
	racing, raced bool
	writesMade    int                  // the app's writes to cards so far (WriteOutcomes)
	racedAt       map[string]time.Time // each item's last second a write of it raced
	// queued are the lifecycle deliveries whose job is queued (once per delivery).
	queued map[string]bool
}

var simT0 = time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)

const (
	simWindow   = 2 * time.Second        // delivery window (enforcement.reorder_window)
	simSweepRTT = 300 * time.Millisecond // a sweep's list + redeliver + confirm
)

func newSimWorld(m *policy.Machine, actors policy.Actors, h simHistory) *simWorld {
	w := &simWorld{h: h, now: simT0, rng: rand.New(rand.NewPCG(h.Seed, h.Seed^0x5eed)), st: newMemStore(), crashing: true,
		proof: policy.SweepProof{Available: true}}
	w.board = &simBoard{w: w, items: map[string]Item{}, updated: map[string]time.Time{}, comments: map[string][]Comment{}, bodies: map[string]string{}}
	w.m, w.actors = machineFor(m, h), actors
	m = w.m
	w.or = w.newOracle()
	for i, s := range h.Items {
		id := simItemID(i)
		it := Item{ID: id, ProjectID: "PVT_1", ProjectNumber: 1, Owner: "acme", ContentType: ContentIssue,
			ContentID: "I_" + id, Number: i + 1, Repo: "acme/app", Title: id, Open: true, State: s, StateUpdatedAt: simT0.Add(-time.Hour),
			SubIssues: len(h.childrenOf(i)), Fields: h.fieldsOf(i)}
		if p := h.parentOf(i); p >= 0 {
			it.ParentID, it.ParentNumber = "I_"+simItemID(p), p+1
		}
		w.board.items[id] = it
		// Installed on an existing board: every item adopted as it is, its required fields
		// with it.
		rec := storeItem(id, s, simT0.Add(-time.Hour))
		for k, v := range h.fieldsOf(i) {
			if rec.Fields == nil {
				rec.Fields = map[string]FieldValue{}
			}
			rec.Fields[k] = FieldValue{Value: v}
		}
		w.st.items[id] = rec
	}
	w.st.fail = func(op string) error {
		if w.crashing && w.rng.Float64() < h.Crash {
			w.crashes++
			w.trace("crash in the store (%s)", op)
			return fmt.Errorf("%s: %w", op, errInjected)
		}
		return nil
	}
	opts := DefaultOptions()
	opts.ReorderWindow, opts.AppLogin, opts.Redeliveries, opts.Observer = simWindow, "ralph-gate[bot]", w, w
	// One walker at a time: the simulated world runs one event at a time.
	opts.BatchJudge, opts.BatchWalkers = h.Together, 1
	if h.Together {
		opts.Boards = func(context.Context, int64, string) (Board, error) { return w.board, nil }
	}
	opts.Mode = func(string, int) Mode { return h.Mode }
	if len(h.Pushes) > 0 {
		opts.Policies = h.policies(m, actors)
	}
	w.svc = New(m, actors, w.st, func() time.Time { return w.now }, opts)
	w.svc.Enforcer.inline = true
	w.replicas = []*Service{w.svc}
	if h.Replicas {
		other := New(m, actors, w.st, func() time.Time { return w.now }, opts)
		other.Enforcer.inline = true
		w.replicas = append(w.replicas, other)
	}
	return w
}

// serve has one of the replicas serve what comes next (drawn at random when there are two):
// it becomes w.svc.
func (w *simWorld) serve() {
	if len(w.replicas) > 1 {
		w.svc = w.replicas[w.rng.IntN(len(w.replicas))]
	}
}

// newOracle is an oracle that has seen the items' first states, and knows their families.
func (w *simWorld) newOracle() *oracle.Oracle {
	h := w.h
	or := oracle.New(w.m, w.actors)
	st := DefaultLifecycleStates()
	or.MergeVia = map[string]string{st.InProgress: st.InReview}
	or.MergeTo = map[string]string{st.InProgress: st.InReview, st.InReview: st.Done}
	or.IssueClosed = func(item string) bool {
		w.board.mu.Lock()
		defer w.board.mu.Unlock()
		return !w.board.items[item].Open
	}
	if len(h.Parents) > 0 {
		or.Family = func(item string) (string, []string) {
			i := simItemIndex(item)
			parent := ""
			if p := h.parentOf(i); p >= 0 {
				parent = simItemID(p)
			}
			var children []string
			for _, c := range h.childrenOf(i) {
				children = append(children, simItemID(c))
			}
			return parent, children
		}
		// The convergence gate's group: the siblings, or a parent's own sub-issues.
		or.GroupOf = func(item string) []string {
			parent, children := or.Family(item)
			if parent == "" {
				return children
			}
			_, siblings := or.Family(parent)
			return slices.DeleteFunc(slices.Clone(siblings), func(s string) bool { return s == item })
		}
	}
	or.Stands, or.Silent = !h.Mode.Writes(), h.Mode == ModeEvaluate
	if len(h.Pushes) > 0 {
		pols := h.policies(w.m, w.actors)
		or.PolicyAt = func(t time.Time) oracle.Policy {
			sp := pols.at(t)
			return oracle.Policy{M: sp.m, Actors: sp.actors, Stands: !sp.mode.Writes(), Silent: sp.mode == ModeEvaluate}
		}
	}
	if len(h.Estimates) > 0 {
		or.FieldsOf = func(item string) map[string]string { return h.fieldsOf(simItemIndex(item)) }
	}
	for i, s := range h.Items {
		or.Start(simItemID(i), s)
	}
	return or
}

func simItemID(i int) string { return fmt.Sprintf("PVTI_%d", i) }

func simItemIndex(id string) int {
	i, _ := strconv.Atoi(strings.TrimPrefix(id, "PVTI_"))
	return i
}

func (w *simWorld) trace(format string, args ...any) {
	w.traceLog = append(w.traceLog, fmt.Sprintf("%8s ", w.now.Sub(simT0).Round(time.Millisecond))+fmt.Sprintf(format, args...))
}

func (w *simWorld) problem(format string, args ...any) {
	w.problems = append(w.problems, fmt.Sprintf(format, args...))
}

func (w *simWorld) at(t time.Time, run func()) {
	w.seq++
	heap.Push(&w.q, &event{at: t, seq: w.seq, run: run})
}

// run plays the history and lets the app settle; it returns the problems found.
func (w *simWorld) run() []string {
	t := w.now
	for i, mv := range w.h.Moves {
		t = t.Add(mv.After)
		i, mv := i, mv
		w.at(t, func() { w.move(i, mv) })
	}
	end := t
	for _, p := range w.h.Pushes {
		w.at(simT0.Add(p.At), func() {
			w.trace("push of the policy: wide=%v mode=%q, in force from %s", p.Wide, p.Mode, InForceFrom(simT0.Add(p.At)).Sub(simT0))
		})
	}
	w.at(end.Add(time.Millisecond), func() {
		w.crashing = false // deliveries and writes stop failing: now the board must converge
		w.trace("faults stop")
	})
	w.periodicSweep(simT0.Add(15 * time.Second))
	limit := end.Add(10 * time.Minute)
	for w.q.Len() > 0 {
		e := heap.Pop(&w.q).(*event)
		if e.at.After(limit) {
			w.problem("not settled 10 minutes after the last move")
			break
		}
		if e.at.After(w.now) {
			w.now = e.at
		}
		e.run()
	}
	w.check()
	return w.problems
}

// move makes one move on the board and sends its webhook with the move's faults.
func (w *simWorld) move(i int, mv simMove) {
	switch mv.Kind {
	case simClose, simReopen:
		w.lifecycle(i, mv)
		return
	case simMerge:
		w.merge(i, mv)
		return
	case simHandoff:
		w.handoff(i, mv)
		return
	case simAdvance:
		w.advance(i, mv)
		return
	case simClaim:
		w.claim(i, mv)
		return
	case simEdit:
		w.edit(i, mv)
		return
	}
	id := simItemID(mv.Item)
	w.board.mu.Lock()
	it := w.board.items[id]
	from := it.State
	if from == mv.To {
		w.board.mu.Unlock()
		w.trace("move d%02d: %s leaves %s as it is (GitHub reports no change)", i, mv.Actor, orNoState(from))
		return
	}
	it.State, it.StateUpdatedAt = mv.To, w.now.Truncate(time.Second)
	w.board.items[id], w.board.updated[id] = it, w.now.Truncate(time.Second)
	w.board.mu.Unlock()
	d := &simDelivery{id: fmt.Sprintf("d%02d", i), ch: Change{ItemID: id, ProjectID: "PVT_1", ProjectNumber: 1, Owner: "acme",
		ContentType: ContentIssue, FromKnown: !mv.NoFrom, To: mv.To, Actor: mv.Actor, At: w.now.Truncate(time.Second)}}
	if !mv.NoFrom {
		d.ch.From = from
	}
	d.ch.DeliveryID = d.id
	w.dels = append(w.dels, d)
	w.step(id, oracle.Move{From: from, To: mv.To, Actor: mv.Actor, Delivery: d.id, At: d.ch.At, NoFrom: mv.NoFrom})
	w.trace("move %s: %s %s → %s (%s)%s", d.id, mv.Actor, orNoState(from), orNoState(mv.To), id, faultsOf(mv))
	w.send(d, mv)
}

// race makes, with the history's Races chance, someone's move of the item land between a
// guarded write's read and the write (GitHub has no conditional write): a move of the true
// history, reported as any, that the write then lands over. The write's report tells the app
// what it wrote over.
func (w *simWorld) race(id string) {
	if w.h.WriteOutcomes != nil {
		if k := w.writesMade; k >= len(w.h.WriteOutcomes) || w.h.WriteOutcomes[k] != writeRaced {
			return
		}
	} else if w.h.Races == 0 || !w.crashing || w.racedAt[id].Equal(w.now.Truncate(time.Second)) || w.rng.Float64() >= w.h.Races {
		// (Not twice on one item in one second: the app knows only its last write's.)
		return
	}
	if w.racedAt == nil {
		w.racedAt = map[string]time.Time{}
	}
	w.racedAt[id] = w.now.Truncate(time.Second)
	if w.handing {
		w.racedCall[id] = true
	}
	actor := simActors[w.rng.IntN(len(simActors)-1)]
	states := w.m.States()
	to := states[w.rng.IntN(len(states))]
	if next := w.m.AllowedNext(w.or.Legal[id], w.actors.Classify(actor)); len(next) > 0 && w.rng.Float64() < 0.7 {
		to = next[w.rng.IntN(len(next))]
	}
	w.races++
	w.trace("race: a move of %s lands before the app's guarded write", id)
	w.racing = true
	w.move(900+w.races, simMove{Item: simItemIndex(id), Actor: actor, To: to, Latency: time.Duration(5+w.rng.IntN(40)) * time.Millisecond})
	w.racing = false
	w.raced = true
}

// edit sets the item's Estimate and sends its webhook (a projects_v2_item edit of the field)
// with the move's faults: in the true history, a change of the value its later moves are
// checked against.
func (w *simWorld) edit(i int, mv simMove) {
	id := simItemID(mv.Item)
	w.board.mu.Lock()
	it := w.board.items[id]
	from := it.Fields["Estimate"]
	if from == mv.To {
		w.board.mu.Unlock()
		w.trace("edit d%02d: %s leaves the Estimate of %s as it is (GitHub reports no change)", i, mv.Actor, id)
		return
	}
	it.Fields = maps.Clone(it.Fields)
	it.Fields["Estimate"] = mv.To
	w.board.items[id], w.board.updated[id] = it, w.now.Truncate(time.Second)
	w.board.mu.Unlock()
	at := w.now.Truncate(time.Second)
	d := &simDelivery{id: fmt.Sprintf("d%02d", i), ch: Change{ItemID: id, ProjectID: "PVT_1", ProjectNumber: 1, Owner: "acme",
		ContentType: ContentIssue, FromKnown: true, From: from, To: mv.To, Actor: mv.Actor, At: at, Field: "Estimate"}}
	d.ch.DeliveryID = d.id
	w.dels = append(w.dels, d)
	w.step(id, oracle.Move{From: from, To: mv.To, Actor: mv.Actor, Delivery: d.id, At: at, Field: "Estimate"})
	w.trace("edit %s: %s sets the Estimate of %s %q → %q%s", d.id, mv.Actor, id, from, mv.To, faultsOf(mv))
	w.send(d, mv)
}

// send delivers a webhook with the move's faults: dropped (GitHub lists it as failed),
// duplicated, late.
func (w *simWorld) send(d *simDelivery, mv simMove) {
	if !mv.Drop {
		w.at(w.now.Add(mv.Latency), func() { w.deliver(d) })
	}
	if mv.Dup {
		w.at(w.now.Add(mv.Latency+mv.Latency/2+time.Millisecond), func() { w.deliver(d) })
	}
}

// lifecycle closes or reopens the item's issue and sends its webhook with the move's faults:
// in the true history, the actor's move of the card to Done or Backlog.
func (w *simWorld) lifecycle(i int, mv simMove) {
	id := simItemID(mv.Item)
	closing := mv.Kind == simClose
	w.board.mu.Lock()
	it := w.board.items[id]
	if it.Open != closing {
		w.board.mu.Unlock()
		w.trace("move d%02d: %s finds the issue of %s %s already (GitHub reports nothing)", i, mv.Actor, id, map[bool]string{true: "closed", false: "open"}[closing])
		return
	}
	it.Open = !closing
	it.IssueEvents = timeline(it.IssueEvents, IssueEvent{Closed: closing, Actor: mv.Actor, At: w.now.Truncate(time.Second)})
	w.board.items[id] = it
	w.board.mu.Unlock()
	kind, to := LifecycleIssueReopened, w.svc.Automation.opts.States.Reopened
	if closing {
		kind, to = LifecycleIssueClosed, w.svc.Automation.opts.States.Done
	}
	d := &simDelivery{id: fmt.Sprintf("d%02d", i), ev: &Lifecycle{Kind: kind, Owner: "acme", Repo: "app", Number: it.Number,
		StateReason: map[bool]string{true: "completed"}[closing], Actor: mv.Actor, At: w.now.Truncate(time.Second)}}
	om := oracle.Move{From: it.State, To: to, Actor: mv.Actor, At: d.ev.At, Lifecycle: map[bool]string{true: oracle.LifecycleClose, false: oracle.LifecycleReopen}[closing]}
	w.sendEvent(id, d, om, mv)
}

// sendEvent records a lifecycle event in the true history and sends its webhook with the
// move's faults.
func (w *simWorld) sendEvent(id string, d *simDelivery, om oracle.Move, mv simMove) {
	d.ev.DeliveryID, om.Delivery = d.id, d.id
	w.dels = append(w.dels, d)
	w.step(id, om)
	w.trace("move %s: %s %s (%s)%s", d.id, mv.Actor, d.ev.Kind, id, faultsOf(mv))
	w.send(d, mv)
}

// merge merges the pull request that closes the item's issue: GitHub closes the issue (the
// merger's close, when it is open) and reports the merge; each webhook has the move's faults.
func (w *simWorld) merge(i int, mv simMove) {
	id := simItemID(mv.Item)
	w.board.mu.Lock()
	it := w.board.items[id]
	wasOpen := it.Open
	it.Open = false
	if !it.MergedPR {
		it.MergedPR, it.MergedAt = true, w.now.Truncate(time.Second)
	}
	if wasOpen {
		it.IssueEvents = timeline(it.IssueEvents, IssueEvent{Closed: true, Actor: mv.Actor, At: w.now.Truncate(time.Second)})
	}
	w.board.items[id] = it
	w.board.mu.Unlock()
	at := w.now.Truncate(time.Second)
	merged := &simDelivery{id: fmt.Sprintf("m%02d", i), ev: &Lifecycle{Kind: LifecyclePRMerged, Owner: "acme", Repo: "app",
		Number: simPR + it.Number, Actor: mv.Actor, At: at}}
	w.sendEvent(id, merged, oracle.Move{From: it.State, Actor: mv.Actor, At: at, Lifecycle: oracle.LifecycleMerge}, mv)
	if wasOpen {
		w.extraEvents++
		closed := &simDelivery{id: fmt.Sprintf("d%02d", i), ev: &Lifecycle{Kind: LifecycleIssueClosed, Owner: "acme", Repo: "app",
			Number: it.Number, StateReason: "completed", Actor: mv.Actor, At: at}}
		w.sendEvent(id, closed, oracle.Move{From: it.State, To: w.svc.Automation.opts.States.Done, Actor: mv.Actor, At: at,
			Lifecycle: oracle.LifecycleClose}, mv)
	}
}

// advance is an agent's advance_children of the item to mv.To, served at once: each child the
// app moves (its audit says so) is the agent's move of the true history at that moment, in the
// order the call made them, and must be legal there (diverge checks it).
func (w *simWorld) advance(i int, mv simMove) {
	w.serve()
	id := simItemID(mv.Item)
	w.board.mu.Lock()
	parent := w.board.items[id] // the agent's read
	before := map[string]Item{}
	for _, c := range w.h.childrenOf(mv.Item) {
		before[simItemID(c)] = w.board.items[simItemID(c)]
	}
	w.board.mu.Unlock()
	audited := map[string]int{}
	for c := range before {
		audited[c] = len(w.handoffsOf(c))
	}
	w.startCall()
	calls := len(w.handoffs)
	adv, err := w.svc.Facade.AdvanceChildren(context.Background(), w.board, parent, mv.To, Handoff{Agent: mv.Actor})
	w.svc.Enforcer.wake(context.Background(), "", false) // the walks it asked for
	w.handing = false
	w.trace("advance a%02d: %s advances the children of %s to %s: %d advanced, %d skipped, %d errors, err=%v", i, mv.Actor, id, mv.To,
		len(adv.Advanced), len(adv.Skipped), len(adv.Errors), err)
	var order []string
	for _, a := range adv.Advanced {
		order = append(order, simItemID(a.Number-1))
	}
	for _, c := range slices.Sorted(maps.Keys(before)) {
		if !slices.Contains(order, c) {
			order = append(order, c) // made, though the call failed after
		}
	}
	for _, c := range order {
		if len(w.handoffsOf(c)) == audited[c] {
			continue
		}
		om := oracle.Move{From: before[c].State, To: mv.To, Actor: mv.Actor, Delivery: fmt.Sprintf("a%02d-%s", i, c),
			At: w.now.Truncate(time.Second), Now: true, Raced: w.racedCall[c]}
		w.step(c, om)
		w.handoffs = append(w.handoffs, oracle.ItemMove{Item: c, Move: om})
		w.madeOne(simAdvance)
	}
	w.stepHeld(w.handoffs[calls:])
	for _, hw := range w.heldWrites {
		w.checkWrite(hw[0], hw[1], hw[2])
	}
}

// step records a move of the true history with the oracle.
func (w *simWorld) step(id string, om oracle.Move) {
	for _, g := range w.moves {
		// In a family, moves of one second cannot be ordered from GitHub's reports — of
		// different items, lifecycle events, or one item's moves that chain in more than one
		// order — and automation differs with the order.
		// (A field's edit is no move: a relative's counts as it stood before the second; its
		// own item's move of its second may have been made with it or without it.)
		w.orderAmbiguous = w.orderAmbiguous || (g.Move.At.Equal(om.At) && len(w.h.Parents) > 0 &&
			((om.Field == "" && g.Move.Field == "") || g.Item == id))
	}
	if w.handing && w.racing {
		// A move that lands between a façade call's read and its write comes after the call's
		// own move in the true history: it is recorded once the call's moves are.
		w.heldSteps = append(w.heldSteps, oracle.ItemMove{Item: id, Move: om})
		return
	}
	w.moves = append(w.moves, oracle.ItemMove{Item: id, Move: om})
	w.or.Step(id, om)
}

// startCall marks a façade call under way: the moves that race its writes are held (step).
func (w *simWorld) startCall() {
	w.handing, w.heldWrites, w.racedCall = true, nil, map[string]bool{}
}

// stepHeld records the moves that raced a façade call's writes, after the call's own moves
// (made, by item: each raced move came after its item's, or else after the call's first), and
// the writes that landed over them.
func (w *simWorld) stepHeld(made []oracle.ItemMove) {
	held := w.heldSteps
	w.heldSteps = nil
	for _, g := range held {
		if g.Move.Wrote {
			w.moves = append(w.moves, g) // (the oracle has it: appWrite)
			continue
		}
		for _, m := range made {
			if m.Item == g.Item || g.Move.After == "" {
				g.Move.After = m.Move.Delivery
			}
		}
		w.step(g.Item, g.Move)
	}
}

// handoff is an agent's handoff_ticket, served at once: when the app makes the move (its
// audit says so, even if the call failed after), it is the agent's move of the true history
// at that moment, and must be legal there (diverge checks it). What the app writes meanwhile
// is checked once the move is in the true history.
func (w *simWorld) handoff(i int, mv simMove) {
	w.serve()
	id := simItemID(mv.Item)
	w.board.mu.Lock()
	it := w.board.items[id] // the agent's read (get_workflow_state), no fault of the app's
	w.board.mu.Unlock()
	audited := len(w.handoffsOf(id))
	w.startCall()
	calls := len(w.handoffs)
	res, err := w.svc.Facade.Handoff(context.Background(), w.board, it, Handoff{Agent: mv.Actor, Command: mv.Command, ToState: mv.To})
	w.svc.Enforcer.wake(context.Background(), "", false) // the walks it asked for
	w.handing = false
	made := len(w.handoffsOf(id)) > audited
	w.trace("handoff h%02d: %s %s → %s (%s, %s): made=%v changed=%v err=%v", i, mv.Actor, orNoState(it.State), mv.To, id, mv.Command, made, res.Changed, err)
	if made {
		om := oracle.Move{From: it.State, To: mv.To, Actor: mv.Actor, Delivery: fmt.Sprintf("h%02d", i), At: w.now.Truncate(time.Second), Now: true,
			Raced: w.racedCall[id]}
		w.step(id, om)
		w.handoffs = append(w.handoffs, oracle.ItemMove{Item: id, Move: om})
		w.madeOne(simHandoff)
	}
	w.stepHeld(w.handoffs[calls:])
	for _, hw := range w.heldWrites {
		w.checkWrite(hw[0], hw[1], hw[2])
	}
}

// claim is an agent's pick_actionable_issue with claim: true, served at once: the item the app
// claims (its audit says so, even if the call failed after) is moved by the agent in the true
// history at that moment, and must be legal there (diverge checks it).
func (w *simWorld) claim(i int, mv simMove) {
	w.serve()
	w.board.mu.Lock()
	before := maps.Clone(w.board.items) // as the app ranks them
	w.board.mu.Unlock()
	audited := map[string]int{}
	for id := range before {
		audited[id] = len(w.handoffsOf(id))
	}
	w.startCall()
	calls := len(w.handoffs)
	entries := w.auditCount()
	res, err := w.svc.Facade.Pick(context.Background(), w.board, PickRequest{Projects: []ProjectRef{{Owner: "acme", Number: 1}},
		State: mv.To, Claim: true, Handoff: Handoff{Agent: mv.Actor, Command: mv.Command}})
	w.svc.Enforcer.wake(context.Background(), "", false) // the walks it asked for
	w.handing = false
	// Each candidate the claim tried is audited (a refused handoff, or the claim made).
	w.claimTries += max(w.auditCount()-entries-1, 0)
	for _, id := range slices.Sorted(maps.Keys(before)) {
		hs := w.handoffsOf(id)
		if len(hs) == audited[id] {
			continue
		}
		to := hs[len(hs)-1].ToState
		w.trace("claim c%02d: %s claims %s in %s (%s): %s → %s, err=%v", i, mv.Actor, id, mv.To, mv.Command, orNoState(before[id].State), to, err)
		om := oracle.Move{From: before[id].State, To: to, Actor: mv.Actor, Delivery: fmt.Sprintf("c%02d", i), At: w.now.Truncate(time.Second), Now: true,
			Raced: w.racedCall[id]}
		w.step(id, om)
		w.handoffs = append(w.handoffs, oracle.ItemMove{Item: id, Move: om})
		w.madeOne(simClaim)
	}
	if res.Claimed == nil {
		w.trace("claim c%02d: %s claims nothing in %s (%s): err=%v", i, mv.Actor, mv.To, mv.Command, err)
	}
	w.stepHeld(w.handoffs[calls:])
	for _, hw := range w.heldWrites {
		w.checkWrite(hw[0], hw[1], hw[2])
	}
}

// auditCount is how many entries the audit holds.
func (w *simWorld) auditCount() int {
	crashing := w.crashing
	w.crashing = false // the sim's own look is no fault
	defer func() { w.crashing = crashing }()
	es, _ := w.st.entries("")
	return len(es)
}

// madeOne counts a façade move the app made.
func (w *simWorld) madeOne(kind string) {
	if w.made == nil {
		w.made = map[string]int{}
	}
	w.made[kind]++
}

// handoffsOf lists the item's handoffs in the audit.
func (w *simWorld) handoffsOf(id string) []AuditEntry {
	crashing := w.crashing
	w.crashing = false // the sim's own look is no fault
	defer func() { w.crashing = crashing }()
	all, _ := w.st.entries(id)
	return slices.DeleteFunc(all, func(e AuditEntry) bool { return e.Verdict != VerdictHandoff })
}

func faultsOf(mv simMove) string {
	var fs []string
	if mv.Drop {
		fs = append(fs, "dropped")
	}
	if mv.Dup {
		fs = append(fs, "duplicated")
	}
	if mv.Latency > 0 {
		fs = append(fs, "late "+mv.Latency.String())
	}
	if mv.NoFrom {
		fs = append(fs, "no from")
	}
	if len(fs) == 0 {
		return ""
	}
	return " [" + strings.Join(fs, ", ") + "]"
}

// deliver is the intake: the change is recorded before GitHub is answered, then its job runs
// (the app's own writes too: every report takes its place in its item's history).
func (w *simWorld) deliver(d *simDelivery) {
	w.serve()
	if d.ev != nil {
		// The intake records a close or reopen as a report of its issue before GitHub is
		// answered (a failure: GitHub lists the delivery as failed).
		if err := w.svc.Enforcer.ObserveEvent(context.Background(), *d.ev); err != nil {
			w.trace("intake of %s failed: %v", d.id, err)
			return
		}
		if d.first.IsZero() {
			d.first = w.now
		}
		d.delivered = true
		w.trace("delivered %s", d.id)
		if w.queued[d.id] {
			return // the queue keeps one job per delivery (unique by its arguments)
		}
		if w.queued == nil {
			w.queued = map[string]bool{}
		}
		w.queued[d.id] = true
		w.lifecycleJob(*d.ev, 1)
		w.armSweepTicker() // its items wait for a proof too
		return
	}
	ch := d.ch
	ch.ReceivedAt = w.now
	runAt, err := w.svc.Enforcer.Observe(context.Background(), ch)
	if err != nil {
		w.problem("intake of %s: %v", d.id, err)
		return
	}
	if !d.delivered && d.first.IsZero() {
		d.first = w.now
	}
	d.delivered = true
	w.armSweepTicker()
	w.trace("delivered %s", d.id)
	select {
	case <-w.svc.Enforcer.AtOnceListed():
		// The app reverts at once what the intake listed as soon as it is told (atonce.go);
		// what is listed meanwhile is taken together (by the replica whose intake listed it).
		svc := w.svc
		w.at(w.now, func() {
			w.svc = svc
			if n := w.svc.Enforcer.RevertAtOnce(context.Background()); n > 0 {
				w.trace("looked at %d items to revert at once", n)
			}
		})
	default:
	}
	if runAt.After(w.now) {
		// The queue holds the job until it has work to do (its item waits for a proof).
		w.at(runAt, func() { w.job(ch, 1) })
		return
	}
	w.job(ch, 1)
}

// job runs the change's job now, and again when it asks to wait or fails.
func (w *simWorld) job(ch Change, attempt int) {
	w.jobRuns++
	w.serve()
	res, err := w.svc.Enforcer.ProcessChange(context.Background(), w.board, ch)
	switch {
	case err != nil && attempt < 60:
		w.trace("job %s failed (attempt %d): %v", ch.DeliveryID, attempt, err)
		w.at(w.now.Add(time.Duration(100*min(attempt, 20))*time.Millisecond), func() { w.job(ch, attempt+1) })
	case err != nil:
		w.problem("job %s gave up: %v", ch.DeliveryID, err)
	case res.Verdict == VerdictWait:
		w.at(w.now.Add(res.RetryAfter), func() { w.job(ch, attempt) })
	default:
		w.trace("job %s: %s (%s)", ch.DeliveryID, res.Verdict, res.Reason)
	}
}

// lifecycleJob runs a lifecycle event's job now, and again when it asks to wait or fails.
func (w *simWorld) lifecycleJob(ev Lifecycle, attempt int) {
	w.jobRuns++
	w.serve()
	res, err := w.svc.Enforcer.ProcessLifecycle(context.Background(), w.board, ev)
	w.svc.Enforcer.wake(context.Background(), "", false) // the walks it asked for
	switch {
	case err != nil && attempt < 60:
		w.trace("job %s failed (attempt %d): %v", ev.DeliveryID, attempt, err)
		w.at(w.now.Add(time.Duration(100*min(attempt, 20))*time.Millisecond), func() { w.lifecycleJob(ev, attempt+1) })
	case err != nil:
		w.problem("job %s gave up: %v", ev.DeliveryID, err)
	case res.Verdict == VerdictWait:
		w.at(w.now.Add(res.RetryAfter), func() { w.lifecycleJob(ev, attempt) })
	default:
		w.trace("job %s: %s (%s)", ev.DeliveryID, res.Verdict, res.Reason)
	}
}

// appWrite is a value the app writes: it must never overwrite the value the oracle holds
// legal (no legal move is reverted, no newer legal value overwritten).
func (w *simWorld) appWrite(id, state string) {
	w.board.mu.Lock()
	it := w.board.items[id]
	before := it.State
	it.State, it.StateUpdatedAt = state, w.now.Truncate(time.Second)
	w.board.items[id], w.board.updated[id] = it, w.now.Truncate(time.Second)
	w.board.mu.Unlock()
	w.ownWrites++
	if before == state {
		// (No change: GitHub reports none, as for anyone's.)
		w.trace("app writes %s again (%s): no change, GitHub reports nothing", orNoState(state), id)
		return
	}
	w.or.Wrote(id, before, state, w.now.Truncate(time.Second))
	w.trace("app writes %s → %s (%s)", orNoState(before), orNoState(state), id)
	// GitHub reports the app's own write too (with the delivery faults of the moment).
	d := &simDelivery{id: fmt.Sprintf("own%02d", len(w.dels)), ch: Change{ItemID: id, ProjectID: "PVT_1", ProjectNumber: 1, Owner: "acme",
		ContentType: ContentIssue, FromKnown: true, From: before, To: state, Actor: "ralph-gate[bot]", At: w.now.Truncate(time.Second)}}
	d.ch.DeliveryID = d.id
	w.dels = append(w.dels, d)
	if !w.handing {
		// Every write of ours is a step of the true history: the moves of its second, in any
		// order GitHub cannot tell apart, may chain through it (a revert at once, a raced
		// write, a cascade's write alike). A handoff's write is the handoff's own move, which
		// the history holds already.
		w.moves = append(w.moves, oracle.ItemMove{Item: id, Move: oracle.Move{From: before, To: state, At: w.now.Truncate(time.Second),
			Wrote: true, Delivery: d.id}})
	}
	if !w.crashing || w.rng.Float64() >= 0.15 {
		w.at(w.now.Add(20*time.Millisecond), func() { w.deliver(d) })
	}
	if w.handing {
		if !w.raced {
			w.heldWrites = append(w.heldWrites, [3]string{id, before, state})
			return
		}
		// A write that landed over a move that raced the call: a change of the card after
		// that move (the call's own move is decided on the value it read: oracle.Move.Raced).
		w.heldSteps = append(w.heldSteps, oracle.ItemMove{Item: id, Move: oracle.Move{From: before, To: state,
			At: w.now.Truncate(time.Second), Wrote: true, Delivery: d.id}})
		return
	}
	if w.raced {
		return // (a write GitHub lands over a move made after its read: not the app's to prevent)
	}
	w.checkWrite(id, before, state)
}

// provisionalWrite reports whether the app's write of state over before is a provisional
// revert (journaled before it is written).
func (w *simWorld) provisionalWrite(id, before, state string) bool {
	rec, err := w.st.GetItem(context.Background(), id)
	return err == nil && rec.Provisional == state && rec.ProvisionalOver == before
}

// checkWrite fails a write of the app's over the value the oracle holds legal.
// (A legal value set by automation the app has not judged its cause of yet is no move
// anyone made on the board: writing the older legal value over an illegal one is no harm.)
func (w *simWorld) checkWrite(id, before, state string) {
	if w.provisionalWrite(id, before, state) {
		// A provisional revert: over a legal value only when a change was hidden from the
		// app, and then withdrawn (checkWithdrawn holds it to that).
		return
	}
	if before == w.or.Legal[id] && state != before && !w.or.Ambiguous(id) && !w.orderAmbiguous && !w.or.LegalByAutomation(id) {
		w.problem("%s: the app overwrote the legal value %s with %s", id, orNoState(before), orNoState(state))
	}
}

// RequestSweep implements Redeliveries: one sweep at a time, requests meanwhile coalesced.
func (w *simWorld) RequestSweep(context.Context) {
	if w.sweepQueued {
		w.sweepAgain = true
		return
	}
	w.sweepQueued = true
	w.at(w.now.Add(10*time.Millisecond), w.sweep)
}

// SweepProof implements Redeliveries.
func (w *simWorld) SweepProof(context.Context) (policy.SweepProof, error) { return w.proof, nil }

// sweep redelivers every failed delivery; when every redelivery arrives, the sweep's start
// becomes the proof that nothing failed before it is missing.
func (w *simWorld) sweep() {
	w.sweeps++
	started := w.now
	complete := true
	var again []*simDelivery
	for _, d := range w.dels {
		if d.delivered {
			continue
		}
		if w.crashing && w.rng.Float64() < 0.15 {
			complete = false // the redelivery failed too
			continue
		}
		again = append(again, d)
	}
	w.trace("sweep: %d redelivered, complete=%v", len(again), complete)
	for _, d := range again {
		w.at(started.Add(simSweepRTT/2), func() { w.deliver(d) })
	}
	w.at(started.Add(simSweepRTT), func() {
		if complete {
			w.proof = policy.SweepProof{Available: true, Since: simT0.Add(-72 * time.Hour), Until: started, Full: true}
			w.trace("sweep of %s complete: nothing failed before it is missing", started.Sub(simT0).Round(time.Millisecond))
			for _, r := range w.replicas {
				if !w.h.Together {
					break
				}
				w.svc = r
				n, err := w.svc.Enforcer.JudgeWaiting(context.Background())
				w.together += n
				w.trace("judged %d released items together (%v)", n, err)
			}
		}
		w.sweepQueued = false
		if w.sweepAgain {
			w.sweepAgain = false
			w.RequestSweep(context.Background())
		}
	})
}

// armSweepTicker asks for a sweep once a waiting item is past its due, as the app's ticker
// does every 50 ms, while items wait.
func (w *simWorld) armSweepTicker() {
	if !w.h.Together || w.ticking {
		return
	}
	w.ticking = true
	w.at(w.now.Add(50*time.Millisecond), func() {
		w.ticking = false
		due, waiting := false, 0
		for _, r := range w.replicas {
			due, waiting = due || r.Enforcer.SweepDue(), waiting+r.Enforcer.Waiting()
		}
		if due {
			w.RequestSweep(context.Background())
		}
		if waiting > 0 {
			w.armSweepTicker()
		}
	})
}

// periodicSweep is the leader's periodic sweep, while there is anything to sweep for.
func (w *simWorld) periodicSweep(t time.Time) {
	w.at(t, func() {
		pending := w.crashing
		for _, d := range w.dels {
			pending = pending || !d.delivered
		}
		if pending {
			w.RequestSweep(context.Background())
			w.periodicSweep(w.now.Add(15 * time.Second))
		}
	})
}

// check compares the settled world with the oracle: the board, the lock holder and the
// explanations must be what judging the true history in order gives, or (when moves of one
// second chain in more than one order) what one of the orders GitHub's reports cannot tell
// from it gives.
// AutomationMoved implements Observer (the audit tells the automated moves).
func (w *simWorld) AutomationMoved(Cause) {}

// ProvisionalReverted implements Observer.
func (w *simWorld) ProvisionalReverted(confirmed bool) {
	if w.provisional == nil {
		w.provisional = map[bool]int{}
	}
	w.provisional[confirmed]++
}

// checkWithdrawn fails a provisional revert withdrawn although nothing was hidden from the
// app when it wrote it: a move of the item, or of a relative (a family's automation links
// them), made before the revert's second ended (GitHub cannot order the revert and a move of
// its second) whose report had not come when the reverted move's had (the revert is written
// then).
func (w *simWorld) checkWithdrawn() {
	entries, err := w.st.entries("")
	if err != nil {
		w.problem("read the audit: %v", err)
	}
	for _, e := range entries {
		if e.Verdict != VerdictWithdrawn {
			continue
		}
		i := slices.IndexFunc(w.dels, func(d *simDelivery) bool { return d.id == e.DeliveryID })
		if i < 0 {
			w.problem("%s: a provisional revert withdrawn for %q, no move's report", e.ItemID, e.DeliveryID)
			continue
		}
		d := w.dels[i]
		hidden := slices.ContainsFunc(w.dels, func(o *simDelivery) bool {
			item, at := o.ch.ItemID, o.ch.At
			if o.ev != nil {
				item, at = "", o.ev.At // a close or reopen: its issue's items
			}
			return o != d && !strings.HasPrefix(o.id, "own") && (item == d.ch.ItemID || item == "" || len(w.h.Parents) > 0) &&
				at.Before(d.first.Truncate(time.Second).Add(time.Second)) && (o.first.IsZero() || !o.first.Before(d.first))
		})
		if !hidden {
			w.problem("%s: the provisional revert of %s was withdrawn (%s), but no earlier change was hidden when it was written", e.ItemID, d.id, e.Reason)
		}
	}
}

func (w *simWorld) check() {
	w.checkWithdrawn()

	// A violation comment explains moves of its own issue; a storm's summary explains moves
	// of the issues it names, wherever it is posted: each marker counts for its move's item.
	itemOf := map[string]string{}
	for _, d := range w.dels {
		itemOf[d.id] = d.ch.ItemID
	}
	explainedBy := map[string]map[string]int{}
	for i := range w.h.Items {
		id := simItemID(i)
		for _, c := range w.board.comments["I_"+id] {
			body := w.board.bodies[c.ID]
			ms, err := marker.ParseTransitions(body)
			if err != nil {
				w.problem("%s: %v", id, err)
			}
			if rest, ok := strings.CutPrefix(body, lifecycleMarker); ok {
				// A refused close or reopen, explained.
				delivery, _, _ := strings.Cut(rest, " ")
				ms = append(ms, marker.Transition{Delivery: delivery})
			}
			for _, m := range ms {
				if m.Verdict == string(VerdictHandoff) {
					continue // a handoff's record, no explanation
				}
				owner, delivery := id, m.Delivery
				if d, _, ok := strings.Cut(delivery, "#"); ok && !strings.HasPrefix(body, SummaryMarker) {
					delivery = d // a close or reopen's report of this item, explained here (warn)
				}
				if strings.HasPrefix(body, SummaryMarker) {
					if itemOf[delivery] != "" {
						owner = itemOf[delivery]
					} else if ev, item, ok := strings.Cut(delivery, "#"); ok {
						owner, delivery = item, ev // a close or reopen's report of its item
					}
				}
				if explainedBy[owner] == nil {
					explainedBy[owner] = map[string]int{}
				}
				explainedBy[owner][delivery]++
			}
		}
	}
	// The outcome must be the oracle's for the true order, or for one GitHub's reports cannot
	// tell from it.
	diverged := w.diverge(w.or, explainedBy)
	if len(diverged) > 0 {
		// The order the app judged them in first (when it is one of those orders), then the
		// order its sequencer takes (within a second: fields' edits, card moves, events), then the
		// others. (Loose histories too: Orders enumerates a bounded number of an item's orders,
		// and nine moves of one second that loop chain in more than it reaches.)
		var orders [][]oracle.ItemMove
		if taken, ok := oracle.Reordered(w.moves, w.judgedRank()); ok {
			orders = append(orders, taken)
		}
		orders = append(orders, oracle.AsSequenced(w.moves))
		orders = append(orders, oracle.Interleavings(w.moves, maxOrders)[1:]...)
		for _, order := range orders {
			or := w.newOracle()
			for _, g := range order {
				or.Step(g.Item, g.Move)
			}
			if len(w.diverge(or, explainedBy)) == 0 {
				diverged = nil
				break
			}
		}
	}
	w.problems = append(w.problems, diverged...)
	// Nothing is left waiting: every report, the app's own included, has taken its place.
	for _, o := range w.st.list(func(o Observation) bool { return o.Status == ObservationPending }) {
		w.problem("%s: report %s (%s → %s by %s) still waiting when the history ended", o.ItemID, o.DeliveryID,
			orNoState(o.From), orNoState(o.To), o.Actor)
	}
	// GitHub requests are part of correctness: a wait never polls.
	if budget := w.requestBudget(); w.board.requests > budget {
		w.problem("the app made %d GitHub requests, over its budget of %d for %d moves and %d writes of its own",
			w.board.requests, budget, len(w.h.Moves), w.ownWrites)
	}
	if xtrace {
		es, _ := w.st.entries("")
		for _, e := range es {
			w.trace("audit %s %s %s→%s %s %s %s", e.ItemID, e.DeliveryID, e.FromState, e.ToState, e.Verdict, e.Actor, e.Reason)
		}
	}
	if len(w.problems) > 0 || xtrace {
		w.problems = append(w.problems, "trace:\n  "+strings.Join(w.traceLog, "\n  "))
	}
}

// maxOrders bounds the orders of one second across items a family history is compared with.
const maxOrders = 5000

// diverge lists how the settled world differs from what an oracle says: every item's board
// value, lock holder and explanations, and an automated audit entry, with its cause, for every
// move the automation owes.
func (w *simWorld) diverge(or *oracle.Oracle, explainedBy map[string]map[string]int) []string {
	ctx := context.Background()
	var diffs []string
	for i := range w.h.Items {
		id := simItemID(i)
		it, _ := w.board.item(id)
		rec, err := w.st.GetItem(ctx, id)
		if err != nil {
			diffs = append(diffs, fmt.Sprintf("%s: %v", id, err))
			continue
		}
		explained := explainedBy[id]
		if explained == nil {
			explained = map[string]int{}
		}
		diffs = append(diffs, or.Check(id, it.State, rec.LockHolder, explained)...)
	}
	for _, h := range w.handoffs {
		if v, refused := or.Violations[h.Move.Delivery]; refused {
			diffs = append(diffs, fmt.Sprintf("%s: the app made %s's handoff %s, which the true history refuses: %s", h.Item, h.Move.Actor, h.Move.Delivery, v))
		}
	}
	audit, _ := w.st.entries("")
	for _, a := range or.Automated {
		found := false
		for _, e := range audit {
			found = found || (e.ItemID == a.Item && e.ToState == a.To && e.Verdict == VerdictAutomated && e.Cause != "")
		}
		if !found {
			diffs = append(diffs, fmt.Sprintf("%s: the automation's move to %s (caused by %s's move) was never audited as automated", a.Item, a.To, a.Cause))
		}
	}
	return diffs
}

// judgedRank ranks the true history's moves by the order the app judged them in: the place of
// their first audit entry (an event's report of an item names its delivery, then the item); a
// move with none (a handoff) keeps its place after the move before it.
func (w *simWorld) judgedRank() func(oracle.ItemMove) int {
	audit, _ := w.st.entries("")
	first := map[string]int{}
	for i, e := range audit {
		if d := eventOf(e.DeliveryID); d != "" {
			if _, seen := first[d]; !seen {
				first[d] = i
			}
		}
	}
	rank, prev := map[string]int{}, -1
	for _, m := range w.moves {
		if r, ok := first[m.Move.Delivery]; ok {
			prev = r
		}
		rank[m.Move.Delivery] = prev
	}
	return func(m oracle.ItemMove) int { return rank[m.Move.Delivery] }
}

// requestBudget is what a history may cost on GitHub (docs/RELIABILITY.md): per reported
// move or event (a merge reports two: the merge and its issue's close), its item's read, a
// family read, the guarded revert (a read again and a write) and its explanation (a lookup,
// then a post or an update); per write of the app's own, a family read and the write; per candidate a claim
// tries beyond its first, its gate's family read and its relatives' check; per move made for an
// agent (judged before a proof covers it), at most one family read of each parent, looking for
// a change below a child not reported yet; and once per crash that the retries repeat.
func (w *simWorld) requestBudget() int {
	made := 0
	for _, n := range w.made {
		made += n
	}
	parents := map[int]bool{}
	for _, p := range w.h.Parents {
		if p >= 0 {
			parents[p] = true
		}
	}
	return 8*(len(w.h.Moves)+w.extraEvents+w.races) + 3*w.ownWrites + 3*w.claimTries + made*len(parents) + 6*w.crashes + 10
}
