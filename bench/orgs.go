package bench

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ralph-gate/ralph-gate/enforce"
)

// A second organization on the storm's deployment, with its own installation, board and
// agents' moves: its single refused moves are timed while idle and while the first
// organization's storm is being reverted, so that the report says whether one organization's
// storm delays another's reverts (docs/ENFORCEMENT.md "Policy per organization").
const (
	calmOrg          = "calm"
	calmRepo         = "web"
	calmInstallation = 8003
	// calmSamples is how many single refused moves are timed, idle and during the storm.
	calmSamples = 5
	// calmRevertLimit bounds the wait for one revert: a bound on a hang, not a figure.
	calmRevertLimit = 2 * time.Minute
)

// calmSeed is the seed's section of the second organization: 2 × calmSamples issues in
// Backlog on its own project.
func calmSeed() string {
	var b strings.Builder
	fmt.Fprintf(&b, `orgs:
  - login: %s
    installation_id: %d
    repos: [%s]
    projects:
      - number: 1
        title: Calm
        fields:
          %s: [Backlog, Research Needed, Research in Progress, Ready for Plan, Plan in Progress,
               Plan in Review, In Progress, In Review, Done, Canceled, Human Needed]
    issues:
`, calmOrg, calmInstallation, calmRepo, field)
	for n := 1; n <= 2*calmSamples; n++ {
		fmt.Fprintf(&b, "      - {repo: %s, number: %d, title: \"Calm %d\", project: 1, fields: {%s: Backlog}}\n", calmRepo, n, n, field)
	}
	return b.String()
}

// calmItems reads the second organization's items, by number.
func (h *harness) calmItems(ctx context.Context) (map[int]enforce.Item, error) {
	out := map[int]enforce.Item{}
	after := ""
	for {
		page, err := h.board(humans[0]).ProjectItems(ctx, calmOrg, 1, after)
		if err != nil {
			return nil, fmt.Errorf("read %s's project: %w", calmOrg, err)
		}
		for _, it := range page.Items {
			out[it.Number] = it
		}
		if !page.HasNext {
			return out, nil
		}
		after = page.EndCursor
	}
}

// calmReverts makes one agent's refused move on each item, one at a time, and times each from
// the move to the end of its revert (the first mutation the second organization's
// installation makes after it); it waits for the card to be back before the next.
func (h *harness) calmReverts(ctx context.Context, items []enforce.Item) ([]time.Duration, error) {
	identity := fmt.Sprintf("installation:%d", calmInstallation)
	var out []time.Duration
	for _, it := range items {
		seq := lastSeq(h.sb.Sim)
		if err := h.board(agents[0]).SetState(ctx, it, "In Progress"); err != nil {
			return nil, fmt.Errorf("%s moves %s#%d: %w", agents[0], calmOrg, it.Number, err)
		}
		moved := time.Now()
		var reverted time.Time
		for deadline := moved.Add(calmRevertLimit); reverted.IsZero(); {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("the refused move of %s#%d was not reverted within %s", calmOrg, it.Number, calmRevertLimit)
			}
			for _, e := range appRequests(h.sb.Sim, seq) {
				if e.Identity == identity && e.Status == 200 && hasOp(e, opSetState) {
					reverted = end(e)
					break
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
		out = append(out, reverted.Sub(moved))
		if err := h.calmBack(ctx, it.Number); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// calmBack waits until the second organization's item shows Backlog again.
func (h *harness) calmBack(ctx context.Context, number int) error {
	deadline := time.Now().Add(calmRevertLimit)
	for {
		st, ok := h.sb.Sim.State().OrgState(calmOrg)
		if ok {
			for _, is := range st.Issues {
				if is.Number == number && is.Fields[field] == "Backlog" {
					return nil
				}
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s#%d did not come back to Backlog within %s", calmOrg, number, calmRevertLimit)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// calmFigures records the second organization's revert times.
func calmFigures(r *Result, idle, storm []time.Duration) {
	r.OrgsSamples = len(idle)
	r.OrgsIdleRevertP50MS, r.OrgsIdleRevertMaxMS = num(percentile(idle, 50)), num(percentile(idle, 100))
	r.OrgsStormRevertP50MS, r.OrgsStormRevertMaxMS = num(percentile(storm, 50)), num(percentile(storm, 100))
}
