package handlers_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/app"
	"github.com/ralph-gate/ralph-gate/app/config"
	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/ghsim"
	"github.com/ralph-gate/ralph-gate/sandbox"
)

// startApp runs the app against the simulator (the demo seed: acme's project 1 is enforced).
func startApp(t *testing.T) *sandbox.Sandbox {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sb, err := sandbox.Start(ctx, sandbox.Options{Configure: func(c *config.Config) {
		c.Logging.Level = "error"
		c.Reconcile.Settle = 0
		c.Enforcement.ReorderWindow = 300 * time.Millisecond
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := sb.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return sb
}

// post signs a payload with the app's webhook secret and delivers it to the app's webhook
// route over HTTP, as GitHub does.
func post(t *testing.T, sb *sandbox.Sandbox, delivery string, body []byte) int {
	t.Helper()
	mac := hmac.New(sha256.New, []byte(sb.Config.GitHub.App.WebhookSecret))
	mac.Write(body)
	req, err := http.NewRequest(http.MethodPost, sb.AppURL+app.WebhookRoute, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "projects_v2_item")
	req.Header.Set("X-GitHub-Delivery", delivery)
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// The same generated payloads, through the app's real intake (size limit, signature, go-githubapp's
// dispatcher, the app's error answers, the handler, the store and the queue): every one is
// answered 2xx, and only a change of the enforced single-select field that names the field
// and its value is recorded in an item's history.
func TestAppTakesInEveryDocumentedFieldValue(t *testing.T) {
	sb := startApp(t)
	ctx := context.Background()
	vs := fromToVariants(t)
	n := 0
	for _, m := range metas() {
		if m.project != 0 {
			m.project = 1 // the demo seed's enforced project
		}
		for _, from := range vs {
			for _, to := range vs {
				n++
				// A node id of its own: the app learns nothing of it from an earlier payload.
				m.fieldID = fmt.Sprintf("PVTSSF_field%d", n)
				delivery := fmt.Sprintf("00000000-0000-4000-8000-%012d", n)
				name := fmt.Sprintf("%s, from %s, to %s", m.name, from.label, to.label)
				if status := post(t, sb, delivery, payloadFor(t, sb.Org(), m, from, to)); status/100 != 2 {
					t.Errorf("%s: answered %d", name, status)
					continue
				}
				_, err := sb.App.Store().GetObservation(ctx, delivery)
				recorded := err == nil
				if err != nil && !errors.Is(err, enforce.ErrNotFound) {
					t.Fatal(err)
				}
				if w := expect(m, from, to); recorded != (w == reported) {
					t.Errorf("%s: %s, but recorded: %v", name, w, recorded)
				}
			}
		}
	}
	if err := sb.Settle(ctx); err != nil {
		t.Fatal(err)
	}
}

// A Workflow State change whose payload names neither the field nor its values (GitHub's
// published example carries only field_node_id and field_type) is not lost: the app walks the
// item, finds the value no report explains and, once the redelivery sweep proves no report of
// it is coming, judges it (an agent's illegal move: reverted). Without that payload nothing
// would look at the item until the next reconciliation.
func TestAppEnforcesAChangeItsPayloadDoesNotName(t *testing.T) {
	sb := startApp(t)
	ctx := context.Background()
	if _, err := sb.App.ReconcileNow(ctx); err != nil { // first install: every value adopted
		t.Fatal(err)
	}
	// The change's own webhook never reaches the app.
	if err := sb.Sim.SetFaults(ghsim.Faults{Webhook: ghsim.WebhookFaults{DropRate: 1, Unrecorded: true}}); err != nil {
		t.Fatal(err)
	}
	if err := sb.Move(ctx, "agent-1", "app", 5, "In Progress"); err != nil { // illegal from Backlog
		t.Fatal(err)
	}
	if err := sb.Sim.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if err := sb.Sim.SetFaults(ghsim.Faults{}); err != nil {
		t.Fatal(err)
	}
	b, err := sb.UserBoard("agent-1")
	if err != nil {
		t.Fatal(err)
	}
	items, err := b.IssueItems(ctx, sb.Org(), "app", 5)
	if err != nil || len(items) != 1 {
		t.Fatalf("items of #5: %v %v", items, err)
	}

	// The payload as in GitHub's example: no field_name, project_number, from or to.
	raw, err := os.ReadFile(octokitExample)
	if err != nil {
		t.Fatal(err)
	}
	var p map[string]any
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatal(err)
	}
	p["organization"].(map[string]any)["login"] = sb.Org()
	p["sender"].(map[string]any)["login"] = "agent-1"
	item := p["projects_v2_item"].(map[string]any)
	item["node_id"], item["project_node_id"], item["content_type"] = items[0].ID, items[0].ProjectID, "Issue"
	body, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	const delivery = "00000000-0000-4000-8000-00000000abcd"
	if status := post(t, sb, delivery, body); status/100 != 2 {
		t.Fatalf("answered %d", status)
	}
	if _, err := sb.App.Store().GetObservation(ctx, delivery); !errors.Is(err, enforce.ErrNotFound) {
		t.Fatalf("a change without a value was recorded as a report: %v", err)
	}
	deadline := time.Now().Add(45 * time.Second)
	for {
		if st, err := sb.State("app", 5); err != nil {
			t.Fatal(err)
		} else if st == "Backlog" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the change was never enforced: #5 is still In Progress")
		}
		// What the periodic sweeper does: its complete pass proves no report is missing.
		if _, err := sb.App.SweepNow(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := sb.Settle(ctx); err != nil {
		t.Fatal(err)
	}
	if st, _ := sb.State("app", 5); st != "Backlog" {
		t.Fatalf("#5 is %q after settling, want Backlog", st)
	}
}
