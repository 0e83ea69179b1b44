package webauth

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/google/go-github/v89/github"
	"github.com/palantir/go-githubapp/githubapp"
)

// Members answers whether a GitHub user belongs to an organization.
type Members interface {
	IsMember(ctx context.Context, org, login string) (bool, error)
}

// InstallationMembers asks GitHub with the App's installation token on each organization:
// GET /orgs/{org}/members/{username} (204 a member, 404 not), which needs the App's
// "Members" organization permission (read). docs/GITHUB.md says why this call.
type InstallationMembers struct {
	creator githubapp.ClientCreator

	mu      sync.Mutex
	clients map[string]*github.Client // organization (lower case) → its installation's client
}

// NewInstallationMembers checks membership with the App's installations.
func NewInstallationMembers(creator githubapp.ClientCreator) *InstallationMembers {
	return &InstallationMembers{creator: creator, clients: map[string]*github.Client{}}
}

// IsMember implements Members.
func (m *InstallationMembers) IsMember(ctx context.Context, org, login string) (bool, error) {
	client, err := m.client(ctx, org)
	if err != nil {
		return false, err
	}
	// A 302 (the requester is not a member) is followed to the public-membership check,
	// whose 404 reads as "not a member": never a member by mistake.
	ok, _, err := client.Organizations.IsMember(ctx, org, login)
	if err != nil {
		return false, fmt.Errorf("check %s's membership of %s: %w", login, org, err)
	}
	return ok, nil
}

// client keeps one installation client per organization: each holds its installation token
// until it expires.
func (m *InstallationMembers) client(ctx context.Context, org string) (*github.Client, error) {
	key := strings.ToLower(org)
	m.mu.Lock()
	defer m.mu.Unlock()
	if c, ok := m.clients[key]; ok {
		return c, nil
	}
	app, err := m.creator.NewAppClient()
	if err != nil {
		return nil, fmt.Errorf("github app client: %w", err)
	}
	inst, _, err := app.Apps.GetOrganizationInstallation(ctx, org)
	if err != nil {
		return nil, fmt.Errorf("find the installation on %s: %w", org, err)
	}
	c, err := m.creator.NewInstallationClient(inst.GetID())
	if err != nil {
		return nil, fmt.Errorf("installation client for %s: %w", org, err)
	}
	m.clients[key] = c
	return c, nil
}

// memberCache remembers recent answers for a short while, for a bounded number of them (one
// per person and organization): every page view would otherwise cost one API call per
// organization.
type memberCache struct {
	ttl time.Duration
	max int
	now func() time.Time

	mu      sync.Mutex
	entries map[string]cached
}

type cached struct {
	member  bool
	expires time.Time
}

func newMemberCache(ttl time.Duration, max int, now func() time.Time) *memberCache {
	return &memberCache{ttl: ttl, max: max, now: now, entries: map[string]cached{}}
}

func (c *memberCache) get(login string) (member, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[strings.ToLower(login)]
	if !ok || !c.now().Before(e.expires) {
		return false, false
	}
	return e.member, true
}

func (c *memberCache) put(login string, member bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	key := strings.ToLower(login)
	if _, ok := c.entries[key]; !ok && len(c.entries) >= c.max {
		// Full: drop what has expired, then the entry closest to expiring.
		var oldest string
		for k, e := range c.entries {
			if !now.Before(e.expires) {
				delete(c.entries, k)
			} else if oldest == "" || e.expires.Before(c.entries[oldest].expires) {
				oldest = k
			}
		}
		if len(c.entries) >= c.max {
			delete(c.entries, oldest)
		}
	}
	c.entries[key] = cached{member: member, expires: now.Add(c.ttl)}
}

func (c *memberCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}
