package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/app/config"
)

// twoOrgsUISeed is the demo seed with the App's OAuth client and the Members permission, acme's
// policy file (project 1) and a second organization, beta, with its own policy file (project
// 1) and its own member, carol, who is not acme's.
func twoOrgsUISeed(t *testing.T) []byte {
	t.Helper()
	s := string(DemoSeed())
	for old, repl := range map[string]string{
		"app: {id: 1001, slug: ralph-gate, installation_id: 2002, webhook_secret: demo-webhook-secret}": "app: {id: 1001, slug: ralph-gate, installation_id: 2002, webhook_secret: demo-webhook-secret,\n" +
			"      client_id: " + uiClientID + ", client_secret: " + uiClientSecret + ",\n" +
			"      permissions: {organization_projects: write, issues: write, pull_requests: read, metadata: read, members: read, contents: read, checks: write}}",
		"  - {login: alice, token: alice-token, kind: human}\n": "  - {login: alice, token: alice-token, kind: human}\n" +
			"  - {login: carol, token: carol-token, kind: human, org_role: none}\n  - {login: mallory, token: mallory-token, kind: human, org_role: none}\n",
		"repos: [app]": "repos:\n  - app\n  - {name: .github, files: {ralph-gate.yml: \"projects:\\n  - number: 1\\n\"}}",
	} {
		if !strings.Contains(s, old) {
			t.Fatalf("the demo seed changed: update twoOrgsUISeed (%q)", old)
		}
		s = strings.Replace(s, old, repl, 1)
	}
	return []byte(s + `orgs:
  - login: beta
    installation_id: 3003
    members: [carol]
    repos:
      - web
      - {name: .github, files: {ralph-gate.yml: "projects:\n  - {number: 1, mode: evaluate}\n"}}
    projects:
      - number: 1
        title: Beta
        fields:
          Workflow State: [Backlog, Research Needed, Research in Progress, Ready for Plan, Plan in Progress,
                           Plan in Review, In Progress, In Review, Done, Canceled, Human Needed]
    issues:
      - {repo: web, number: 1, title: Beta secret plan, project: 1, fields: {Workflow State: Backlog}}
`)
}

// One deployment serving two organizations from their own policy files: /readyz names both
// organizations' projects with their modes, and on the board health pages each person sees
// the organizations they belong to — alice acme's board, carol beta's — each refused the
// other's board (404); a person of neither gets 403.
func TestBoardPagesOfTwoOrganizations(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sb, err := Start(ctx, Options{Seed: twoOrgsUISeed(t), AppAddr: addr, Configure: func(c *config.Config) {
		c.Projects = nil
		c.Logging.Level = "warn"
		c.UI.Enabled = true
		c.Server.PublicURL = "http://" + addr
		c.GitHub.OAuth.ClientID, c.GitHub.OAuth.ClientSecret = uiClientID, uiClientSecret
		c.UI.SessionKey = hex.EncodeToString(key)
	}})
	if err != nil {
		t.Fatalf("sandbox: %v", err)
	}
	t.Cleanup(func() {
		if err := sb.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	sb.Sim.SetOAuthCallbackURLs(sb.AppURL + config.CallbackPath)

	// The policies are read once serving (a bound on a hang, not a speed).
	const want = "ready: enforcing acme/1 (enforce), beta/1 (evaluate)"
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		code, body := httpGet(t, http.DefaultClient, sb.AppURL+"/readyz")
		if code == http.StatusOK && strings.TrimSpace(body) == want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz: %d %q, want 200 %q", code, body, want)
		}
	}

	for _, tc := range []struct {
		login      string
		status     int
		board      string // where /ui/ lands
		seen, kept string // a board the viewer sees, and one refused
	}{
		{"alice", http.StatusOK, "/ui/projects/acme/1", "/ui/projects/acme/1", "/ui/projects/beta/1"},
		{"carol", http.StatusOK, "/ui/projects/beta/1", "/ui/projects/beta/1", "/ui/projects/acme/1"},
		{"mallory", http.StatusForbidden, "", "", "/ui/projects/acme/1"},
	} {
		t.Run(tc.login, func(t *testing.T) {
			jar, _ := cookiejar.New(nil)
			c := &http.Client{Jar: jar, Timeout: 10 * time.Second}
			res, err := c.Get(sb.AppURL + "/ui/")
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			consent := res.Request.URL
			if !strings.HasPrefix(consent.String(), sb.SimURL+"/login/oauth/authorize?") {
				t.Fatalf("signed out, /ui/ led to %s", consent)
			}
			q := consent.Query()
			res, err = c.PostForm(sb.SimURL+"/login/oauth/authorize", url.Values{"client_id": {q.Get("client_id")},
				"redirect_uri": {q.Get("redirect_uri")}, "state": {q.Get("state")}, "login": {tc.login}})
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != tc.status || (tc.board != "" && res.Request.URL.Path != tc.board) || strings.Contains(string(body), "Beta secret plan") && tc.login != "carol" {
				t.Fatalf("signed in as %s: %d at %s\n%s", tc.login, res.StatusCode, res.Request.URL, body)
			}
			if tc.seen != "" {
				if code, _ := httpGet(t, c, sb.AppURL+tc.seen); code != http.StatusOK {
					t.Errorf("%s: %d", tc.seen, code)
				}
			}
			if code, body := httpGet(t, c, sb.AppURL+tc.kept); code == http.StatusOK || strings.Contains(body, "Beta secret plan") {
				t.Errorf("%s, not %s's: %d\n%s", tc.kept, tc.login, code, body)
			}
		})
	}
}

func httpGet(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	res, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(body)
}
