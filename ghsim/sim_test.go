package ghsim

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
)

func TestDeterminism(t *testing.T) {
	a := startSim(t, testSeed(t), Options{})
	b := startSim(t, testSeed(t), Options{})
	if !reflect.DeepEqual(a.State(), b.State()) {
		t.Fatal("two servers from one seed differ")
	}
	if a.board("alice-token").options["Done"] != b.board("alice-token").options["Done"] {
		t.Fatal("option ids differ")
	}
	// The same actions give the same ids and state (comments get the same database ids too).
	for _, s := range []*sim{a, b} {
		s.do("POST", "/api/v3/repos/acme/app/issues/2/comments", "bearer bob-token", map[string]any{"body": "x"})
		s.setState("alice-token", s.board("alice-token"), 2, "Research Needed")
	}
	if !reflect.DeepEqual(a.State(), b.State()) {
		t.Fatal("same actions, different state")
	}
	const q = `{ organization(login: "acme") { id projectV2(number: 1) { id fields(first: 10) { nodes { ... on ProjectV2SingleSelectField { id options { id } } } }
	  items(first: 100) { nodes { id databaseId content { ... on Issue { id databaseId } } } } } } }`
	da, db := a.gqlOK("alice-token", q, nil), b.gqlOK("alice-token", q, nil)
	if !reflect.DeepEqual(da, db) {
		t.Fatal("GraphQL ids differ")
	}
	ids := fmt.Sprint(da)
	for _, prefix := range []string{"O_", "PVT_", "PVTSSF_", "PVTI_", "I_"} {
		if !strings.Contains(ids, prefix) {
			t.Fatalf("no %s id in %s", prefix, ids)
		}
	}
}

func TestSimStateRequestsAndReset(t *testing.T) {
	s := startSim(t, testSeed(t), Options{})
	b := s.board("agent1-token")
	s.setState("agent1-token", b, 2, "Research Needed")
	s.do("POST", "/api/v3/repos/acme/app/issues/2/comments", "bearer agent1-token", map[string]any{"body": "note"})

	var st State
	s.do("GET", "/_sim/state", "", nil).json(t, &st)
	is, ok := st.Issue("app", 2)
	if !ok || is.Parent != 1 || fmt.Sprint(is.BlockedBy) != "[3]" || is.Fields["Workflow State"] != "Research Needed" || is.Fields["Estimate"] != "S" ||
		len(is.Comments) != 1 || is.Comments[0].Author != "agent-1" || is.Comments[0].Body != "note" || is.ItemID == "" || is.State != "open" {
		t.Fatalf("issue 2: %+v", is)
	}
	if is7, _ := st.Issue("app", 7); is7.State != "closed" || is7.StateReason != "completed" || len(is7.Comments) != 1 {
		t.Fatalf("issue 7: %+v", is7)
	}
	if is8, _ := st.Issue("app", 8); is8.ItemID != "" {
		t.Fatalf("issue 8 should not be on the board: %+v", is8)
	}

	var log RequestLog
	s.do("GET", "/_sim/requests", "", nil).json(t, &log)
	if log.Total != 3 || log.Counts["graphql:organization"] != 1 || log.Counts["graphql:updateProjectV2ItemFieldValue"] != 1 ||
		log.Counts["rest:POST /repos/{owner}/{repo}/issues/{number}/comments"] != 1 || log.Counts["graphql:request"] != 2 {
		t.Fatalf("log: %+v", log)
	}
	last := log.Entries[len(log.Entries)-1]
	if last.TokenOwner != "agent-1" || last.Status != 201 || last.Operation != "rest:POST /repos/{owner}/{repo}/issues/{number}/comments" || last.Time.IsZero() {
		t.Fatalf("entry: %+v", last)
	}

	if r := s.do("POST", "/_sim/reset", "", nil); r.status != 200 {
		t.Fatal(r.status)
	}
	if !reflect.DeepEqual(s.State(), startSim(t, testSeed(t), Options{}).State()) {
		t.Fatal("reset did not restore the seed")
	}
	if s.Requests().Total != 0 {
		t.Fatal("reset kept the request log")
	}

	var cfg map[string]string
	s.do("POST", "/_sim/config", "", map[string]any{"webhook_url": "http://127.0.0.1:1/hook"}).json(t, &cfg)
	if cfg["webhook_url"] != "http://127.0.0.1:1/hook" {
		t.Fatalf("config: %v", cfg)
	}
	if r := s.do("POST", "/_sim/merge", "", map[string]any{"repo": "app", "number": 99}); r.status != 404 {
		t.Fatalf("merge unknown: %d", r.status)
	}
}

func TestConcurrentRequests(t *testing.T) {
	rc := newReceiver(t)
	s := startSim(t, bigSeed(t, 60), Options{WebhookURL: rc.URL})
	tok := s.installationToken()
	b := s.board(tok)
	states := []string{"Research Needed", "Ready for Plan", "In Progress", "Done"}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			token := []string{tok, "alice-token", "bob-token", "agent1-token"}[w%4]
			for i := range 15 {
				n := 1 + (w*15+i)%60
				s.gql(token, setStateMutation, map[string]any{"p": b.project, "i": b.items[n], "f": b.field, "o": b.options[states[i%4]]})
				s.do("POST", fmt.Sprintf("/api/v3/repos/acme/app/issues/%d/comments", n), "bearer "+token, map[string]any{"body": "c"})
				s.gql(token, `{ organization(login: "acme") { projectV2(number: 1) { items(first: 20) { nodes { id } } } } }`, nil)
				s.do("GET", "/_sim/state", "", nil)
			}
		}()
	}
	wg.Wait()
	s.waitIdle()
	comments := 0
	for _, is := range s.State().Issues {
		comments += len(is.Comments)
	}
	if comments != 120 {
		t.Fatalf("%d comments, want 120", comments)
	}
	if len(rc.all()) != len(s.Deliveries()) || len(rc.all()) == 0 {
		t.Fatalf("%d webhooks received, %d recorded", len(rc.all()), len(s.Deliveries()))
	}
}

func TestSeedParsingAndKeyFile(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile("testdata/seed.yaml")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "seed.yaml")
	if err := os.WriteFile(path, src, 0o600); err != nil {
		t.Fatal(err)
	}
	s1, err := LoadSeed(path)
	if err != nil {
		t.Fatal(err)
	}
	key, err := os.ReadFile(filepath.Join(dir, "app.pem"))
	if err != nil || !strings.Contains(string(key), "PRIVATE KEY") || s1.App.PrivateKeyPEM != string(key) {
		t.Fatalf("key file not created: %v", err)
	}
	s2, err := LoadSeed(path)
	if err != nil || s2.App.PrivateKeyPEM != s1.App.PrivateKeyPEM {
		t.Fatal("existing key not reused")
	}
	if len(s1.Projects[0].Fields) != 3 || s1.Projects[0].Fields[0].Name != "Workflow State" || len(s1.Projects[0].Fields[0].Options) != 11 {
		t.Fatalf("fields: %+v", s1.Projects[0].Fields)
	}

	bad := []struct{ yaml, want string }{
		{"org: acme\nbogus: 1\n", "bogus"},
		{strings.Replace(string(src), "title: Epic,", "title: Epic, colour: red,", 1), "colour"},
		{strings.Replace(string(src), "Estimate: M, Priority: P1", "Estimate: XXL, Priority: P1", 1), `"XXL" is not an option`},
		{strings.Replace(string(src), "parent: 4,", "parent: 44,", 1), "no issue app#44"},
		{strings.Replace(string(src), "closes: [2]", "closes: [42]", 1), "no issue app#42"},
		{strings.Replace(string(src), "Priority: [P0, P1, P2, P3]", "Priority: [P0, {name: P1, color: TEAL}]", 1), "unknown color"},
		{"", "empty"},
	}
	for _, c := range bad {
		if _, err := ParseSeed([]byte(c.yaml)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want error containing %q, got %v", c.want, err)
		}
	}
	// Options may carry a color and description.
	ok := strings.Replace(string(src), "Priority: [P0, P1, P2, P3]", "Priority: [{name: P0, color: RED, description: Now}, P1]", 1)
	ok = strings.ReplaceAll(ok, "Priority: P2", "Priority: P1")
	seed, err := ParseSeed([]byte(ok))
	if err != nil {
		t.Fatal(err)
	}
	if o := seed.Projects[0].Fields[1].Options[0]; o.Color != "RED" || o.Description != "Now" {
		t.Fatalf("option %+v", o)
	}
	// JSON round trip of the faults type matches the documented keys.
	fb, _ := json.Marshal(Faults{})
	for _, k := range []string{"latency_ms", "jitter_ms", "error_rate", "secondary_rate_limit_rate", "retry_after_s", "primary_exhausted", "drop_rate", "duplicate_rate", "reorder", "delay_ms"} {
		if !strings.Contains(string(fb), `"`+k+`"`) {
			t.Errorf("faults JSON lacks %q: %s", k, fb)
		}
	}
}
