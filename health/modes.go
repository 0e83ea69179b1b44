package health

import (
	"context"
	"fmt"
	"time"

	"github.com/ralph-gate/ralph-gate/enforce"
)

// A project in warn or evaluate mode reverts nothing: its report says what enforce would have
// done over the last week — every refused move that stood (audited would_revert), counted by
// rule and by actor, and the newest ones listed — so an organization sees it before it
// switches enforcement on (docs/INSTALL.md "Roll out in stages").

// WouldRevertWindow is how far back a report looks for the moves enforce would have reverted.
const WouldRevertWindow = 7 * 24 * time.Hour

// maxWouldRevertListed bounds the moves a report lists (all are counted).
const maxWouldRevertListed = 50

// WouldRevert is what enforce would have reverted on a project since a time.
type WouldRevert struct {
	Since   time.Time      `json:"since"`
	Count   int            `json:"count"`
	ByRule  map[string]int `json:"byRule"`
	ByActor map[string]int `json:"byActor"`
	// Moves are the newest of them, newest first.
	Moves []StoodMove `json:"moves"`
}

// StoodMove is one refused move left standing.
type StoodMove struct {
	At     time.Time `json:"at"`
	Item   ItemRef   `json:"item"`
	Actor  string    `json:"actor"`
	From   string    `json:"from"`
	To     string    `json:"to"`
	Rule   string    `json:"rule"`
	Reason string    `json:"reason"`
}

// modeOf is a configured project's mode.
func (r *Reader) modeOf(ref enforce.ProjectRef) enforce.Mode {
	return enforce.ModeIn(r.opts.Mode, ref.Owner, ref.Number)
}

// wouldRevert reads what enforce would have reverted on the project in the last week.
func (r *Reader) wouldRevert(ctx context.Context, projectID string, now time.Time) (*WouldRevert, error) {
	since := now.Add(-WouldRevertWindow)
	es, err := r.src.ProjectVerdicts(ctx, projectID, enforce.VerdictWouldRevert, since)
	if err != nil {
		return nil, fmt.Errorf("moves that stood: %w", err)
	}
	w := &WouldRevert{Since: since.UTC(), Count: len(es), ByRule: map[string]int{}, ByActor: map[string]int{}, Moves: []StoodMove{}}
	for _, e := range es { // newest first, as the store lists them
		w.ByRule[e.Rule]++
		w.ByActor[e.Actor]++
		if len(w.Moves) < maxWouldRevertListed {
			w.Moves = append(w.Moves, StoodMove{At: e.At.UTC(), Item: ItemRef{ItemID: e.ItemID, Repo: e.Repo, Number: e.IssueNumber},
				Actor: e.Actor, From: e.FromState, To: e.ToState, Rule: e.Rule, Reason: e.Reason})
		}
	}
	return w, nil
}
