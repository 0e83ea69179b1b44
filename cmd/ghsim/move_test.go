package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/ghsim"
)

// startSim runs the example seed's simulator over HTTP for one test.
func startSim(t *testing.T) (*ghsim.Server, string) {
	t.Helper()
	return startSimFrom(t, "seed.yaml")
}

// startSimFrom runs the simulator of one of ghsim's example seeds.
func startSimFrom(t *testing.T, name string) (*ghsim.Server, string) {
	t.Helper()
	dir := t.TempDir()
	seed, err := os.ReadFile("../../ghsim/testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "seed.yaml")
	if err := os.WriteFile(path, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	parsed, err := ghsim.LoadSeed(path)
	if err != nil {
		t.Fatal(err)
	}
	parsed.App.WebhookURL = ""
	sim, err := ghsim.New(parsed, ghsim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	url, err := sim.Start(t.Context(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sim.Close() })
	return sim, url
}

func issueState(t *testing.T, sim *ghsim.Server, number int) string {
	t.Helper()
	for _, is := range sim.State().Issues {
		if is.Number == number {
			return is.Fields["Workflow State"]
		}
	}
	t.Fatalf("no issue #%d", number)
	return ""
}

// ghsim move changes the Workflow State as the token's user, over the simulator's HTTP API,
// with flags before or after its arguments; every refusal says what to do.
func TestMove(t *testing.T) {
	sim, url := startSim(t)
	tests := []struct {
		name    string
		args    []string
		code    int
		out     string // in stdout
		errOut  string // in stderr
		issue   int
		wantNow string // the issue's state afterwards ("" = unchecked)
	}{
		{"by number", []string{"move", "--sim", url, "--token", "agent1-token", "3", "Research in Progress"}, 0,
			`agent-1 moved acme/app#3 "Blocker" from "Research Needed" to "Research in Progress"`, "", 3, "Research in Progress"},
		{"flags after the arguments, repo#n, any case", []string{"move", "app#1", "ready for plan", "--sim", url, "--token", "alice-token"}, 0,
			`alice moved acme/app#1 "Epic" from "Backlog" to "Ready for Plan"`, "", 1, "Ready for Plan"},
		{"from no value", []string{"move", "--sim", url, "--token", "bob-token", "acme/app#6", "Backlog"}, 0,
			`bob moved acme/app#6 "Unset state" from (no value) to "Backlog"`, "", 6, "Backlog"},
		{"unknown state", []string{"move", "--sim", url, "--token", "alice-token", "4", "Nowhere"}, 1,
			"", `"Nowhere" is not an option of "Workflow State"; the options are "Backlog", "Research Needed"`, 4, "Ready for Plan"},
		{"bad token", []string{"move", "--sim", url, "--token", "nobody", "4", "Done"}, 1,
			"", "the simulator refused the token", 4, "Ready for Plan"},
		{"no such issue", []string{"move", "--sim", url, "--token", "alice-token", "99", "Done"}, 1, "", "the simulator has no issue 99", 0, ""},
		{"not on a project", []string{"move", "--sim", url, "--token", "alice-token", "8", "Done"}, 1, "", "acme/app#8 is on no project", 0, ""},
		{"no simulator", []string{"move", "--sim", "http://127.0.0.1:1", "--token", "alice-token", "4", "Done"}, 1,
			"", "no simulator answers at http://127.0.0.1:1", 0, ""},
		{"no token", []string{"move", "--sim", url, "4", "Done"}, 2, "", "--token is required", 0, ""},
		{"one argument", []string{"move", "--sim", url, "--token", "alice-token", "4"}, 2, "", "want ISSUE and STATE", 0, ""},
		{"not an issue", []string{"move", "--sim", url, "--token", "alice-token", "app#x", "Done"}, 1, "", `"app#x" is not an issue`, 0, ""},
		{"help", []string{"move", "--help"}, 0, "usage: ghsim move", "", 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(t.Context(), tt.args, &out, &errOut)
			if code != tt.code || !strings.Contains(out.String(), tt.out) || !strings.Contains(errOut.String(), tt.errOut) {
				t.Errorf("exit %d (want %d)\nstdout: %s\nstderr: %s\nwant stdout with %q, stderr with %q", code, tt.code, out.String(), errOut.String(), tt.out, tt.errOut)
			}
			if tt.wantNow != "" {
				if got := issueState(t, sim, tt.issue); got != tt.wantNow {
					t.Errorf("#%d is in %q, want %q", tt.issue, got, tt.wantNow)
				}
			}
		})
	}
}

// ghsim move reaches an issue of a further organization by OWNER/REPO#NUMBER.
func TestMoveInSecondOrg(t *testing.T) {
	sim, url := startSimFrom(t, "two-orgs.yaml")
	for _, tt := range []struct {
		name     string
		issue    string
		code     int
		out, err string
	}{
		{"beta's issue", "beta/web#1", 0, `bob moved beta/web#1 "Beta issue" from "Backlog" to "Done"`, ""},
		{"unknown organization", "gamma/web#1", 1, "", "the simulator has no organization gamma"},
		{"a repo of the other organization", "acme/web#1", 1, "", "the simulator has no issue acme/web#1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(t.Context(), []string{"move", "--sim", url, "--token", "bob-token", tt.issue, "Done"}, &out, &errOut)
			if code != tt.code || !strings.Contains(out.String(), tt.out) || !strings.Contains(errOut.String(), tt.err) {
				t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out.String(), errOut.String())
			}
		})
	}
	beta, _ := sim.State().OrgState("beta")
	if is, _ := beta.Issue("web", 1); is.Fields["Workflow State"] != "Done" {
		t.Fatalf("beta/web#1 is %q", is.Fields["Workflow State"])
	}
	if is, _ := sim.State().Issue("app", 1); is.Fields["Workflow State"] != "Backlog" {
		t.Fatalf("acme/app#1 changed: %q", is.Fields["Workflow State"])
	}
}

// With --wait, ghsim move reports what becomes of the move: here someone puts the issue
// back and explains it in a comment, whose hidden markers are not shown.
func TestMoveWaitReportsRevert(t *testing.T) {
	_, url := startSim(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var out, errOut syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"move", "--sim", url, "--token", "agent1-token", "--wait", "20s", "5", "Done"}, &out, &errOut)
	}()
	for !strings.Contains(out.String(), "watching") {
		select {
		case code := <-done:
			t.Fatalf("exit %d before watching: %s %s", code, out.String(), errOut.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	// The "app" reverts (as bob here) and comments.
	var o, e bytes.Buffer
	if code := run(ctx, []string{"move", "--sim", url, "--token", "bob-token", "5", "Ready for Plan"}, &o, &e); code != 0 {
		t.Fatalf("revert: %s", e.String())
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/api/v3/repos/acme/app/issues/5/comments",
		strings.NewReader(`{"body":"<!-- ralph-transition: {\"verdict\":\"reverted\"} -->\n**Reverted.**\nRecovery: ask a person."}`))
	req.Header.Set("Authorization", "bearer bob-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("comment: %s", resp.Status)
	}
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut.String())
		}
	case <-ctx.Done():
		t.Fatalf("ghsim move --wait did not end after the revert and its comment:\n%s", out.String())
	}
	got := out.String()
	for _, want := range []string{`agent-1 moved acme/app#5 "Grandchild" from "Ready for Plan" to "Done"`,
		`back in "Ready for Plan" — the move was reverted`, "bob commented:", "   | **Reverted.**", "   | Recovery: ask a person."} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "<!--") {
		t.Errorf("a hidden marker is shown:\n%s", got)
	}
	if strings.Contains(got, "still in") {
		t.Errorf("reports no revert:\n%s", got)
	}
}

func TestVisibleText(t *testing.T) {
	for body, want := range map[string]string{
		"<!-- a -->\n<!-- b: {\"x\":1} -->\n**Hi**\n\ntext": "**Hi**\n\ntext",
		"plain":                    "plain",
		"a <!-- multi\nline --> b": "a  b",
		"<!-- only -->":            "",
	} {
		if got := visibleText(body); got != want {
			t.Errorf("visibleText(%q) = %q, want %q", body, got, want)
		}
	}
}
