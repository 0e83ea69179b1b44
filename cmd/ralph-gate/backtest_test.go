package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/store"
)

// policy backtest replays an organization's recorded moves under a proposed file, against the
// policy the store keeps in force for it; a file with problems is refused as validate refuses
// one; bad flags are usage errors.
func TestPolicyBacktest(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	dsn := filepath.Join(dir, "ralph-gate.db")
	st, err := store.Open(ctx, store.DriverSQLite, dsn)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := st.PutOrgPolicy(ctx, store.OrgPolicy{Owner: "acme", InstallationID: 2002, SHA: "0123456789abcdef0123456789abcdef01234567",
		Text: "projects: [{number: 1}]\n", LoadedAt: now.Add(-30 * 24 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	status, err := json.Marshal(enforce.PassStatus{ProjectID: "PVT_1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.PutCursor(ctx, enforce.PassStatusCursor(enforce.ProjectRef{Owner: "acme", Number: 1}), string(status)); err != nil {
		t.Fatal(err)
	}
	move := func(ago time.Duration, issue int, actor, kind, from, to string, v enforce.Verdict, rule string) {
		t.Helper()
		if _, err := st.AppendAudit(ctx, enforce.AuditEntry{At: now.Add(-ago), ProjectID: "PVT_1", ItemID: "I" + string(rune('0'+issue)), IssueNumber: issue,
			Repo: "acme/web", Actor: actor, ActorKind: kind, FromState: from, ToState: to, Verdict: v, Rule: rule}); err != nil {
			t.Fatal(err)
		}
	}
	move(time.Hour, 1, "agent-1", "agent", "Ready for Plan", "Done", enforce.VerdictReverted, "transition")
	move(2*time.Hour, 2, "agent-1", "agent", "Done", "Backlog", enforce.VerdictReverted, "humans_only")
	move(3*time.Hour, 3, "alice", "human", "Backlog", "Ready for Plan", enforce.VerdictAllowed, "legal")
	move(10*24*time.Hour, 4, "agent-1", "agent", "Ready for Plan", "Done", enforce.VerdictReverted, "transition")
	st.Close()

	write := func(name, text string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	bypass := write("bypass.yml", "projects: [{number: 1}]\nactors:\n  agents: [\"*[bot]\", agent-*]\n  bypass: [agent-1]\n")
	bad := write("bad.yml", "projects:\n  - {number: 1, mode: sometimes}\n")
	other := write("other.yml", "projects: [{number: 5}]\n")

	tests := []struct {
		name     string
		args     []string
		code     int
		out, err []string
	}{
		{"a bypass added for an agent allows its reverted moves", []string{"--org", "ACME", "--file", bypass, "--dsn", dsn}, exitOK,
			[]string{"Of 3 moves recorded in the last 7 days, 2 would be decided differently: 1 reverted (humans_only) → allowed (bypass); 1 reverted (transition) → allowed (bypass).",
				"agent-1 (agent, proposed: bypass)", "acme/web#1", "kept as recorded"}, nil},
		{"more days", []string{"--org", "acme", "--file", bypass, "--dsn", dsn, "--days", "14"}, exitOK,
			[]string{"Of 4 moves recorded in the last 14 days, 3 would be decided differently"}, nil},
		{"as JSON", []string{"--org", "acme", "--file", bypass, "--dsn", dsn, "--json"}, exitOK,
			[]string{`"different": 2`, `"proposed_kind": "bypass"`}, nil},
		{"no policy in force: nothing was enforced to replay", []string{"--org", "globex", "--file", other, "--dsn", dsn}, exitOK,
			[]string{"No move was recorded on the organization's projects in the last 7 days", "globex/5: not enforced → enforce (starts being enforced"}, nil},
		{"a file with problems", []string{"--org", "acme", "--file", bad, "--dsn", dsn}, exitError,
			[]string{"projects[0].mode (line 2): ", "1 problem(s) in " + bad + ", checked as acme's policy file: nothing was replayed"}, nil},
		{"a file with problems, as JSON", []string{"--org", "acme", "--file", bad, "--dsn", dsn, "--json"}, exitError,
			[]string{`"valid": false`, `"path": "projects[0].mode"`, `"line": 2`}, nil},
		{"no --org", []string{"--file", bypass, "--dsn", dsn}, exitUsage, nil, []string{"ralph-gate policy backtest: --org is missing"}},
		{"no --file", []string{"--org", "acme", "--dsn", dsn}, exitUsage, nil, []string{"ralph-gate policy backtest: --file is missing"}},
		{"too many days", []string{"--org", "acme", "--file", bypass, "--dsn", dsn, "--days", "0"}, exitUsage, nil, []string{"--days 0 was given"}},
		{"no such file", []string{"--org", "acme", "--file", filepath.Join(dir, "none.yml"), "--dsn", dsn}, exitError, nil,
			[]string{"cannot read the proposed policy"}},
		{"no store", []string{"--org", "acme", "--file", bypass, "--dsn", filepath.Join(dir, "none.db")}, exitError, nil,
			[]string{"ralph-gate policy backtest: "}},
		{"help", []string{"--help"}, exitOK, []string{"ralph-gate policy backtest", "Flags:", "-days"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, "", append([]string{"policy", "backtest"}, tc.args...)...)
			if code != tc.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, out, errOut)
			}
			for _, want := range tc.out {
				if !strings.Contains(out, want) {
					t.Errorf("stdout lacks %q:\n%s", want, out)
				}
			}
			for _, want := range tc.err {
				if !strings.Contains(errOut, want) {
					t.Errorf("stderr lacks %q:\n%s", want, errOut)
				}
			}
		})
	}
}
