package web

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/store"
)

// A violation comment links to the decision on its change by the change's delivery: the page
// redirects to that decision (the revert, when the change was refused), and says so when no
// decision was recorded.
func TestDecisionByDelivery(t *testing.T) {
	e := newEnv(t, boardReport(), Options{})
	// The same change with an earlier entry than its revert: the revert is the one linked.
	if _, err := e.st.AppendAudit(context.Background(), enforce.AuditEntry{At: t0.Add(-4*time.Hour + time.Second), DeliveryID: "d-1",
		ItemID: "PVTI_12", IssueNumber: 12, Repo: "acme/web", Actor: "agent-1", Verdict: enforce.VerdictIgnored, Reason: "retried"}); err != nil {
		t.Fatal(err)
	}
	res := e.get(t, "/ui"+DeliveryPath+"d-1")
	if res.status != http.StatusSeeOther || res.header.Get("Location") != "/ui/decisions/"+itoa(e.ids[1]) {
		t.Fatalf("by delivery d-1: %d to %q, want 303 to the revert's page /ui/decisions/%d", res.status, res.header.Get("Location"), e.ids[1])
	}
	if res := e.get(t, "/ui"+DeliveryPath+"d-none"); res.status != http.StatusNotFound {
		t.Fatalf("an unknown delivery: %d, want 404", res.status)
	}
	page, err := e.st.ListAudit(context.Background(), store.AuditQuery{DeliveryID: "d-3"})
	if err != nil || len(page.Entries) != 1 || page.Entries[0].Actor != "Bob" {
		t.Fatalf("the store's delivery filter: %+v %v", page.Entries, err)
	}
}
