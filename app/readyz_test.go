package app

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/app/config"
	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/store"
)

// readyApp is an app that is serving, over a real store, with cfg (and, when config.yml
// lists no projects, the organizations' policies), as far as /readyz and the pages need.
func readyApp(t *testing.T, cfg config.Config) *App {
	t.Helper()
	st, err := store.Open(context.Background(), store.DriverSQLite, filepath.Join(t.TempDir(), "ralph-gate.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	a := &App{cfg: cfg, store: st, preflight: newBoardGate(false)}
	if cfg.OrgPolicies() {
		a.orgs = newOrgPolicies(cfg, "ralph-gate[bot]")
	}
	a.ready.Store(true)
	return a
}

// putPolicy puts an organization's policy file in force.
func (a *App) putPolicy(t *testing.T, owner, text string) {
	t.Helper()
	op, problems := a.orgs.compile(owner, 7, "0123456789abcdef", []byte(text), time.Now())
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	a.orgs.put(op)
}

func readyz(t *testing.T, a *App) (int, string) {
	t.Helper()
	w := httptest.NewRecorder()
	a.readyz(w, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	return w.Code, strings.TrimSpace(w.Body.String())
}

// /readyz says what is enforced, each project with its mode. With the policies in the
// organizations' repositories and none in force yet, nothing is: it says so, and stays 200,
// since a pod taken out of the Service would never receive the push that brings the first
// policy.
func TestReadySaysWhatIsEnforced(t *testing.T) {
	base, err := config.Default()
	if err != nil {
		t.Fatal(err)
	}
	t.Run("the organizations' policies", func(t *testing.T) {
		a := readyApp(t, base)
		if code, body := readyz(t, a); code != http.StatusOK || body != "ready: no organization's policy is in force yet: nothing is enforced" {
			t.Errorf("no policy in force: %d %q", code, body)
		}
		a.putPolicy(t, "acme", "projects:\n  - number: 1\n  - {number: 2, mode: evaluate}\n")
		a.putPolicy(t, "globex", "projects:\n  - {number: 7, mode: warn}\n")
		if code, body := readyz(t, a); code != http.StatusOK || body != "ready: enforcing acme/1 (enforce), acme/2 (evaluate), globex/7 (warn)" {
			t.Errorf("two policies in force: %d %q", code, body)
		}
	})
	t.Run("config.yml's projects", func(t *testing.T) {
		cfg := base
		cfg.Projects = []config.Project{{Owner: "acme", Number: 1}, {Owner: "acme", Number: 3, Mode: "warn"}}
		a := readyApp(t, cfg)
		if code, body := readyz(t, a); code != http.StatusOK || body != "ready: enforcing acme/1 (enforce), acme/3 (warn)" {
			t.Errorf("%d %q", code, body)
		}
	})
	t.Run("many projects", func(t *testing.T) {
		cfg := base
		for n := range maxReadyProjects + 5 {
			cfg.Projects = append(cfg.Projects, config.Project{Owner: "acme", Number: n + 1})
		}
		a := readyApp(t, cfg)
		if _, body := readyz(t, a); !strings.HasPrefix(body, "ready: enforcing acme/1 (enforce), acme/2 (enforce)") || !strings.HasSuffix(body, "acme/20 (enforce), and 5 more") {
			t.Errorf("%q", body)
		}
	})
	t.Run("not ready says why, as before", func(t *testing.T) {
		a := readyApp(t, base)
		a.preflight = newBoardGate(true)
		if code, body := readyz(t, a); code != http.StatusServiceUnavailable || body != "checking the project boards" {
			t.Errorf("%d %q", code, body)
		}
	})
}

// The board pages show a viewer who belongs to some of the organizations served their
// agents' use of the façade only: an agent works for the organization whose policy names it.
func TestUIFacadeOfTheViewersOrganizations(t *testing.T) {
	base, err := config.Default()
	if err != nil {
		t.Fatal(err)
	}
	base.MCP.Agents = []config.MCPAgent{{Name: "builder-1", Token: strings.Repeat("a", 32)}, {Name: "builder-2", Token: strings.Repeat("b", 32)},
		{Name: "loner", Token: strings.Repeat("c", 32)}}
	a := readyApp(t, base)
	a.putPolicy(t, "acme", "projects:\n  - number: 1\nmcp:\n  agents:\n    - {name: builder-1}\n")
	a.putPolicy(t, "globex", "projects:\n  - number: 1\nmcp:\n  agents:\n    - {name: builder-2}\n")
	if got := strings.Join(a.servedOrgs(), ","); got != "acme,globex" {
		t.Errorf("served organizations %q", got)
	}
	ctx := context.Background()
	now := time.Now()
	for _, agent := range []string{"builder-1", "builder-2", "builder-2", "loner"} {
		if err := a.store.RecordToolCall(ctx, enforce.ToolCall{At: now.Add(-time.Minute), Tool: "claim_ticket", Agent: agent, Outcome: enforce.OutcomeOK}); err != nil {
			t.Fatal(err)
		}
	}
	for orgs, want := range map[string]string{"ACME": "builder-1:1", "globex": "builder-2:2", "acme,globex": "builder-2:2,builder-1:1", "initech": ""} {
		f, err := a.facadeOf(ctx, now, strings.Split(orgs, ","))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, u := range f.Day.Agents {
			got = append(got, u.Name+":"+string(rune('0'+u.Calls)))
		}
		if strings.Join(got, ",") != want || f.Hour.Calls != f.Day.Calls {
			t.Errorf("façade of %s: %v (hour %d, day %d calls), want %q", orgs, got, f.Hour.Calls, f.Day.Calls, want)
		}
	}
}
