package ghboard

import (
	"context"
	"fmt"
	"strings"

	"github.com/ralph-gate/ralph-gate/enforce"
)

// IssueItems returns the project items of an issue (one per project it is on), archived ones
// included and marked, each with its Workflow State.
func (b *Board) IssueItems(ctx context.Context, repoOwner, repo string, number int) ([]enforce.Item, error) {
	var d struct {
		Repository *struct {
			Issue *struct {
				ID           string `json:"id"`
				Number       int    `json:"number"`
				Title        string `json:"title"`
				State        string `json:"state"`
				ProjectItems struct {
					Nodes []struct {
						ID         string       `json:"id"`
						IsArchived bool         `json:"isArchived"`
						Project    projectRef   `json:"project"`
						FieldValue *selectValue `json:"fieldValueByName"`
					} `json:"nodes"`
				} `json:"projectItems"`
			} `json:"issue"`
		} `json:"repository"`
	}
	vars := map[string]any{"owner": repoOwner, "repo": repo, "number": number, "field": b.fieldName}
	if err := b.gql.Do(ctx, queryIssueItems, vars, &d); err != nil {
		return nil, fmt.Errorf("read issue %s/%s#%d: %w", repoOwner, repo, number, err)
	}
	if d.Repository == nil || d.Repository.Issue == nil {
		return nil, fmt.Errorf("issue %s/%s#%d: %w", repoOwner, repo, number, ErrNotFound)
	}
	is := d.Repository.Issue
	var items []enforce.Item
	for _, n := range is.ProjectItems.Nodes {
		it := enforce.Item{
			ID: n.ID, ProjectID: n.Project.ID, ProjectNumber: n.Project.Number, Owner: n.Project.Owner.Login,
			ContentType: enforce.ContentIssue, ContentID: is.ID, Number: is.Number, Repo: repoOwner + "/" + repo,
			Title: is.Title, Open: strings.EqualFold(is.State, "OPEN"), Archived: n.IsArchived, State: n.FieldValue.name(),
		}
		items = append(items, it)
	}
	return items, nil
}

// SetIssueOpen reopens an issue, or closes it with a reason (completed, not_planned; anything
// else is completed), in one mutation.
func (b *Board) SetIssueOpen(ctx context.Context, issueID string, open bool, reason string) error {
	if open {
		if err := b.gql.Do(ctx, mutationReopenIssue, map[string]any{"id": issueID}, nil); err != nil {
			return fmt.Errorf("reopen issue %s: %w", issueID, err)
		}
		return nil
	}
	r := "COMPLETED"
	if strings.EqualFold(reason, "not_planned") {
		r = "NOT_PLANNED"
	}
	if err := b.gql.Do(ctx, mutationCloseIssue, map[string]any{"id": issueID, "reason": r}, nil); err != nil {
		return fmt.Errorf("close issue %s: %w", issueID, err)
	}
	return nil
}
