package webauth

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/palantir/go-githubapp/githubapp"
)

// mapMembers is the membership of each organization.
type mapMembers struct {
	mu    sync.Mutex
	of    map[string][]string
	calls int
}

func (m *mapMembers) IsMember(_ context.Context, org, login string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	for _, l := range m.of[org] {
		if l == login {
			return true, nil
		}
	}
	return false, nil
}

// With the organizations given as they are now (their own policies in force), a viewer must
// belong to every one of them; with none, nobody gets in; one more installed asks again.
func TestMembershipOfTheOrganizationsNow(t *testing.T) {
	var cfg githubapp.Config
	cfg.OAuth.ClientID, cfg.OAuth.ClientSecret = "Iv1.0123456789abcdef", "0123456789abcdef0123456789abcdef01234567"
	members := &mapMembers{of: map[string][]string{"acme": {"alice", "bob"}, "globex": {"bob"}}}
	var mu sync.Mutex
	var orgs []string
	now := time.Unix(1_800_000_000, 0)
	a, err := New(Options{GitHub: cfg, PublicURL: "https://x.example", SessionKey: sessionKey, Members: members,
		OrgsNow: func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), orgs...) }, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if ok, err := a.member(ctx, "alice"); err != nil || ok {
		t.Fatalf("no organization yet: alice gets in (%v)", err)
	}
	mu.Lock()
	orgs = []string{"acme"}
	mu.Unlock()
	if ok, _ := a.member(ctx, "alice"); !ok {
		t.Fatal("alice, of acme, is kept out")
	}
	mu.Lock()
	orgs = []string{"acme", "globex"}
	mu.Unlock()
	if ok, _ := a.member(ctx, "alice"); ok {
		t.Fatal("alice is not of globex, installed since, yet gets in (a remembered answer)")
	}
	if ok, _ := a.member(ctx, "bob"); !ok {
		t.Fatal("bob, of both, is kept out")
	}
}
