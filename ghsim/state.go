package ghsim

// State is the simulator's world as /_sim/state reports it.
type State struct {
	Org          string       `json:"org"`
	Issues       []IssueState `json:"issues"`
	PullRequests []PRState    `json:"pull_requests"`
	DraftItems   []DraftState `json:"draft_items"`
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
	w := s.w
	st := State{Org: w.org.login, Issues: []IssueState{}, PullRequests: []PRState{}, DraftItems: []DraftState{}}
	for _, is := range w.issues {
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
		x := PRState{Repo: pr.repo.name, Number: pr.number, NodeID: pr.nodeID, Title: pr.title, State: pr.state,
			Merged: pr.merged, Closes: numbers(pr.closes)}
		if len(pr.items) > 0 {
			x.ItemID = pr.items[0].nodeID
		}
		st.PullRequests = append(st.PullRequests, x)
	}
	for _, p := range w.projects {
		for _, it := range p.items {
			if d, ok := it.content.(*draft); ok {
				st.DraftItems = append(st.DraftItems, DraftState{Title: d.title, ItemID: it.nodeID, Fields: itemFields(it)})
			}
		}
	}
	return st
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
