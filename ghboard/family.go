package ghboard

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ralph-gate/ralph-gate/enforce"
)

// maxSubIssuePages bounds pagination (100 per page): no silent cap at 50, no endless loop.
const maxSubIssuePages = 100

type relativeData struct {
	ID         string `json:"id"`
	Number     int    `json:"number"`
	Title      string `json:"title"`
	State      string `json:"state"`
	Repository struct {
		NameWithOwner string `json:"nameWithOwner"`
	} `json:"repository"`
	SubIssuesSummary struct {
		Total int `json:"total"`
	} `json:"subIssuesSummary"`
	Lifecycle    eventsData  `json:"lifecycle"`
	ClosedBy     *closingPRs `json:"closedBy"` // only with $prs
	ProjectItems struct {
		Nodes []struct {
			ID         string    `json:"id"`
			IsArchived bool      `json:"isArchived"`
			UpdatedAt  time.Time `json:"updatedAt"`
			Project    struct {
				ID string `json:"id"`
			} `json:"project"`
			FieldValue *struct {
				Name      string    `json:"name"`
				UpdatedAt time.Time `json:"updatedAt"`
			} `json:"fieldValueByName"`
			Estimate *selectValue `json:"estimate"`
			requiredValues
		} `json:"nodes"`
	} `json:"projectItems"`
}

func (r relativeData) relative(projectID string, required []string) enforce.Relative {
	rel := enforce.Relative{IssueID: r.ID, Number: r.Number, Title: r.Title, Repo: r.Repository.NameWithOwner,
		Open: strings.EqualFold(r.State, "OPEN"), SubIssues: r.SubIssuesSummary.Total, IssueEvents: r.Lifecycle.events()}
	for _, n := range r.ProjectItems.Nodes {
		if n.Project.ID == projectID {
			rel.ItemID, rel.Archived, rel.UpdatedAt = n.ID, n.IsArchived, n.UpdatedAt
			if n.FieldValue != nil {
				rel.State, rel.StateUpdatedAt = n.FieldValue.Name, n.FieldValue.UpdatedAt
			}
			rel.Estimate = n.Estimate.name()
			rel.Fields = n.values(required)
		}
	}
	rel.MergedPR, rel.MergedAt = r.ClosedBy.merged()
	return rel
}

type subIssuesPage struct {
	PageInfo struct {
		HasNextPage bool   `json:"hasNextPage"`
		EndCursor   string `json:"endCursor"`
	} `json:"pageInfo"`
	Nodes []*relativeData `json:"nodes"` // null: GitHub did not return it (see Family)
}

// The places of a family read that GitHub may leave out: the parent, a sub-issue, a blocker.
var familyPlaces = [][]any{
	{"node", "parent"},
	{"node", "subIssues", "nodes", anyIndex{}},
	{"node", "blockedBy", "nodes", anyIndex{}},
}

// Family reads an issue's relatives: one call, plus one per further 100 sub-issues. GitHub
// returns the relatives the installation may see along with an error for each it may not (a
// repository the app is not installed on: FORBIDDEN) or that no longer exists (NOT_FOUND):
// those are left out, and logged, and the family is what the app can see. Any other error
// fails the read; the issue itself not found is ErrNotFound.
func (b *Board) Family(ctx context.Context, issueID, projectID string) (enforce.Family, error) {
	var d struct {
		Node *struct {
			Typename string `json:"__typename"`
			relativeData
			Parent    *relativeData `json:"parent"`
			SubIssues subIssuesPage `json:"subIssues"`
			BlockedBy struct {
				Nodes []*relativeData `json:"nodes"`
			} `json:"blockedBy"`
		} `json:"node"`
	}
	vars := b.requiredVars(map[string]any{"id": issueID, "field": b.fieldName, "estimate": EstimateField, "after": nil, "prs": b.prs})
	skipped, err := skips(b.gql.Do(ctx, queryFamily, vars, &d), familyPlaces...)
	if err != nil {
		return enforce.Family{}, fmt.Errorf("read family of %s: %w", issueID, err)
	}
	if d.Node == nil || d.Node.Typename != "Issue" {
		return enforce.Family{}, fmt.Errorf("issue %s: %w", issueID, ErrNotFound)
	}
	b.gql.logSkipped(ctx, "family of "+issueID, skipped)
	seen := func(place string, r *relativeData) bool {
		_, left := skipped[place]
		return r != nil && !left
	}
	fam := enforce.Family{Self: d.Node.relativeData.relative(projectID, b.required)}
	if seen("node.parent", d.Node.Parent) {
		p := d.Node.Parent.relative(projectID, b.required)
		fam.Parent = &p
	}
	for i, bl := range d.Node.BlockedBy.Nodes {
		if !seen(fmt.Sprintf("node.blockedBy.nodes.%d", i), bl) {
			continue
		}
		if rel := bl.relative(projectID, b.required); rel.Open {
			fam.OpenBlockers = append(fam.OpenBlockers, rel)
		}
	}
	page := d.Node.SubIssues
	for i := 0; ; i++ {
		for j, c := range page.Nodes {
			if seen(fmt.Sprintf("node.subIssues.nodes.%d", j), c) {
				fam.Children = append(fam.Children, c.relative(projectID, b.required))
			}
		}
		if !page.PageInfo.HasNextPage || page.PageInfo.EndCursor == "" {
			break
		}
		if i >= maxSubIssuePages {
			return fam, fmt.Errorf("issue %s has more than %d sub-issues", issueID, 100*maxSubIssuePages)
		}
		var next struct {
			Node *struct {
				SubIssues subIssuesPage `json:"subIssues"`
			} `json:"node"`
		}
		vars["after"] = page.PageInfo.EndCursor
		pageSkipped, err := skips(b.gql.Do(ctx, querySubIssuesPage, vars, &next), familyPlaces...)
		if err != nil {
			return fam, fmt.Errorf("read sub-issues of %s: %w", issueID, err)
		}
		b.gql.logSkipped(ctx, fmt.Sprintf("sub-issues of %s after %s", issueID, vars["after"]), pageSkipped)
		skipped = pageSkipped
		if next.Node == nil {
			break
		}
		page = next.Node.SubIssues
	}
	return fam, nil
}

// ClosingIssues returns the issues a pull request closes.
func (b *Board) ClosingIssues(ctx context.Context, owner, repo string, number int) ([]enforce.IssueRef, error) {
	var d struct {
		Repository *struct {
			PullRequest *struct {
				ClosingIssuesReferences struct {
					Nodes []struct {
						Number     int `json:"number"`
						Repository struct {
							Name  string `json:"name"`
							Owner struct {
								Login string `json:"login"`
							} `json:"owner"`
						} `json:"repository"`
					} `json:"nodes"`
				} `json:"closingIssuesReferences"`
			} `json:"pullRequest"`
		} `json:"repository"`
	}
	vars := map[string]any{"owner": owner, "repo": repo, "number": number}
	if err := b.gql.Do(ctx, queryClosingIssues, vars, &d); err != nil {
		return nil, fmt.Errorf("read pull request %s/%s#%d: %w", owner, repo, number, err)
	}
	if d.Repository == nil || d.Repository.PullRequest == nil {
		return nil, fmt.Errorf("pull request %s/%s#%d: %w", owner, repo, number, ErrNotFound)
	}
	var out []enforce.IssueRef
	for _, n := range d.Repository.PullRequest.ClosingIssuesReferences.Nodes {
		out = append(out, enforce.IssueRef{Owner: n.Repository.Owner.Login, Repo: n.Repository.Name, Number: n.Number})
	}
	return out, nil
}
