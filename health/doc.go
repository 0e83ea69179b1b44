// Package health computes the health of every enforced project — items per state against
// their WIP limits, locks and their age, items waiting for a person, items whose blockers all
// closed, items with no state, and what the service reports of its own work — from the store
// alone: a report costs no GitHub request, and `ralph-gate report`, the board_health MCP tool
// and the health page all show the same figures.
//
// States and locks come from the items' records, which follow every judged webhook; titles,
// open and blockers come from the snapshot the reconciler writes on each pass, and are as
// fresh as its newest pass (Project.SnapshotAt).
package health
