package main

import (
	"context"
	"github.com/ralph-gate/ralph-gate/enforce"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/store"
)

func TestDemo(t *testing.T) {
	code, out, errOut := runCLI(t, "", "demo")
	if code != exitOK {
		t.Fatalf("demo exited %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, want := range []string{
		`#5 "Fix the login page" is now in "Ready for Plan"`,            // a legal move stays
		`#3 "Store last legal states" is now in "Backlog"`,              // an illegal move reverted
		"ralph-gate[bot] commented on #3",                               // and explained
		`#6 "Upgrade dependencies" is now in "Human Needed"`,            // escalation
		"reverted  #6  agent-2",                                         // humans-only exit refused
		`#2 "Research the webhook payloads" is now in "Ready for Plan"`, // cascade
		`#9 "Epic - reporting" is now in "Ready for Plan"`,              // convergence
		`#14 "Rank the results" is in Research Needed`,                  // the premature planning names the sibling
		"Recovery: wait until #14 reaches Ready for Plan",
		"ralph-gate audit --driver sqlite",                               // where decisions are
		`handed off #8: "Ready for Plan" → "Plan in Progress"`,           // an MCP handoff
		"Recovery: from Ready for Plan, plan may retry with intent lock", // a refused one, with its retries
		"handoff   #8  planner-1",                                        // audited under the agent's name
	} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q", want)
		}
	}
}

func TestServeRefusesIncompleteConfig(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "c.yml")
	if err := os.WriteFile(file, []byte("github:\n  app:\n    webhook_secret: very-secret-value\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GITHUB_APP_PRIVATE_KEY", "")
	code, out, errOut := runCLI(t, "", "serve", "--config", file)
	if code != exitError {
		t.Fatalf("exit %d, want %d", code, exitError)
	}
	for _, want := range []string{"github.app.integration_id", "github.app.private_key", "projects"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %s:\n%s", want, errOut)
		}
	}
	if strings.Contains(out+errOut, "very-secret-value") {
		t.Error("a secret was printed")
	}
}

func TestAudit(t *testing.T) {
	dsn := filepath.Join(t.TempDir(), "a.db")
	ctx := context.Background()
	st, err := store.Open(ctx, "sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	for i, e := range []enforce.AuditEntry{
		{At: at, IssueNumber: 3, Repo: "acme/app", Actor: "agent-1", ActorKind: "agent", FromState: "Backlog", ToState: "In Progress", Verdict: enforce.VerdictReverted, Reason: "not a transition"},
		{At: at.Add(time.Hour), IssueNumber: 5, Repo: "acme/app", Actor: "alice", ActorKind: "human", FromState: "Backlog", ToState: "Ready for Plan", Verdict: enforce.VerdictAllowed, Reason: "allowed"},
	} {
		e.ItemID = "PVTI_" + string(rune('a'+i))
		if _, err := st.AppendAudit(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	tests := []struct {
		name     string
		args     []string
		code     int
		contains []string
		absent   []string
	}{
		{"all", []string{"audit", "--dsn", dsn}, exitOK, []string{"reverted", "acme/app#3", "agent-1 (agent)", "allowed"}, nil},
		{"by item", []string{"audit", "--dsn", dsn, "--item", "5"}, exitOK, []string{"alice"}, []string{"agent-1"}},
		{"since", []string{"audit", "--dsn", dsn, "--since", "2026-11-01T12:30:00Z"}, exitOK, []string{"alice"}, []string{"agent-1"}},
		{"json", []string{"audit", "--dsn", dsn, "--json"}, exitOK, []string{`"verdict":"reverted"`, `"issue":5`}, nil},
		{"bad since", []string{"audit", "--dsn", dsn, "--since", "yesterday"}, exitUsage, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, "", tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d: %s", code, tt.code, errOut)
			}
			for _, w := range tt.contains {
				if !strings.Contains(out, w) {
					t.Errorf("lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tt.absent {
				if strings.Contains(out, w) {
					t.Errorf("has %q:\n%s", w, out)
				}
			}
		})
	}
}
