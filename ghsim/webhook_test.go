package ghsim

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-github/v89/github"
)

func decodePayload(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestUserFieldChangeSendsSignedWebhook(t *testing.T) {
	rc := newReceiver(t)
	s := startSim(t, testSeed(t), Options{})
	s.SetWebhookURL(rc.URL) // the receiver learns its port after ghsim starts
	b := s.board("alice-token")

	s.setState("alice-token", b, 1, "Research Needed")
	s.setState("alice-token", b, 6, "Backlog")         // from unset: from is null
	s.setState("alice-token", b, 1, "Research Needed") // same value: nothing changes, nothing is sent
	s.waitIdle()

	got := rc.all()
	if len(got) != 2 {
		t.Fatalf("got %d webhooks, want 2", len(got))
	}
	schemas := loadSchemas(t, "testdata/payloads/openapi-webhooks-12.1.0_projects-v2-item-edited_schema.json", "testdata/webhook-components.json")
	for i, w := range got {
		h := w.header
		mac := hmac.New(sha256.New, []byte("ghsim-webhook-s3cret"))
		mac.Write(w.body)
		if want := "sha256=" + hex.EncodeToString(mac.Sum(nil)); h.Get("X-Hub-Signature-256") != want {
			t.Fatalf("signature %q, want %q", h.Get("X-Hub-Signature-256"), want)
		}
		if h.Get("X-GitHub-Event") != "projects_v2_item" || h.Get("X-GitHub-Hook-Installation-Target-Type") != "integration" ||
			h.Get("Content-Type") != "application/json" || !strings.HasPrefix(h.Get("User-Agent"), "GitHub-Hookshot/") || h.Get("X-GitHub-Hook-ID") == "" {
			t.Fatalf("headers: %v", h)
		}
		if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(h.Get("X-GitHub-Delivery")) {
			t.Fatalf("delivery guid %q", h.Get("X-GitHub-Delivery"))
		}
		// go-github (what go-githubapp hands the app) accepts signature and payload.
		if err := github.ValidateSignature(h.Get("X-Hub-Signature-256"), w.body, []byte("ghsim-webhook-s3cret")); err != nil {
			t.Fatal(err)
		}
		ev, err := github.ParseWebHook(h.Get("X-GitHub-Event"), w.body)
		if e, ok := ev.(*github.ProjectV2ItemEvent); err != nil || !ok || e.GetChanges().GetFieldValue().GetFieldName() != "Workflow State" || e.GetSender().GetLogin() != "alice" || e.GetInstallation().GetID() != 2002 {
			t.Fatalf("go-github: %T %v", ev, err)
		}
		p := decodePayload(t, w.body)
		if errs := schemas.validate("webhook-projects-v2-item-edited", p); len(errs) > 0 {
			t.Fatalf("webhook %d does not match the published schema:\n%s\n%s", i, strings.Join(errs, "\n"), w.body)
		}
		fv := dig(p, "changes", "field_value")
		if dig(fv, "field_type") != "single_select" || dig(fv, "field_name") != "Workflow State" || dig(fv, "field_node_id") != b.field || dig(fv, "project_number") != float64(1) {
			t.Fatalf("field_value = %v", fv)
		}
		if dig(p, "sender", "login") != "alice" || dig(p, "sender", "type") != "User" || dig(p, "installation", "id") != float64(2002) || dig(p, "organization", "login") != "acme" {
			t.Fatalf("envelope: %s", w.body)
		}
	}
	first := decodePayload(t, got[0].body)
	if dig(first, "changes", "field_value", "from", "name") != "Backlog" || dig(first, "changes", "field_value", "to", "name") != "Research Needed" ||
		dig(first, "changes", "field_value", "to", "id") != b.options["Research Needed"] || dig(first, "projects_v2_item", "node_id") != b.items[1] {
		t.Fatalf("first: %s", got[0].body)
	}
	second := decodePayload(t, got[1].body)
	if fv := dig(second, "changes", "field_value").(map[string]any); fv["from"] != nil || dig(fv, "to", "name") != "Backlog" {
		t.Fatalf("second: %s", got[1].body)
	}
	st := s.State()
	if is, _ := st.Issue("app", 1); is.Fields["Workflow State"] != "Research Needed" || is.ItemID != b.items[1] {
		t.Fatalf("state: %+v", is)
	}
}

func TestBotWritesSendWebhooksFromTheBot(t *testing.T) {
	rc := newReceiver(t)
	s := startSim(t, testSeed(t), Options{WebhookURL: rc.URL})
	tok := s.installationToken()
	b := s.board(tok)
	s.setState(tok, b, 2, "Ready for Plan")
	s.waitIdle()
	got := rc.all()
	if len(got) != 1 {
		t.Fatalf("got %d webhooks", len(got))
	}
	p := decodePayload(t, got[0].body)
	if dig(p, "sender", "login") != "ralph-gate[bot]" || dig(p, "sender", "type") != "Bot" {
		t.Fatalf("sender: %v", p["sender"])
	}
}

func TestIssueAndPullRequestWebhooks(t *testing.T) {
	rc := newReceiver(t)
	s := startSim(t, testSeed(t), Options{WebhookURL: rc.URL})

	// REST close as not planned, GraphQL reopen, GraphQL close (completed by default).
	if r := s.do("PATCH", "/api/v3/repos/acme/app/issues/3", "bearer bob-token", map[string]any{"state": "closed", "state_reason": "not_planned"}); r.status != 200 || !strings.Contains(string(r.body), `"state_reason":"not_planned"`) {
		t.Fatalf("close: %d %s", r.status, r.body)
	}
	id := dig(s.gqlOK("bob-token", `{ repository(owner: "acme", name: "app") { issue(number: 3) { id state stateReason } } }`, nil), "repository", "issue")
	if dig(id, "state") != "CLOSED" || dig(id, "stateReason") != "NOT_PLANNED" {
		t.Fatalf("issue: %v", id)
	}
	s.gqlOK("bob-token", `mutation($id: ID!) { reopenIssue(input: {issueId: $id}) { issue { state stateReason } } }`, map[string]any{"id": dig(id, "id")})
	d := s.gqlOK("bob-token", `mutation($id: ID!) { closeIssue(input: {issueId: $id}) { issue { state stateReason } } }`, map[string]any{"id": dig(id, "id")})
	if dig(d, "closeIssue", "issue", "stateReason") != "COMPLETED" {
		t.Fatalf("close: %v", d)
	}

	// Merging PR 10 closes issue 2: pull_request first, then issues.
	if r := s.do("POST", "/_sim/merge", "", map[string]any{"repo": "app", "number": 10}); r.status != 200 {
		t.Fatalf("merge: %d %s", r.status, r.body)
	}
	s.waitIdle()
	var seq []string
	for _, w := range rc.all() {
		p := decodePayload(t, w.body)
		ev := w.header.Get("X-GitHub-Event") + "." + p["action"].(string)
		if n, ok := dig(p, "issue", "number").(float64); ok {
			ev += fmt.Sprintf("#%d", int(n))
			if dig(p, "issue", "state_reason") == nil || dig(p, "repository", "full_name") != "acme/app" {
				t.Fatalf("issue payload: %s", w.body)
			}
		}
		if w.header.Get("X-GitHub-Event") == "pull_request" {
			if dig(p, "pull_request", "merged") != true || dig(p, "number") != float64(10) {
				t.Fatalf("pull_request payload: %s", w.body)
			}
		}
		seq = append(seq, ev)
		parsed, err := github.ParseWebHook(w.header.Get("X-GitHub-Event"), w.body)
		switch e := parsed.(type) {
		case *github.IssuesEvent:
			if e.GetIssue().GetStateReason() == "" || e.GetRepo().GetFullName() != "acme/app" {
				t.Fatalf("go-github issues event: %+v", e)
			}
		case *github.PullRequestEvent:
			if !e.GetPullRequest().GetMerged() || e.GetNumber() != 10 {
				t.Fatalf("go-github pull_request event: %+v", e)
			}
		default:
			t.Fatalf("go-github: %T %v", parsed, err)
		}
	}
	want := []string{"issues.closed#3", "issues.reopened#3", "issues.closed#3", "pull_request.closed", "issues.closed#2"}
	if strings.Join(seq, ",") != strings.Join(want, ",") {
		t.Fatalf("webhooks %v, want %v", seq, want)
	}
	if is, _ := s.State().Issue("app", 2); is.State != "closed" || is.StateReason != "completed" {
		t.Fatalf("issue 2: %+v", is)
	}
	if r := s.do("POST", "/_sim/merge", "", map[string]any{"repo": "app", "number": 10}); r.status != 422 {
		t.Fatalf("second merge: %d", r.status)
	}
}

func jsonNum(f float64) string { b, _ := json.Marshal(f); return string(b) }

func TestAddItemAndArchiveWebhooks(t *testing.T) {
	rc := newReceiver(t)
	s := startSim(t, testSeed(t), Options{WebhookURL: rc.URL})
	b := s.board("alice-token")
	issue8 := dig(s.gqlOK("alice-token", `{ repository(owner: "acme", name: "app") { issue(number: 8) { id } } }`, nil), "repository", "issue", "id")
	d := s.gqlOK("alice-token", `mutation($p: ID!, $c: ID!) { addProjectV2ItemById(input: {projectId: $p, contentId: $c}) { item { id type } } }`,
		map[string]any{"p": b.project, "c": issue8})
	itemID := dig(d, "addProjectV2ItemById", "item", "id")
	// Adding again returns the same item and sends nothing.
	d = s.gqlOK("alice-token", `mutation($p: ID!, $c: ID!) { addProjectV2ItemById(input: {projectId: $p, contentId: $c}) { item { id } } }`,
		map[string]any{"p": b.project, "c": issue8})
	if dig(d, "addProjectV2ItemById", "item", "id") != itemID {
		t.Fatal("second add made a new item")
	}
	s.gqlOK("alice-token", `mutation($p: ID!, $i: ID!) { archiveProjectV2Item(input: {projectId: $p, itemId: $i}) { item { isArchived } } }`,
		map[string]any{"p": b.project, "i": itemID})
	d = s.gqlOK("alice-token", `mutation($p: ID!, $i: ID!) { deleteProjectV2Item(input: {projectId: $p, itemId: $i}) { deletedItemId } }`,
		map[string]any{"p": b.project, "i": itemID})
	if dig(d, "deleteProjectV2Item", "deletedItemId") != itemID {
		t.Fatalf("deleted %v", d)
	}
	// The item is gone: reading it is GitHub's NOT_FOUND.
	if out := s.gql("alice-token", `query($i: ID!) { node(id: $i) { id } }`, map[string]any{"i": itemID}); len(out.Errors) == 0 || out.Errors[0]["type"] != "NOT_FOUND" {
		t.Fatal("a deleted item can still be read")
	}
	s.waitIdle()
	var actions []string
	for _, w := range rc.all() {
		actions = append(actions, decodePayload(t, w.body)["action"].(string))
	}
	if strings.Join(actions, ",") != "created,archived,deleted" {
		t.Fatalf("actions %v", actions)
	}
}

func TestDeliveriesAPIAndRedelivery(t *testing.T) {
	rc := newReceiver(t)
	rc.setStatus(500)
	s := startSim(t, testSeed(t), Options{WebhookURL: rc.URL})
	b := s.board("alice-token")
	for _, st := range []string{"Research Needed", "Ready for Plan", "Plan in Progress"} {
		s.setState("alice-token", b, 1, st)
	}
	s.waitIdle()
	jwt := "Bearer " + s.appJWT()

	// Page through with per_page=2 following the Link header.
	var all []map[string]any
	next := "/api/v3/app/hook/deliveries?per_page=2"
	for pages := 0; next != ""; pages++ {
		if pages > 5 {
			t.Fatal("pagination does not end")
		}
		r := s.do("GET", next, jwt, nil)
		if r.status != 200 {
			t.Fatalf("list: %d %s", r.status, r.body)
		}
		var page []map[string]any
		r.json(t, &page)
		all = append(all, page...)
		next = ""
		if m := regexp.MustCompile(`<([^>]+)>; rel="next"`).FindStringSubmatch(r.header.Get("Link")); m != nil {
			u, _ := url.Parse(m[1])
			next = u.RequestURI()
		}
	}
	if len(all) != 3 {
		t.Fatalf("listed %d deliveries", len(all))
	}
	for _, k := range []string{"id", "guid", "delivered_at", "redelivery", "duration", "status", "status_code", "event", "action", "installation_id"} {
		if _, ok := all[0][k]; !ok {
			t.Fatalf("delivery lacks %q: %v", k, all[0])
		}
	}
	if all[0]["status_code"] != float64(500) || all[0]["event"] != "projects_v2_item" || all[0]["action"] != "edited" {
		t.Fatalf("delivery: %v", all[0])
	}
	if all[0]["id"].(float64) < all[1]["id"].(float64) {
		t.Fatal("deliveries are not newest first")
	}
	if r := s.do("GET", "/api/v3/app/hook/deliveries?status=failure", jwt, nil); !strings.Contains(string(r.body), `"status_code":500`) {
		t.Fatalf("failure filter: %s", r.body)
	}

	// Redeliver the oldest once the receiver is healthy: same GUID, redelivery true.
	rc.setStatus(200)
	oldest := all[len(all)-1]
	id := jsonNum(oldest["id"].(float64))
	r := s.do("GET", "/api/v3/app/hook/deliveries/"+id, jwt, nil)
	if r.status != 200 || !strings.Contains(string(r.body), `"request"`) || !strings.Contains(string(r.body), "X-Hub-Signature-256") {
		t.Fatalf("get delivery: %d %s", r.status, r.body)
	}
	if r := s.do("POST", "/api/v3/app/hook/deliveries/"+id+"/attempts", jwt, nil); r.status != 202 {
		t.Fatalf("redeliver: %d %s", r.status, r.body)
	}
	s.waitIdle()
	got := rc.all()
	last := got[len(got)-1]
	if last.header.Get("X-GitHub-Delivery") != oldest["guid"] || string(last.body) != string(got[0].body) {
		t.Fatal("redelivery differs from the original")
	}
	ds := s.Deliveries()
	if d := ds[len(ds)-1]; !d.Redelivery || !d.Success() || d.GUID != oldest["guid"] {
		t.Fatalf("recorded redelivery: %+v", d)
	}
	if r := s.do("POST", "/api/v3/app/hook/deliveries/1/attempts", jwt, nil); r.status != 404 {
		t.Fatalf("unknown delivery: %d", r.status)
	}
	if r := s.do("GET", "/_sim/deliveries", "", nil); !strings.Contains(string(r.body), `"success":true`) || !strings.Contains(string(r.body), `"payload":{`) {
		t.Fatalf("/_sim/deliveries: %s", r.body)
	}
}
