package ghboard

import (
	"context"
	"fmt"
	"strings"

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
	ProjectItems struct {
		Nodes []struct {
			ID      string `json:"id"`
			Project struct {
				ID string `json:"id"`
			} `json:"project"`
			FieldValue *struct {
				Name string `json:"name"`
			} `json:"fieldValueByName"`
			Estimate *selectValue `json:"estimate"`
		} `json:"nodes"`
	} `json:"projectItems"`
}

func (r relativeData) relative(projectID string) enforce.Relative {
	rel := enforce.Relative{IssueID: r.ID, Number: r.Number, Title: r.Title, Repo: r.Repository.NameWithOwner,
		Open: strings.EqualFold(r.State, "OPEN"), SubIssues: r.SubIssuesSummary.Total}
	for _, n := range r.ProjectItems.Nodes {
		if n.Project.ID == projectID {
			rel.ItemID = n.ID
			if n.FieldValue != nil {
				rel.State = n.FieldValue.Name
			}
			rel.Estimate = n.Estimate.name()
		}
	}
	return rel
}

type subIssuesPage struct {
	PageInfo struct {
		HasNextPage bool   `json:"hasNextPage"`
		EndCursor   string `json:"endCursor"`
	} `json:"pageInfo"`
	Nodes []relativeData `json:"nodes"`
}

// Family reads an issue's relatives: one call, plus one per further 100 sub-issues.
func (b *Board) Family(ctx context.Context, issueID, projectID string) (enforce.Family, error) {
	var d struct {
		Node *struct {
			Typename string `json:"__typename"`
			relativeData
			Parent    *relativeData `json:"parent"`
			SubIssues subIssuesPage `json:"subIssues"`
			BlockedBy struct {
				Nodes []relativeData `json:"nodes"`
			} `json:"blockedBy"`
		} `json:"node"`
	}
	vars := map[string]any{"id": issueID, "field": b.fieldName, "estimate": EstimateField, "after": nil}
	if err := b.gql.Do(ctx, queryFamily, vars, &d); err != nil {
		return enforce.Family{}, fmt.Errorf("read family of %s: %w", issueID, err)
	}
	if d.Node == nil || d.Node.Typename != "Issue" {
		return enforce.Family{}, fmt.Errorf("issue %s: %w", issueID, ErrNotFound)
	}
	fam := enforce.Family{Self: d.Node.relativeData.relative(projectID)}
	if d.Node.Parent != nil {
		p := d.Node.Parent.relative(projectID)
		fam.Parent = &p
	}
	for _, bl := range d.Node.BlockedBy.Nodes {
		if rel := bl.relative(projectID); rel.Open {
			fam.OpenBlockers = append(fam.OpenBlockers, rel)
		}
	}
	page := d.Node.SubIssues
	for i := 0; ; i++ {
		for _, c := range page.Nodes {
			fam.Children = append(fam.Children, c.relative(projectID))
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
		if err := b.gql.Do(ctx, querySubIssuesPage, vars, &next); err != nil {
			return fam, fmt.Errorf("read sub-issues of %s: %w", issueID, err)
		}
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
