package webauth

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/palantir/go-githubapp/githubapp"
)

// mapMembers is the membership of each organization; an organization in failing cannot be
// asked.
type mapMembers struct {
	mu      sync.Mutex
	of      map[string][]string
	failing map[string]bool
	calls   int
}

func (m *mapMembers) IsMember(_ context.Context, org, login string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	if m.failing[org] {
		return false, errors.New("403 Resource not accessible by integration")
	}
	for _, l := range m.of[org] {
		if l == login {
			return true, nil
		}
	}
	return false, nil
}

// With the organizations given as they are now (their own policies in force), a viewer gets
// in when they belong to at least one of them, and is told which; with none, nobody gets in;
// one more installed asks about that one only, and a stranger organization's installation
// neither keeps anybody out nor shows its projects to anybody but its members.
func TestMembershipOfTheOrganizationsNow(t *testing.T) {
	var cfg githubapp.Config
	cfg.OAuth.ClientID, cfg.OAuth.ClientSecret = "Iv1.0123456789abcdef", "0123456789abcdef0123456789abcdef01234567"
	members := &mapMembers{of: map[string][]string{"acme": {"alice", "bob"}, "globex": {"bob", "carol"}}, failing: map[string]bool{}}
	var mu sync.Mutex
	var orgs []string
	setOrgs := func(o ...string) { mu.Lock(); defer mu.Unlock(); orgs = o }
	now := time.Unix(1_800_000_000, 0)
	a, err := New(Options{GitHub: cfg, PublicURL: "https://x.example", SessionKey: sessionKey, Members: members,
		OrgsNow: func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), orgs...) }, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	check := func(login, want string, wantAll bool) {
		t.Helper()
		got, all, err := a.memberships(ctx, login)
		if err != nil || strings.Join(got, ",") != want || all != wantAll {
			t.Fatalf("%s: sees %q (all %v, %v), want %q (all %v)", login, strings.Join(got, ","), all, err, want, wantAll)
		}
	}
	check("alice", "", false) // no organization yet: nobody
	setOrgs("acme")
	check("alice", "acme", true)
	setOrgs("acme", "globex")
	calls := members.calls
	check("alice", "acme", false) // globex, installed since, is not hers: she keeps acme
	if members.calls != calls+1 {
		t.Errorf("%d membership calls for one more organization, want 1 (acme's answer is remembered)", members.calls-calls)
	}
	check("bob", "acme,globex", true)
	check("carol", "globex", false)
	check("mallory", "", false)

	// An organization that cannot be asked (its installation lacks the Members permission)
	// is left out, not remembered; the others' members still get in.
	setOrgs("acme", "globex", "initech")
	members.failing["initech"] = true
	if got, all, err := a.memberships(ctx, "alice"); strings.Join(got, ",") != "acme" || all || err == nil {
		t.Fatalf("alice with initech unknown: %q all %v err %v", got, all, err)
	}
	members.failing["initech"] = false
	members.of["initech"] = []string{"alice"}
	check("alice", "acme,initech", false)
}

// A viewer who belongs to one of two organizations served gets in and is told which one;
// one who belongs to both is told all; one of neither gets 403 as before. A third
// organization whose installation cannot answer (no Members permission) keeps nobody out who
// belongs to another, and shows nothing: who belongs to none known gets 503, not the pages.
func TestAViewerOfOneOrganizationSeesThatOne(t *testing.T) {
	e := startServing(t, withMembers, `
orgs:
  - {login: globex, installation_id: 3003, members: [bob, carol], repos: [web]}
  - {login: initech, installation_id: 4004, permissions: {organization_projects: write, issues: write, metadata: read}, members: [alice, mallory], repos: [erp]}
`, []string{"acme", "globex"})
	for _, tc := range []struct {
		login  string
		status int
		want   string
	}{
		{"alice", http.StatusOK, secretData + " for alice at /ui/ scope=acme all=false"},
		{"carol", http.StatusOK, secretData + " for carol at /ui/ scope=globex all=false"},
		{"bob", http.StatusOK, secretData + " for bob at /ui/ scope=acme,globex all=true"},
		{"mallory", http.StatusForbidden, "Not a member"},
	} {
		p := e.browser().signIn("/ui/", tc.login)
		if p.status != tc.status || !strings.Contains(p.body, tc.want) {
			t.Errorf("%s: %d %q, want %d %q", tc.login, p.status, p.body, tc.status, tc.want)
		}
		if tc.status != http.StatusOK && strings.Contains(p.body, secretData) {
			t.Errorf("%s saw the pages: %s", tc.login, p.body)
		}
	}

	e = startServing(t, withMembers, `
orgs:
  - {login: initech, installation_id: 4004, permissions: {organization_projects: write, issues: write, metadata: read}, members: [alice, mallory], repos: [erp]}
`, []string{"acme", "initech"})
	if p := e.browser().signIn("/ui/", "alice"); p.status != http.StatusOK || !strings.Contains(p.body, "scope=acme all=false") {
		t.Errorf("alice, of acme, with initech unable to answer: %d %q", p.status, p.body)
	}
	if p := e.browser().signIn("/ui/", "mallory"); p.status != http.StatusServiceUnavailable || strings.Contains(p.body, secretData) {
		t.Errorf("mallory, of no organization known, with initech unable to answer: %d %q", p.status, p.body)
	}
}
