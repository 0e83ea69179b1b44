package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runCLI(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, streams{in: strings.NewReader(stdin), out: &out, err: &errOut})
	return code, out.String(), errOut.String()
}

func TestCLI(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yml")
	if err := os.WriteFile(bad, []byte("workflow:\n  field: \"\"\n  statez: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		args     []string
		stdin    string
		code     int
		contains []string
		absent   []string
	}{
		{"no args", nil, "", exitUsage, nil, nil},
		{"unknown command", []string{"frobnicate"}, "", exitUsage, nil, nil},
		{"version", []string{"version"}, "", exitOK, []string{"ralph-gate dev"}, nil},
		{"validate default", []string{"validate"}, "", exitOK, []string{"is valid", "11 states"}, nil},
		{"validate bad file reports every problem", []string{"validate", "--config", bad}, "", exitError, []string{"workflow.statez", "workflow.field", "problem(s)"}, nil},
		{"validate missing file", []string{"validate", "--config", filepath.Join(dir, "none.yml")}, "", exitError, nil, nil},
		{"agent illegal move", []string{"policy", "check", "--from", "Backlog", "--to", "In Progress", "--actor", "agent"}, "", exitOK,
			[]string{`"allowed": false`, `"Research Needed"`, `"Ready for Plan"`, `"Done"`, `"Canceled"`}, nil},
		{"agent may not leave Human Needed", []string{"policy", "check", "--from", "Human Needed", "--to", "Backlog", "--actor", "agent"}, "", exitOK,
			[]string{`"allowed": false`}, nil},
		{"human may leave Human Needed", []string{"policy", "check", "--from", "Human Needed", "--to", "Backlog", "--actor", "human"}, "", exitOK,
			[]string{`"allowed": true`}, nil},
		{"unset to initial", []string{"policy", "check", "--from", "", "--to", "Backlog", "--actor", "agent"}, "", exitOK, []string{`"allowed": true`}, nil},
		{"check unknown from", []string{"policy", "check", "--from", "Nowhere", "--to", "Backlog"}, "", exitError, []string{"Recovery:"}, nil},
		{"check missing to", []string{"policy", "check", "--from", "Backlog"}, "", exitUsage, nil, nil},
		{"check bad actor", []string{"policy", "check", "--from", "Backlog", "--to", "Done", "--actor", "robot"}, "", exitUsage, nil, nil},
		{"resolve marker", []string{"policy", "resolve", "--command", "research", "--intent", "__LOCK__"}, "", exitOK,
			[]string{`{"state":"Research in Progress"}`}, nil},
		{"resolve prefixed word", []string{"policy", "resolve", "--command", "ralph_impl", "--intent", "complete"}, "", exitOK,
			[]string{`{"state":"In Review"}`}, nil},
		{"resolve direct state", []string{"policy", "resolve", "--command", "triage", "--state", "Ready for Plan"}, "", exitOK,
			[]string{`{"state":"Ready for Plan"}`}, nil},
		{"resolve ambiguous", []string{"policy", "resolve", "--command", "triage", "--intent", "complete"}, "", exitError,
			[]string{`"error"`, "Recovery:", "Research Needed", "Ready for Plan", "Done", "Canceled"}, nil},
		{"resolve needs one of intent/state", []string{"policy", "resolve", "--command", "triage"}, "", exitUsage, nil, nil},
		{"resolve both intent and state", []string{"policy", "resolve", "--command", "triage", "--intent", "lock", "--state", "Done"}, "", exitUsage, nil, nil},
		{"pipeline", []string{"policy", "pipeline"}, `{"issues":[{"number":1,"title":"a","workflowState":"Ready for Plan","estimate":"S","subIssueCount":0}],"isGroup":false,"groupPrimary":1,"options":{"autoMode":false,"streamCount":1}}`, exitOK,
			[]string{`"phase": "PLAN"`, `"suggestedRoster"`}, nil},
		{"pipeline no issues", []string{"policy", "pipeline"}, `{"issues":[]}`, exitOK, []string{`"phase": "TRIAGE"`}, nil},
		{"pipeline bad json", []string{"policy", "pipeline"}, `{"issues":`, exitError, []string{"Recovery:"}, nil},
		{"pipeline unknown key", []string{"policy", "pipeline"}, `{"issuez":[]}`, exitError, []string{"issuez"}, nil},
		{"graph mermaid", []string{"policy", "graph"}, "", exitOK, []string{"stateDiagram-v2"}, nil},
		{"graph dot", []string{"policy", "graph", "--format", "dot"}, "", exitOK, []string{"digraph"}, nil},
		{"graph bad format", []string{"policy", "graph", "--format", "png"}, "", exitUsage, nil, nil},
		{"policy without subcommand", []string{"policy"}, "", exitUsage, nil, nil},
		{"policy unknown subcommand", []string{"policy", "decide"}, "", exitUsage, nil, nil},
		{"policy bad config", []string{"policy", "graph", "--config", bad}, "", exitError, nil, nil},
		{"positional args refused", []string{"policy", "graph", "extra"}, "", exitUsage, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, tt.stdin, tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, out, errOut)
			}
			for _, want := range tt.contains {
				if !strings.Contains(out, want) {
					t.Errorf("stdout lacks %q:\n%s", want, out)
				}
			}
			for _, no := range tt.absent {
				if strings.Contains(out, no) {
					t.Errorf("stdout has %q:\n%s", no, out)
				}
			}
			if tt.code != exitUsage && strings.HasPrefix(strings.TrimSpace(out), "{") && !json.Valid([]byte(out)) {
				t.Errorf("stdout is not valid JSON: %s", out)
			}
		})
	}
}

// TestCheckListsAllowedTransitions pins the exact alternatives an agent sees from Backlog.
func TestCheckListsAllowedTransitions(t *testing.T) {
	_, out, _ := runCLI(t, "", "policy", "check", "--from", "Backlog", "--to", "In Progress", "--actor", "agent")
	var res struct {
		Allowed            bool     `json:"allowed"`
		Reason             string   `json:"reason"`
		AllowedTransitions []string `json:"allowed_transitions"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	want := []string{"Research Needed", "Ready for Plan", "Human Needed", "Done", "Canceled"}
	if strings.Join(res.AllowedTransitions, ",") != strings.Join(want, ",") {
		t.Errorf("allowed_transitions = %v, want %v", res.AllowedTransitions, want)
	}
	if res.Allowed || res.Reason == "" {
		t.Errorf("want a refusal with a reason, got %+v", res)
	}
}
