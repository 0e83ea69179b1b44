package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/ralph-gate/ralph-gate/app"
	"github.com/ralph-gate/ralph-gate/app/config"
	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/store"
)

var screenshots = flag.Bool("screenshots", false, "write the board health pages' screenshots, 375 and 1280 px wide, into docs/screenshots/")

// The App's OAuth client in the UI tests' seed.
const (
	uiClientID     = "Iv1.5a1d0b0c0a0e0f01"
	uiClientSecret = "ui-test-client-secret-0123456789abcdef0123"
)

// uiSeed is the demo seed with an outsider, the Members permission the membership check
// needs, and the App's OAuth client.
func uiSeed(t *testing.T) []byte {
	t.Helper()
	s := string(DemoSeed())
	app := "app: {id: 1001, slug: ralph-gate, installation_id: 2002, webhook_secret: demo-webhook-secret}"
	user := "  - {login: builder-1, token: builder-1-token, kind: agent}\n"
	if !strings.Contains(s, app) || !strings.Contains(s, user) {
		t.Fatal("the demo seed changed: update uiSeed")
	}
	s = strings.Replace(s, app, "app: {id: 1001, slug: ralph-gate, installation_id: 2002, webhook_secret: demo-webhook-secret,\n"+
		"      client_id: "+uiClientID+", client_secret: "+uiClientSecret+",\n"+
		"      permissions: {organization_projects: write, issues: write, pull_requests: read, metadata: read, members: read}}", 1)
	s = strings.Replace(s, user, user+"  - {login: mallory, token: mallory-token, kind: human, org_role: none}\n", 1)
	return []byte(s)
}

// startUI runs the sandbox with the board health pages on, at a public URL known before the
// app starts (the sign-in's callback is under it).
func startUI(t *testing.T) *Sandbox {
	t.Helper()
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
	sb, err := Start(ctx, Options{Seed: uiSeed(t), AppAddr: addr, Configure: func(c *config.Config) {
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
	return sb
}

// uiHistory plays an agent taking a lock, an illegal move reverted and an escalation to
// Human Needed, then a reconciler pass (titles for the report); it returns the reverted
// move's decision.
func uiHistory(t *testing.T, sb *Sandbox) enforce.AuditEntry {
	t.Helper()
	ctx := context.Background()
	for _, m := range []struct {
		login  string
		number int
		state  string
	}{
		{"agent-1", 2, "Research in Progress"}, // takes the lock
		{"agent-2", 4, "Done"},                 // illegal: reverted to Ready for Plan
		{"agent-1", 8, "Human Needed"},         // escalation
	} {
		if err := sb.Move(ctx, m.login, "app", m.number, m.state); err != nil {
			t.Fatalf("%s moves #%d: %v", m.login, m.number, err)
		}
		if err := sb.Settle(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := sb.State("app", 4); got != "Ready for Plan" {
		t.Fatalf("#4 is in %q: the illegal move was not reverted", got)
	}
	if _, err := sb.App.ReconcileNow(ctx); err != nil {
		t.Fatal(err)
	}
	entries, err := sb.App.Store().QueryAudit(ctx, store.AuditFilter{IssueNumber: 4})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Verdict == enforce.VerdictReverted {
			return e
		}
	}
	t.Fatalf("no reverted decision on #4: %+v", entries)
	return enforce.AuditEntry{}
}

// chromium finds the browser: Debian's chromium package. Without it the test is skipped,
// except in CI, which installs it (.ci/run).
func chromium(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/usr/bin/chromium", "chromium", "chromium-browser"} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium is not installed: CI installs Debian's chromium package (.ci/run) for the browser test")
	}
	t.Skip("chromium is not installed (apt-get install chromium); CI runs this test")
	return ""
}

// browser starts a headless Chromium with a fresh profile.
func browser(t *testing.T) context.Context {
	t.Helper()
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromium(t)),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
	)
	ctx, cancel := chromedp.NewContext(alloc)
	ctx, cancelTimeout := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(func() { cancelTimeout(); cancel(); cancelAlloc() })
	return ctx
}

// signIn opens url signed out, which leads to ghsim's consent page, and authorizes as login;
// it returns the status of the page GitHub sends the browser back to.
func signIn(ctx context.Context, t *testing.T, sb *Sandbox, url, login string) int64 {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatal(err)
	}
	if loc, _ := chromedp.Run(ctx, chromedp.Location()); !strings.HasPrefix(loc, sb.SimURL+"/login/oauth/authorize?") {
		t.Fatalf("signed out, %s led to %s, not GitHub's sign-in", url, loc)
	}
	res, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.ID("login-"+login)))
	if err != nil {
		t.Fatal(err)
	}
	loc, _ := chromedp.Run(ctx, chromedp.Location())
	if !strings.HasPrefix(loc, sb.AppURL+"/ui/") {
		t.Fatalf("after signing in as %s the browser is at %s", login, loc)
	}
	return res.Status
}

func pageText(ctx context.Context, t *testing.T) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string]("document.documentElement.outerHTML"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func open(ctx context.Context, t *testing.T, url string) (int64, string) {
	t.Helper()
	res, err := chromedp.RunResponse(ctx, chromedp.Navigate(url))
	if err != nil {
		t.Fatal(err)
	}
	return res.Status, pageText(ctx, t)
}

// shoot writes the current page at 375 and 1280 px wide (with -screenshots).
func shoot(ctx context.Context, t *testing.T, name string) {
	t.Helper()
	if !*screenshots {
		return
	}
	dir := filepath.Join("..", "docs", "screenshots")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, width := range []int64{375, 1280} {
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(width, 800)); err != nil {
			t.Fatal(err)
		}
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%d.png", name, width)), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// cell finds the number in a table row whose first cell is state ("" if none).
func cell(html, state string) string {
	m := regexp.MustCompile(`<td data-label="State">` + regexp.QuoteMeta(state) + `</td><td data-label="Kind">[^<]*</td><td data-label="Items" class="num">(\d+)</td>`).FindStringSubmatch(html)
	if m == nil {
		return ""
	}
	return m[1]
}

// The board health pages in a real browser: sign in through GitHub's OAuth flow (ghsim's),
// read the board and the decisions, and check that a non-member and a signed-out visitor see
// nothing of them.
func TestUIInBrowser(t *testing.T) {
	t.Parallel()
	sb := startUI(t)
	reverted := uiHistory(t, sb)
	titles := []string{"Research the webhook payloads", "Plan the cache", "Explain reverts in comments"}

	t.Run("signed out, every page answers without data", func(t *testing.T) {
		noRedirect := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		for _, path := range []string{"/", "/ui/", "/ui/projects/acme/1", "/ui/decisions", "/ui/decisions/" + strconv.FormatInt(reverted.ID, 10),
			"/ui/static/style.css", "/ui/nowhere"} {
			res, err := noRedirect.Get(sb.AppURL + path)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			loc := res.Header.Get("Location")
			if path == "/" {
				if res.StatusCode != http.StatusFound || loc != "/ui/" {
					t.Errorf("GET /: %d to %q, want a redirect to /ui/", res.StatusCode, loc)
				}
				continue
			}
			if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/ui/login?next=") {
				t.Errorf("GET %s signed out: %d to %q, want 303 to /ui/login", path, res.StatusCode, loc)
			}
			for _, title := range append(titles, "agent-1", "reverted") {
				if strings.Contains(string(body), title) {
					t.Errorf("GET %s signed out shows %q", path, title)
				}
			}
		}
	})

	t.Run("a member reads the board and the decisions", func(t *testing.T) {
		ctx := browser(t)
		if status := signIn(ctx, t, sb, sb.AppURL+"/ui/projects/acme/1", "alice"); status != http.StatusOK {
			t.Fatalf("the board after sign-in: %d", status)
		}
		html := pageText(ctx, t)
		if !strings.Contains(html, "signed in as <strong>alice</strong>") {
			t.Error("the page does not say who is signed in")
		}
		// Counts per state, as the simulator holds the board.
		want := map[string]int{}
		for _, is := range sb.Sim.State().Issues {
			if s := is.Fields[sb.Config.Workflow.Field]; s != "" && is.State == "open" {
				want[s]++
			}
		}
		for _, state := range []string{"Research in Progress", "Ready for Plan", "In Progress", "Human Needed", "Research Needed"} {
			if got := cell(html, state); got != strconv.Itoa(want[state]) {
				t.Errorf("%s: the board shows %q items, the simulator holds %d", state, got, want[state])
			}
		}
		// What `ralph-gate report --json` and the board_health tool return from the same
		// store (the same reader) agrees with the page: every state's count, the lock holder.
		rep, err := app.HealthReader(sb.Config, sb.App.Store()).Report(context.Background(), time.Now())
		if err != nil || len(rep.Projects) != 1 {
			t.Fatalf("the health report: %+v %v", rep, err)
		}
		for _, sc := range rep.Projects[0].States {
			if got := cell(html, sc.Name); got != strconv.Itoa(sc.Count) {
				t.Errorf("%s: the board shows %q items, the report (board_health, report --json) %d", sc.Name, got, sc.Count)
			}
		}
		if locks := rep.Projects[0].Locks; len(locks) != 1 || locks[0].Holder != "agent-1" || !strings.Contains(html, ">"+locks[0].Holder+"</td>") {
			t.Errorf("the report's locks %+v; the page must show the same holder", locks)
		}
		// The lock agent-1 took, with its holder; #8 waiting for a person.
		lock := regexp.MustCompile(`(?s)<td data-label="Item"><a href="[^"]*/issues/2">[^<]*</a> <span class="title">Research the webhook payloads</span></td><td data-label="State">Research in Progress</td><td data-label="Holder" class="holder">agent-1</td>`)
		if !lock.MatchString(html) {
			t.Error("the locks table lacks #2 held by agent-1")
		}
		if !regexp.MustCompile(`(?s)<h2>Human Needed</h2>.*Plan the cache.*<h2>Items with no state</h2>`).MatchString(html) {
			t.Error("#8 is not listed as waiting for a person")
		}
		shoot(ctx, t, "board")

		status, html := open(ctx, t, sb.AppURL+"/ui/decisions")
		row := regexp.MustCompile(`(?s)<a href="(/ui/decisions/` + strconv.FormatInt(reverted.ID, 10) + `)">#\d+</a>.*?Ready for Plan → Done.*?agent-2.*?<span class="verdict [^"]*">reverted</span>`)
		m := row.FindStringSubmatch(html)
		if status != http.StatusOK || m == nil {
			t.Fatalf("the decisions list (%d) lacks the revert of #4:\n%s", status, html)
		}
		shoot(ctx, t, "decisions")

		res, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(`a[href="`+m[1]+`"]`)))
		if err != nil {
			t.Fatal(err)
		}
		html = pageText(ctx, t)
		for _, want := range []string{">reverted</span></h1>", "<strong>Ready for Plan</strong> → <strong>Done</strong>", "agent-2"} {
			if !strings.Contains(html, want) {
				t.Errorf("the decision page (%d) lacks %q", res.Status, want)
			}
		}
		shoot(ctx, t, "decision")

		// Signing out ends the session: the next page asks GitHub again.
		if _, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(`header form button[type="submit"]`))); err != nil {
			t.Fatal(err)
		}
		if html := pageText(ctx, t); !strings.Contains(html, "You are signed out") {
			t.Fatal("signing out did not say so")
		}
		if err := chromedp.Do(ctx, chromedp.Navigate(sb.AppURL+"/ui/")); err != nil {
			t.Fatal(err)
		}
		if loc, _ := chromedp.Run(ctx, chromedp.Location()); !strings.HasPrefix(loc, sb.SimURL+"/login/oauth/authorize") {
			t.Fatalf("after signing out /ui/ led to %s", loc)
		}
	})

	t.Run("a non-member gets 403 and no data", func(t *testing.T) {
		ctx := browser(t)
		status := signIn(ctx, t, sb, sb.AppURL+"/ui/", "mallory")
		html := pageText(ctx, t)
		if status != http.StatusForbidden || !strings.Contains(html, `<strong id="viewer">mallory</strong>`) {
			t.Fatalf("mallory: %d\n%s", status, html)
		}
		for _, path := range []string{"/ui/projects/acme/1", "/ui/decisions/" + strconv.FormatInt(reverted.ID, 10)} {
			status, html := open(ctx, t, sb.AppURL+path)
			for _, title := range append(titles, "agent-1", "Ready for Plan") {
				if strings.Contains(html, title) {
					t.Errorf("%s shows mallory %q", path, title)
				}
			}
			if status != http.StatusForbidden {
				t.Errorf("%s: %d, want 403", path, status)
			}
		}
		shoot(ctx, t, "forbidden")
	})
}
