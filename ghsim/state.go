package ghsim

import (
	"cmp"
	"maps"
	"slices"
	"strings"
)

// State is the simulator's world as /_sim/state reports it: the seed's top-level organization,
// and in Orgs each further one (in the same shape, without Orgs).
type State struct {
	Org            string          `json:"org"`
	InstallationID int64           `json:"installation_id"`
	Installed      bool            `json:"installed"`
	Issues         []IssueState    `json:"issues"`
	PullRequests   []PRState       `json:"pull_requests"`
	DraftItems     []DraftState    `json:"draft_items"`
	Repos          []RepoState     `json:"repos"`
	CheckRuns      []CheckRunState `json:"check_runs"`
	Orgs           []State         `json:"orgs,omitempty"`
}

// RepoState is a repository: its files at the head of its default branch and its commits,
// oldest first.
type RepoState struct {
	Name          string            `json:"name"`
	DefaultBranch string            `json:"default_branch"`
	Head          string            `json:"head"`
	Files         map[string]string `json:"files"`
	Commits       []CommitState     `json:"commits"`
}

// CommitState is one commit and the paths it changed.
type CommitState struct {
	SHA      string   `json:"sha"`
	Message  string   `json:"message"`
	Author   string   `json:"author"`
	Added    []string `json:"added,omitempty"`
	Removed  []string `json:"removed,omitempty"`
	Modified []string `json:"modified,omitempty"`
}

// CheckRunState is one check run, oldest first in State.CheckRuns.
type CheckRunState struct {
	ID         int64          `json:"id"`
	Repo       string         `json:"repo"`
	HeadSHA    string         `json:"head_sha"`
	Name       string         `json:"name"`
	Status     string         `json:"status"`
	Conclusion string         `json:"conclusion,omitempty"`
	ExternalID string         `json:"external_id,omitempty"`
	DetailsURL string         `json:"details_url,omitempty"`
	Output     CheckRunOutput `json:"output"`
}

// CheckRunOutput is a check run's output with all its annotations.
type CheckRunOutput struct {
	Title       string       `json:"title"`
	Summary     string       `json:"summary"`
	Text        string       `json:"text,omitempty"`
	Annotations []Annotation `json:"annotations"`
}

// IssueState is one issue with its relations, project field values (by field name, from its item
// on ItemProject) and comments.
type IssueState struct {
	Repo        string            `json:"repo"`
	Number      int               `json:"number"`
	NodeID      string            `json:"node_id"`
	Title       string            `json:"title"`
	State       string            `json:"state"`
	StateReason string            `json:"state_reason,omitempty"`
	Parent      int               `json:"parent,omitempty"`
	SubIssues   []int             `json:"sub_issues"`
	BlockedBy   []int             `json:"blocked_by"`
	Assignees   []string          `json:"assignees"`
	ItemID      string            `json:"item_id,omitempty"`
	ItemProject int               `json:"item_project,omitempty"`
	Archived    bool              `json:"archived,omitempty"`
	Fields      map[string]string `json:"fields"`
	Comments    []CommentState    `json:"comments"`
}

// CommentState is one issue comment.
type CommentState struct {
	ID     int64  `json:"id"`
	NodeID string `json:"node_id"`
	Author string `json:"author"`
	Body   string `json:"body"`
}

// PRState is one pull request.
type PRState struct {
	Repo   string `json:"repo"`
	Number int    `json:"number"`
	NodeID string `json:"node_id"`
	Title  string `json:"title"`
	State  string `json:"state"`
	Merged bool   `json:"merged"`
	Closes []int  `json:"closes"`
	ItemID string `json:"item_id,omitempty"`
}

// DraftState is one draft issue item.
type DraftState struct {
	Title  string            `json:"title"`
	ItemID string            `json:"item_id"`
	Fields map[string]string `json:"fields"`
}

func itemFields(it *item) map[string]string {
	out := map[string]string{}
	for f, v := range it.values {
		out[f.name] = v.display()
	}
	return out
}

func numbers(list []*issue) []int {
	out := []int{}
	for _, x := range list {
		out = append(out, x.number)
	}
	return out
}

// State returns a snapshot of the world.
func (s *Server) State() State {
	s.w.mu.RLock()
	defer s.w.mu.RUnlock()
	st := s.w.orgState(s.w.orgs[0])
	for _, o := range s.w.orgs[1:] {
		st.Orgs = append(st.Orgs, s.w.orgState(o))
	}
	return st
}

func (w *world) orgState(o *organization) State {
	st := State{Org: o.login, InstallationID: o.inst.id, Installed: o.inst.installed, Issues: []IssueState{}, PullRequests: []PRState{},
		DraftItems: []DraftState{}, Repos: []RepoState{}, CheckRuns: []CheckRunState{}}
	for _, is := range w.issues {
		if is.repo.owner != o {
			continue
		}
		x := IssueState{Repo: is.repo.name, Number: is.number, NodeID: is.nodeID, Title: is.title, State: is.state,
			StateReason: is.stateReason, SubIssues: numbers(is.subIssues), BlockedBy: numbers(is.blockedBy),
			Assignees: []string{}, Fields: map[string]string{}, Comments: []CommentState{}}
		if is.parent != nil {
			x.Parent = is.parent.number
		}
		for _, a := range is.assignees {
			x.Assignees = append(x.Assignees, a.login)
		}
		if len(is.items) > 0 {
			it := is.items[0]
			x.ItemID, x.ItemProject, x.Archived, x.Fields = it.nodeID, it.project.number, it.archived, itemFields(it)
		}
		for _, c := range is.comments {
			x.Comments = append(x.Comments, CommentState{ID: c.id, NodeID: c.nodeID, Author: c.author.login, Body: c.body})
		}
		st.Issues = append(st.Issues, x)
	}
	for _, pr := range w.prs {
		if pr.repo.owner != o {
			continue
		}
		x := PRState{Repo: pr.repo.name, Number: pr.number, NodeID: pr.nodeID, Title: pr.title, State: pr.state,
			Merged: pr.merged, Closes: numbers(pr.closes)}
		if len(pr.items) > 0 {
			x.ItemID = pr.items[0].nodeID
		}
		st.PullRequests = append(st.PullRequests, x)
	}
	for _, p := range o.projects {
		for _, it := range p.items {
			if d, ok := it.content.(*draft); ok {
				st.DraftItems = append(st.DraftItems, DraftState{Title: d.title, ItemID: it.nodeID, Fields: itemFields(it)})
			}
		}
	}
	var runs []*checkRun
	for _, r := range o.repos {
		rs := RepoState{Name: r.name, DefaultBranch: defaultBranch, Head: r.head().sha, Files: maps.Clone(r.head().files)}
		for _, c := range r.commits {
			rs.Commits = append(rs.Commits, CommitState{SHA: c.sha, Message: c.message, Author: c.author.login,
				Added: c.added, Removed: c.removed, Modified: c.modified})
		}
		st.Repos = append(st.Repos, rs)
		runs = append(runs, r.checkRuns...)
	}
	slices.SortFunc(runs, func(a, b *checkRun) int { return cmp.Compare(a.id, b.id) })
	for _, cr := range runs {
		st.CheckRuns = append(st.CheckRuns, CheckRunState{ID: cr.id, Repo: cr.repo.name, HeadSHA: cr.headSHA, Name: cr.name,
			Status: cr.status, Conclusion: cr.conclusion, ExternalID: cr.externalID, DetailsURL: cr.detailsURL,
			Output: CheckRunOutput{Title: cr.title, Summary: cr.summary, Text: cr.text, Annotations: append([]Annotation{}, cr.annotations...)}})
	}
	return st
}

// OrgState returns the state of the organization login (the top-level one or one of Orgs).
func (st State) OrgState(login string) (State, bool) {
	if strings.EqualFold(st.Org, login) {
		return st, true
	}
	for _, o := range st.Orgs {
		if strings.EqualFold(o.Org, login) {
			return o, true
		}
	}
	return State{}, false
}

// Repo returns one repository's state.
func (st State) Repo(name string) (RepoState, bool) {
	for _, r := range st.Repos {
		if r.Name == name {
			return r, true
		}
	}
	return RepoState{}, false
}

// LatestCheckRun returns the newest check run of that name on a repository.
func (st State) LatestCheckRun(repo, name string) (CheckRunState, bool) {
	for i := len(st.CheckRuns) - 1; i >= 0; i-- {
		if cr := st.CheckRuns[i]; cr.Repo == repo && cr.Name == name {
			return cr, true
		}
	}
	return CheckRunState{}, false
}

// Issue returns one issue's state (ok=false when there is none).
func (st State) Issue(repo string, number int) (IssueState, bool) {
	for _, is := range st.Issues {
		if is.Repo == repo && is.Number == number {
			return is, true
		}
	}
	return IssueState{}, false
}
