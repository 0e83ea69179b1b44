package ghboard

import (
	"context"
	"fmt"
	"time"

	"github.com/ralph-gate/ralph-gate/enforce"
)

// Field names read besides the workflow field (pick ranking).
const (
	EstimateField = "Estimate"
	PriorityField = "Priority"
)

// projectItemContent is what a project page selects of an item's content besides itemContent:
// the page's URL and every blocker, closed ones included (the health report's snapshot).
const projectItemContent = itemContent + `
  ... on Issue { url issueDependenciesSummary { totalBlockedBy } }
  ... on PullRequest { url }`

// pageContent decodes projectItemContent. Its summary shadows contentData's, so it reads the
// open blockers too.
type pageContent struct {
	contentData
	URL          string `json:"url"`
	Dependencies struct {
		BlockedBy      int `json:"blockedBy"`
		TotalBlockedBy int `json:"totalBlockedBy"`
	} `json:"issueDependenciesSummary"`
}

func (c *pageContent) fill(it *enforce.Item) {
	if c == nil {
		return
	}
	c.contentData.fill(it)
	it.OpenBlockers, it.Blockers, it.URL = c.Dependencies.BlockedBy, c.Dependencies.TotalBlockedBy, c.URL
}

type selectValue struct {
	Name string `json:"name"`
	// UpdatedAt is read only where a document selects it (project items: the reconciler).
	UpdatedAt time.Time `json:"updatedAt"`
}

func (v *selectValue) name() string {
	if v == nil {
		return ""
	}
	return v.Name
}

// ProjectItems reads one page (up to 100) of a project's items with their values; after is the
// cursor of the previous page ("" for the first). One GraphQL request per call. An item GitHub
// answers with FORBIDDEN inside (its issue is in a repository the installation may not see) or
// NOT_FOUND is left out of the page, and logged.
func (b *Board) ProjectItems(ctx context.Context, owner string, number int, after string) (enforce.ItemsPage, error) {
	var d struct {
		Organization *struct {
			ProjectV2 *struct {
				ID    string `json:"id"`
				Items struct {
					TotalCount int `json:"totalCount"`
					PageInfo   struct {
						HasNextPage bool   `json:"hasNextPage"`
						EndCursor   string `json:"endCursor"`
					} `json:"pageInfo"`
					Nodes []struct {
						ID         string       `json:"id"`
						IsArchived bool         `json:"isArchived"`
						State      *selectValue `json:"state"`
						Estimate   *selectValue `json:"estimate"`
						Priority   *selectValue `json:"priority"`
						Content    *pageContent `json:"content"`
						requiredValues
					} `json:"nodes"`
				} `json:"items"`
			} `json:"projectV2"`
		} `json:"organization"`
	}
	vars := b.requiredVars(map[string]any{"owner": owner, "number": number, "field": b.fieldName,
		"estimate": EstimateField, "priority": PriorityField, "after": nil})
	if after != "" {
		vars["after"] = after
	}
	skipped, err := skips(b.gql.Do(ctx, queryProjectItems, vars, &d), []any{"organization", "projectV2", "items", "nodes", anyIndex{}})
	if err != nil {
		return enforce.ItemsPage{}, fmt.Errorf("read items of project %s/%d: %w", owner, number, err)
	}
	if d.Organization == nil || d.Organization.ProjectV2 == nil {
		return enforce.ItemsPage{}, fmt.Errorf("project %s/%d: %w", owner, number, ErrNotFound)
	}
	p := d.Organization.ProjectV2
	page := enforce.ItemsPage{Total: p.Items.TotalCount, HasNext: p.Items.PageInfo.HasNextPage, EndCursor: p.Items.PageInfo.EndCursor}
	b.gql.logSkipped(ctx, fmt.Sprintf("items of project %s/%d", owner, number), skipped)
	for i, n := range p.Items.Nodes {
		if _, left := skipped[fmt.Sprintf("organization.projectV2.items.nodes.%d", i)]; left {
			continue // an item whose issue the installation may not see: nothing the app can act on
		}
		it := enforce.Item{ID: n.ID, ProjectID: p.ID, ProjectNumber: number, Owner: owner, Archived: n.IsArchived,
			State: n.State.name(), Estimate: n.Estimate.name(), Priority: n.Priority.name(), Fields: n.values(b.required)}
		if n.State != nil {
			it.StateUpdatedAt = n.State.UpdatedAt
		}
		n.Content.fill(&it)
		page.Items = append(page.Items, it)
	}
	return page, nil
}
