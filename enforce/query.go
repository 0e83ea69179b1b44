package enforce

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ralph-gate/ralph-gate/policy"
)

// The read-only use cases of the MCP façade: find an issue's item, describe its state, its
// group, its pipeline position and convergence, and rank actionable issues. Every verdict comes
// from policy; this file only gathers the inputs.

// The façade's own arguments a Recovery may name, beside the workflow's (policy.Arg); the MCP
// tools spell them their own way.
const (
	// ArgProject is a project number.
	ArgProject policy.Arg = "project"
	// ArgPickState is the state pick_actionable_issue looks in.
	ArgPickState policy.Arg = "pick_state"
	// ArgClaim says whether to claim the picked issue.
	ArgClaim policy.Arg = "claim"
)

// maxGroup bounds a group (siblings plus the closure over blockers): groups are issue trees,
// and an unbounded walk over blockedBy links could read a whole organization.
const maxGroup = 50

// maxPickPages bounds how many pages (100 items each) pick_actionable_issue reads per project.
const maxPickPages = 100

// Locate finds an issue's item on an enforced project. project 0 accepts any enforced project
// the issue is on, as long as there is exactly one. A user-fixable problem is a *policy.Refusal;
// anything else (GitHub unreachable, the issue does not exist) is returned as is.
func (f *Facade) Locate(ctx context.Context, b Board, ref IssueRef, project int) (Item, error) {
	items, err := b.IssueItems(ctx, ref.Owner, ref.Repo, ref.Number)
	if err != nil {
		return Item{}, err
	}
	// Projects in numeric order, so a Recovery lists them the same way every time.
	slices.SortStableFunc(items, func(x, y Item) int { return cmp.Compare(x.ProjectNumber, y.ProjectNumber) })
	var found []Item
	var numbers []string
	for _, it := range items {
		if f.opts.Enforced != nil && !f.opts.Enforced(it.Owner, it.ProjectNumber) {
			continue
		}
		if project != 0 && it.ProjectNumber != project {
			numbers = append(numbers, fmt.Sprint(it.ProjectNumber))
			continue
		}
		found = append(found, it)
	}
	name := fmt.Sprintf("%s/%s#%d", ref.Owner, ref.Repo, ref.Number)
	switch {
	case len(found) == 1:
		// IssueItems reads only the item and its state: read the whole item (relatives' summaries).
		it, err := b.Item(ctx, found[0].ID)
		if err != nil {
			return Item{}, fmt.Errorf("read item %s: %w", found[0].ID, err)
		}
		return it, nil
	case len(found) == 0 && len(numbers) > 0:
		return Item{}, policy.NewRetryRefusal(fmt.Sprintf("Issue %s is not on project %d", name, project),
			"it is on the enforced project(s) "+strings.Join(numbers, ", "),
			policy.Retry{With: []policy.Suggestion{{Arg: ArgProject, Kind: policy.Literal, Values: numbers}}}).Because(policy.RuleNotFound)
	case len(found) == 0:
		return Item{}, &policy.Refusal{
			Tried:    fmt.Sprintf("Issue %s is not on any project ralph-gate enforces", name),
			Why:      "the workflow only applies to items of the configured projects",
			Recovery: "check owner, repo and number, and add the issue to the project first (a human may need to)",
			Options:  []string{},
			Rule:     policy.RuleNotFound,
		}
	}
	for _, it := range found {
		numbers = append(numbers, fmt.Sprint(it.ProjectNumber))
	}
	return Item{}, policy.NewRetryRefusal(fmt.Sprintf("Issue %s is on several enforced projects", name),
		"it is on projects "+strings.Join(numbers, ", "),
		policy.Retry{With: []policy.Suggestion{{Arg: ArgProject, Kind: policy.Literal, Values: numbers}}}).Because(policy.RuleArguments)
}

// Guidance is what an agent may do next from a state.
type Guidance struct {
	State string
	// AllowedNext are the states an agent may move the item to (the workflow's agent rules, README: The workflow).
	AllowedNext []string
	// CommandsExpecting are the commands that take this state as input.
	CommandsExpecting               []string
	IsLock, IsTerminal, IsHumanGate bool
	// NeedsHuman: only a human can move the item on (Human Needed, or no agent move left).
	NeedsHuman bool
	LockHolder string
}

// Guide describes what agents may do from state.
func (f *Facade) Guide(state, lockHolder string) Guidance {
	m := f.Machine()
	g := Guidance{State: state, AllowedNext: m.AllowedNext(state, policy.ActorAgent), CommandsExpecting: m.CommandsExpecting(state),
		IsLock: m.IsLock(state), IsTerminal: m.IsTerminal(state), IsHumanGate: m.IsHumanGate(state)}
	g.NeedsHuman = state != "" && (len(g.AllowedNext) == 0 || (g.IsHumanGate && m.PipelineIndex(state) < 0))
	if g.IsLock {
		g.LockHolder = lockHolder
	}
	return g
}

// WorkflowState is an item's state as ralph-gate knows it, with its relatives.
type WorkflowState struct {
	Item           Item
	LastLegalState string
	LockHolder     string
	LockSince      time.Time
	Guidance       Guidance
	Parent         *Relative
	Children       []Relative // on the same project or not (ItemID "" when not)
	OpenBlockers   []Relative
}

// State reads an item's current state, the stored lock and its relatives.
func (f *Facade) State(ctx context.Context, b Board, it Item) (WorkflowState, error) {
	cur, err := b.Item(ctx, it.ID)
	if err != nil {
		return WorkflowState{}, fmt.Errorf("read item %s: %w", it.ID, err)
	}
	ws := WorkflowState{Item: cur, LastLegalState: cur.State, Children: []Relative{}, OpenBlockers: []Relative{}}
	rec, found, err := f.items.load(ctx, cur.ID)
	if err != nil {
		return WorkflowState{}, err
	}
	if found && rec.known() {
		ws.LastLegalState = rec.LastLegalState
	}
	if found && f.Machine().IsLock(cur.State) {
		ws.LockHolder, ws.LockSince = rec.LockHolder, rec.LockSince
	}
	ws.Guidance = f.Guide(cur.State, ws.LockHolder)
	if cur.ContentType == ContentIssue && cur.ContentID != "" {
		fam, err := b.Family(ctx, cur.ContentID, cur.ProjectID)
		if err != nil {
			return WorkflowState{}, fmt.Errorf("read relatives: %w", err)
		}
		ws.Parent = fam.Parent
		if fam.Children != nil {
			ws.Children = fam.Children
		}
		if fam.OpenBlockers != nil {
			ws.OpenBlockers = fam.OpenBlockers
		}
	}
	return ws, nil
}

// GroupMember is one issue of a group as the pipeline tools see it.
type GroupMember struct {
	Relative
	BlockedBy []int // open blockers inside the group
}

// Group is an issue's group (policy.DetectPipeline): its parent's sub-issues (or its own sub-issues when it
// is a parent), plus the closure over open native blockedBy links, in topological order
// (blockers first, ties by number). Only issues on the item's project count.
type Group struct {
	Members []GroupMember
	// Parent is the issue whose sub-issues form the group (nil for a lone issue).
	Parent *Relative
}

// Group reads the issue's group. A blockedBy cycle is a *policy.Refusal.
func (f *Facade) Group(ctx context.Context, b Board, it Item) (Group, error) {
	if it.ContentType != ContentIssue || it.ContentID == "" {
		return Group{}, &policy.Refusal{
			Tried:    fmt.Sprintf("Reading the group of item %s", it.ID),
			Why:      "it is not an issue (" + it.ContentType + "), so it has no sub-issues or blockers",
			Recovery: "use an issue number",
			Options:  []string{},
			Rule:     policy.RuleArguments,
		}
	}
	var g Group
	var members []Relative
	switch {
	case it.ParentID != "":
		fam, err := b.Family(ctx, it.ParentID, it.ProjectID)
		if err != nil {
			return Group{}, fmt.Errorf("read group: %w", err)
		}
		g.Parent, members = &fam.Self, fam.Children
	case it.SubIssues > 0:
		fam, err := b.Family(ctx, it.ContentID, it.ProjectID)
		if err != nil {
			return Group{}, fmt.Errorf("read group: %w", err)
		}
		g.Parent, members = &fam.Self, fam.Children
	}
	byID := map[string]int{}
	add := func(r Relative) bool {
		if r.ItemID == "" || len(g.Members) >= maxGroup {
			return false
		}
		if _, ok := byID[r.IssueID]; ok {
			return false
		}
		byID[r.IssueID] = len(g.Members)
		g.Members = append(g.Members, GroupMember{Relative: r})
		return true
	}
	for _, r := range members {
		add(r)
	}
	if len(g.Members) == 0 {
		g.Parent = nil
		fam, err := b.Family(ctx, it.ContentID, it.ProjectID)
		if err != nil {
			return Group{}, fmt.Errorf("read issue: %w", err)
		}
		self := fam.Self
		if self.ItemID == "" {
			self.ItemID = it.ID
		}
		add(self)
	}
	// The closure over open blockers: each member's family names its blockers; a blocker on the
	// project joins the group (and is read in turn).
	blockers := map[string][]string{}
	for i := 0; i < len(g.Members); i++ {
		fam, err := b.Family(ctx, g.Members[i].IssueID, it.ProjectID)
		if err != nil {
			return Group{}, fmt.Errorf("read blockers of #%d: %w", g.Members[i].Number, err)
		}
		for _, bl := range fam.OpenBlockers {
			if _, in := byID[bl.IssueID]; !in {
				bf, err := b.Family(ctx, bl.IssueID, it.ProjectID)
				if err != nil {
					return Group{}, fmt.Errorf("read blocker #%d: %w", bl.Number, err)
				}
				add(bf.Self)
			}
			if _, in := byID[bl.IssueID]; in {
				blockers[g.Members[i].IssueID] = append(blockers[g.Members[i].IssueID], bl.IssueID)
			}
		}
	}
	nodes := make([]policy.GroupNode, len(g.Members))
	byNumber := map[int]int{}
	for i := range g.Members {
		m := &g.Members[i]
		m.BlockedBy = []int{}
		for _, id := range blockers[m.IssueID] {
			m.BlockedBy = append(m.BlockedBy, g.Members[byID[id]].Number)
		}
		nodes[i] = policy.GroupNode{Number: m.Number, BlockedBy: m.BlockedBy}
		byNumber[m.Number] = i
	}
	order, err := policy.OrderGroup(nodes)
	if err != nil {
		return Group{}, err
	}
	sorted := make([]GroupMember, 0, len(order))
	for _, n := range order {
		sorted = append(sorted, g.Members[byNumber[n]])
	}
	g.Members = sorted
	return g, nil
}

// PipelinePosition is detect_pipeline_position: the group's phase by policy.DetectPipeline.
type PipelinePosition struct {
	Group  Group
	Result policy.PipelineResult
}

// Position detects the pipeline phase of an issue's group. A member in a state pipeline
// detection does not know is refused rather than guessed at.
func (f *Facade) Position(ctx context.Context, b Board, it Item, opts policy.PipelineOptions) (PipelinePosition, error) {
	g, err := f.Group(ctx, b, it)
	if err != nil {
		return PipelinePosition{}, err
	}
	for _, m := range g.Members {
		if !policy.IsPipelineState(m.State) {
			return PipelinePosition{}, f.unknownPipelineState(it, m.Relative)
		}
	}
	in := policy.PipelineInput{IsGroup: len(g.Members) > 1, Options: opts}
	for _, m := range g.Members {
		in.Issues = append(in.Issues, policy.PipelineIssue{Number: m.Number, Title: m.Title, WorkflowState: m.State,
			Estimate: m.Estimate, SubIssueCount: m.SubIssues})
	}
	if len(g.Members) > 0 {
		in.GroupPrimary = g.Members[0].Number
	}
	return PipelinePosition{Group: g, Result: policy.DetectPipeline(in)}, nil
}

// unknownPipelineState refuses to place the group of it while member m is in a state pipeline
// detection does not know.
func (f *Facade) unknownPipelineState(it Item, m Relative) *policy.Refusal {
	r := &policy.Refusal{Tried: fmt.Sprintf("Finding the pipeline phase of #%d's group", it.Number), Options: []string{}, Rule: policy.RuleGroup}
	if !f.Machine().IsState(m.State) {
		r.Why = fmt.Sprintf("#%d of the group is in %q, which is not a state of the workflow", m.Number, m.State)
		r.Recovery = fmt.Sprintf("wait a few seconds for ralph-gate to put #%d back in its last legal state, then retry; if it stays, ask a human to set its Workflow State", m.Number)
		return r
	}
	r.Why = fmt.Sprintf("#%d of the group is in %s, and pipeline detection knows only %s", m.Number, m.State, strings.Join(policy.PipelineStates(), ", "))
	r.Recovery = fmt.Sprintf("ask a human to move #%d to one of those states, then retry", m.Number)
	return r
}

// Convergence is check_convergence over the issue's group (the issue included).
func (f *Facade) Convergence(ctx context.Context, b Board, it Item, target string) (policy.ConvergenceResult, Group, error) {
	// An unknown target is refused before anything is read.
	if _, err := f.Machine().CheckConvergence(target, nil); err != nil {
		return policy.ConvergenceResult{}, Group{}, err
	}
	g, err := f.Group(ctx, b, it)
	if err != nil {
		return policy.ConvergenceResult{}, Group{}, err
	}
	members := make([]policy.Member, len(g.Members))
	for i, m := range g.Members {
		members[i] = policy.Member{Number: m.Number, Title: m.Title, State: m.State}
	}
	res, err := f.Machine().CheckConvergence(target, members)
	return res, g, err
}

// CanonicalCommand returns the configured spelling of a command (research for ralph_research);
// false when the workflow has no such command.
func (f *Facade) CanonicalCommand(cmd string) (string, bool) {
	n := strings.TrimPrefix(strings.ToLower(strings.TrimSpace(cmd)), "ralph_")
	i := slices.IndexFunc(f.Machine().Commands(), func(c string) bool { return strings.EqualFold(c, n) })
	if i < 0 {
		return "", false
	}
	return f.Machine().Commands()[i], true
}
