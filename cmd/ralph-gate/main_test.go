package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
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
	reqs := filepath.Join(dir, "requirements.yml")
	if err := os.WriteFile(reqs, []byte("workflow:\n  requirements:\n    - {into: [Ready for Plan], fields: [Estimate]}\n    - {into: [Done], pull_request: merged}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	check := func(args ...string) []string { return append([]string{"policy", "check", "--config", reqs}, args...) }
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
		{"--version", []string{"--version"}, "", exitOK, []string{"ralph-gate dev"}, nil},
		{"help lists completion and the demo's addresses", []string{"help"}, "", exitOK,
			[]string{"ralph-gate completion bash|zsh|fish", "--listen ADDR", "--sim-listen ADDR", "ralph-gate version"}, nil},
		{"completion bash", []string{"completion", "bash"}, "", exitOK, []string{"complete -o default -F _ralph_gate ralph-gate"}, nil},
		{"completion zsh", []string{"completion", "zsh"}, "", exitOK, []string{"#compdef ralph-gate"}, nil},
		{"completion fish", []string{"completion", "fish"}, "", exitOK, []string{"complete -c ralph-gate"}, nil},
		{"completion without a shell", []string{"completion"}, "", exitUsage, nil, nil},
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
		{"check unknown from", []string{"policy", "check", "--from", "Nowhere", "--to", "Backlog"}, "", exitUsage, nil, []string{"Nowhere"}},
		{"check missing to", []string{"policy", "check", "--from", "Backlog"}, "", exitUsage, nil, nil},
		{"check bad actor", []string{"policy", "check", "--from", "Backlog", "--to", "Done", "--actor", "robot"}, "", exitUsage, nil, nil},
		{"a requirement shows", check("--from", "Research Needed", "--to", "Ready for Plan", "--actor", "agent"), "", exitOK,
			[]string{`"allowed": false`, `"reason": "Ready for Plan requires Estimate to have a value"`}, nil},
		{"a requirement met by --field", check("--from", "Research Needed", "--to", "Ready for Plan", "--actor", "agent", "--field", "Estimate=S"), "", exitOK,
			[]string{`"allowed": true`}, nil},
		{"a requirement binds agents only", check("--from", "Research Needed", "--to", "Ready for Plan"), "", exitOK, []string{`"allowed": true`}, nil},
		{"a merged pull request asked", check("--from", "In Review", "--to", "Done", "--actor", "agent"), "", exitOK,
			[]string{`"allowed": false`, `Done requires a merged pull request that closes the issue`}, nil},
		{"a merged pull request given", check("--from", "In Review", "--to", "Done", "--actor", "agent", "--pr", "merged"), "", exitOK,
			[]string{`"allowed": true`}, nil},
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
		{"pipeline bad json", []string{"policy", "pipeline"}, `{"issues":`, exitUsage, nil, []string{"Recovery:"}},
		{"pipeline unknown key", []string{"policy", "pipeline"}, `{"issuez":[]}`, exitUsage, nil, []string{"issuez"}},
		{"pipeline unknown state", []string{"policy", "pipeline"}, `{"issues":[{"number":1,"workflowState":"Bogus"}]}`, exitUsage, nil, []string{"TRIAGE"}},
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

// policyFlagsOf lists the flags a policy subcommand takes, from its --help.
func policyFlagsOf(t *testing.T, sub string) []string {
	t.Helper()
	_, out, _ := runCLI(t, "", "policy", sub, "--help")
	var flags []string
	for _, m := range regexp.MustCompile(`(?m)^  -(\w+)`).FindAllStringSubmatch(out, -1) {
		flags = append(flags, "--"+m[1])
	}
	if len(flags) == 0 {
		t.Fatalf("no flags in policy %s --help:\n%s", sub, out)
	}
	return flags
}

// replayCLI follows a Recovery the way a person would: it leaves out the flags it says to
// leave out, and sets the first flag it suggests to its first value (in place of the flags
// it names as alternatives). Every flag it names must be one of the subcommand's.
func replayCLI(t *testing.T, args []string, msg string) []string {
	t.Helper()
	_, rec, ok := strings.Cut(msg, "Recovery: ")
	if !ok {
		t.Fatalf("no Recovery: %s", msg)
	}
	known := policyFlagsOf(t, args[1])
	var drop []string
	if _, rest, ok := strings.Cut(rec, "retry without "); ok {
		names, _, _ := strings.Cut(rest, ", with ")
		drop = regexp.MustCompile(`, | and `).Split(names, -1)
	}
	type suggested struct{ flag, value string }
	var with []suggested
	for _, m := range regexp.MustCompile(`with (--[\w-]+) ("(?:[^"\\]|\\.)*"|[^\s,()]+)`).FindAllStringSubmatch(rec, -1) {
		v := m[2]
		if strings.HasPrefix(v, `"`) {
			var err error
			if v, err = strconv.Unquote(v); err != nil {
				t.Fatalf("bad value %s", m[2])
			}
		}
		with = append(with, suggested{m[1], v})
	}
	if len(with) == 0 {
		t.Fatalf("the Recovery suggests no flag: %s", msg)
	}
	oneOf := regexp.MustCompile(`\(give (--\w+ or --\w+, not both|only one of [^)]*)\)`).MatchString(rec)
	remove := map[string]bool{with[0].flag: true}
	for _, d := range drop {
		remove[d] = true
	}
	for _, w := range with {
		if oneOf {
			remove[w.flag] = true
		}
	}
	for f := range remove {
		if !slices.Contains(known, f) {
			t.Fatalf("the Recovery names %s, which policy %s does not take (%v): %s", f, args[1], known, msg)
		}
	}
	out := slices.Clone(args[:2])
	for i := 2; i+1 < len(args); i += 2 {
		if !remove[args[i]] {
			out = append(out, args[i], args[i+1])
		}
	}
	return append(out, with[0].flag, with[0].value)
}

// TestPolicyBadInput pins the one form every policy subcommand answers bad input in — one
// line on stderr, "ralph-gate policy <sub>: what. why. Recovery: …", nothing on stdout, exit
// 2 — and that each Recovery names the subcommand's own flags and, followed, evaluates.
// Refusal results (resolve refusing a known command, intent or state) stay JSON on stdout,
// exit 1, their Recovery in flags too.
func TestPolicyBadInput(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		stdin string
		want  string // in the message
		code  int    // exitUsage (bad input) or exitError (a refusal result)
		after int    // the exit code of the retry the Recovery suggests; -1: nothing to retry
	}{
		{"unknown actor", []string{"policy", "check", "--from", "Backlog", "--to", "Done", "--actor", "robot"}, "", `Unknown actor kind "robot"`, exitUsage, exitOK},
		{"unknown from", []string{"policy", "check", "--from", "Nowhere", "--to", "Backlog"}, "", `Unknown state "Nowhere"`, exitUsage, exitOK},
		{"unknown to", []string{"policy", "check", "--from", "Backlog", "--to", "Bogus", "--actor", "agent"}, "", `Unknown state "Bogus"`, exitUsage, exitOK},
		{"to in the wrong case", []string{"policy", "check", "--to", "done"}, "", `did you mean "Done"?`, exitUsage, exitOK},
		{"missing to", []string{"policy", "check", "--from", "Backlog"}, "", "--to is missing", exitUsage, exitOK},
		{"missing command", []string{"policy", "resolve", "--state", "Done"}, "", "--command is missing", exitUsage, exitOK},
		{"neither intent nor state", []string{"policy", "resolve", "--command", "research"}, "", "Neither --intent nor --state", exitUsage, exitOK},
		{"both intent and state", []string{"policy", "resolve", "--command", "research", "--intent", "lock", "--state", "Done"}, "", "Both --intent and --state", exitUsage, exitOK},
		{"unknown command", []string{"policy", "resolve", "--command", "fly", "--state", "Done"}, "", `Unknown command "fly"`, exitUsage, exitOK},
		{"unknown intent", []string{"policy", "resolve", "--command", "research", "--intent", "bogus"}, "", `Unknown intent "bogus"`, exitUsage, exitOK},
		{"unknown state", []string{"policy", "resolve", "--command", "research", "--state", "Bogus"}, "", `Unknown state "Bogus"`, exitUsage, exitOK},
		{"unknown format", []string{"policy", "graph", "--format", "png"}, "", `Unknown format "png"`, exitUsage, exitOK},
		{"pipeline not json", []string{"policy", "pipeline"}, `{"issues":`, "The input is not a pipeline request", exitUsage, -1},
		{"pipeline unknown key", []string{"policy", "pipeline"}, `{"issuez":[]}`, `unknown field "issuez"`, exitUsage, -1},
		{"pipeline unknown state", []string{"policy", "pipeline"}, `{"issues":[{"number":1,"workflowState":"Bogus"}]}`,
			`issues[0].workflowState "Bogus" is not a workflow state. Pipeline detection knows Backlog, Research Needed`, exitUsage, -1},
		{"pipeline two values", []string{"policy", "pipeline"}, `{} {}`, "more than one JSON value", exitUsage, -1},
		{"pipeline issue without number", []string{"policy", "pipeline"}, `{"issues":[{"title":"x"}]}`, "issues[0] has no positive number", exitUsage, -1},
		{"pipeline negative streams", []string{"policy", "pipeline"}, `{"options":{"streamCount":-1}}`, "options.streamCount is negative", exitUsage, -1},
		{"no subcommand", []string{"policy"}, "", "No subcommand was given", exitUsage, -1},
		{"unknown subcommand", []string{"policy", "decide"}, "", `Unknown subcommand "decide"`, exitUsage, -1},
		// Refusal results: the workflow refuses what was asked; JSON on stdout, exit 1.
		{"ambiguous intent", []string{"policy", "resolve", "--command", "triage", "--intent", "complete"}, "", "is ambiguous for triage", exitError, exitOK},
		{"intent the command does not have", []string{"policy", "resolve", "--command", "triage", "--intent", "lock"}, "", "is not defined for triage", exitError, exitOK},
		{"state the command does not output", []string{"policy", "resolve", "--command", "research", "--state", "Done"}, "", "is not a valid output for research", exitError, exitOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, tt.stdin, tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, out, errOut)
			}
			var msg string
			switch tt.code {
			case exitUsage:
				name := "policy"
				if len(tt.args) > 1 && tt.args[1] != "decide" {
					name += " " + tt.args[1]
				}
				if out != "" || strings.Count(errOut, "\n") != 1 || !strings.HasPrefix(errOut, "ralph-gate "+name+": ") {
					t.Fatalf("want one line on stderr starting %q and no stdout\nstdout: %s\nstderr: %s", "ralph-gate "+name+": ", out, errOut)
				}
				msg = strings.TrimPrefix(strings.TrimSpace(errOut), "ralph-gate "+name+": ")
			default:
				var res struct {
					Error string `json:"error"`
				}
				if err := json.Unmarshal([]byte(out), &res); err != nil || res.Error == "" || errOut != "" {
					t.Fatalf("want {\"error\": …} on stdout only\nstdout: %s\nstderr: %s", out, errOut)
				}
				msg = res.Error
			}
			if !strings.Contains(msg, tt.want) || strings.Count(msg, ". Recovery: ") != 1 {
				t.Fatalf("want %q in the three-part form, got %q", tt.want, msg)
			}
			if tt.after < 0 {
				return
			}
			again := replayCLI(t, tt.args, msg)
			if code, out, errOut := runCLI(t, tt.stdin, again...); code != tt.after {
				t.Fatalf("the retry %q exits %d, want %d\nstdout: %s\nstderr: %s", again, code, tt.after, out, errOut)
			}
		})
	}
}

// policy check's --pr and --field refuse what they cannot read, saying what they take.
func TestPolicyCheckRequirementFlags(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--to", "Done", "--pr", "closed"}, "--pr closed was given. --pr takes one value, merged. Recovery: retry with --pr merged"},
		{[]string{"--to", "Done", "--field", "Estimate"}, `want NAME=VALUE (e.g. Estimate=S), got "Estimate"`},
		{[]string{"--to", "Done", "--field", "=S"}, "want NAME=VALUE"},
	} {
		code, _, errOut := runCLI(t, "", append([]string{"policy", "check", "--from", "In Review"}, tt.args...)...)
		if code != exitUsage || !strings.Contains(errOut, tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tt.args, code, errOut, exitUsage, tt.want)
		}
	}
}
