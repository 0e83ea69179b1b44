package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const rolesConfig = `actors:
  agents: ["agent-*"]
  roles:
    analyst:    {agents: ["analyst-*"],    owns: [Backlog, Research Needed, Research in Progress]}
    builder:    {agents: ["builder-*"],    owns: [Ready for Plan, Plan in Progress, Plan in Review, In Progress]}
    validator:  {agents: ["validator-*"],  owns: [Plan in Review]}
    integrator: {agents: ["integrator-*"], owns: [In Review], serialize: repository}
`

// policy check --role judges an agent of a worker role: the table, then the ownership rule.
func TestPolicyCheckRole(t *testing.T) {
	file := filepath.Join(t.TempDir(), "roles.yml")
	if err := os.WriteFile(file, []byte(rolesConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	check := func(role, from, to string) (bool, string, []string) {
		t.Helper()
		code, out, errOut := runCLI(t, "", "policy", "check", "--config", file, "--role", role, "--from", from, "--to", to)
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		var res struct {
			Allowed bool     `json:"allowed"`
			Reason  string   `json:"reason"`
			Next    []string `json:"allowed_transitions"`
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatal(err)
		}
		return res.Allowed, res.Reason, res.Next
	}
	if ok, reason, next := check("builder", "Research Needed", "Research in Progress"); ok ||
		!strings.Contains(reason, "(builder) may not move an item out of Research Needed: the analyst role owns it") || strings.Join(next, ",") != "Human Needed" {
		t.Errorf("builder out of Research Needed: %v %q %v", ok, reason, next)
	}
	if ok, reason, _ := check("analyst", "Research Needed", "Research in Progress"); !ok {
		t.Errorf("analyst out of Research Needed: %q", reason)
	}
	if ok, reason, _ := check("builder", "Research Needed", "Human Needed"); !ok {
		t.Errorf("escalation: %q", reason)
	}
	// An unknown role is bad input whose Recovery replays into an evaluation.
	args := []string{"policy", "check", "--config", file, "--role", "bilder", "--from", "Backlog", "--to", "Research Needed"}
	code, _, errOut := runCLI(t, "", args...)
	if code != exitUsage || !strings.Contains(errOut, `Unknown role "bilder"`) {
		t.Fatalf("unknown role: exit %d %s", code, errOut)
	}
	again := replayCLI(t, args, strings.TrimPrefix(strings.TrimSpace(errOut), "ralph-gate policy check: "))
	if code, _, errOut := runCLI(t, "", again...); code != exitOK {
		t.Fatalf("the retry %q: exit %d %s", again, code, errOut)
	}
	// Without roles configured, or for a person, --role is refused.
	if code, _, errOut := runCLI(t, "", "policy", "check", "--role", "builder", "--to", "Backlog"); code != exitUsage || !strings.Contains(errOut, "no worker roles") {
		t.Errorf("no roles: exit %d %s", code, errOut)
	}
	if code, _, errOut := runCLI(t, "", "policy", "check", "--config", file, "--role", "builder", "--actor", "bypass", "--to", "Backlog"); code != exitUsage || !strings.Contains(errOut, "Roles are for agents") {
		t.Errorf("role with bypass: exit %d %s", code, errOut)
	}
}

// doctor warns when a role owns no state or a state an agent works on has no owner.
func TestDoctorWarnsAboutRoleGaps(t *testing.T) {
	clearAppEnv(t)
	file := filepath.Join(t.TempDir(), "roles.yml")
	cfg := strings.Replace(rolesConfig, "    integrator: {agents: [\"integrator-*\"], owns: [In Review], serialize: repository}\n",
		"    idle: {agents: [\"idle-*\"]}\n", 1)
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	_, out, _ := runCLI(t, "", "doctor", "--config", file)
	for _, want := range []string{"warn  roles: the idle role owns no state", "warn  roles: no role owns In Review"} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor lacks %q:\n%s", want, out)
		}
	}
	if err := os.WriteFile(file, []byte(rolesConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, out, _ = runCLI(t, "", "doctor", "--config", file); !strings.Contains(out, "ok    roles: 4 roles") {
		t.Errorf("doctor with a complete map:\n%s", out)
	}
}
