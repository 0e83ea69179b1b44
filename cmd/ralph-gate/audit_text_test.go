package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/store"
)

// The audit table names who made each move; a value adopted on first sight was moved by
// nobody (it used to read "(unknown) (unknown)"), and a change no webhook reported has an
// unknown author.
func TestAuditActorText(t *testing.T) {
	for _, tc := range []struct {
		e    enforce.AuditEntry
		want string
	}{
		{enforce.AuditEntry{Actor: "alice", ActorKind: "human", Verdict: enforce.VerdictAllowed}, "alice (human)"},
		{enforce.AuditEntry{Actor: enforce.DriftActor, ActorKind: "unknown", Verdict: enforce.VerdictAdopted}, "-"},
		{enforce.AuditEntry{Actor: enforce.DriftActor, ActorKind: "agent", Verdict: enforce.VerdictReverted}, "(unknown author)"},
		{enforce.AuditEntry{Actor: "evil\x1b[31m", ActorKind: "agent", Verdict: enforce.VerdictReverted}, `evil\x1b[31m (agent)`},
	} {
		if got := actorText(tc.e); got != tc.want {
			t.Errorf("actorText(%+v) = %q, want %q", tc.e, got, tc.want)
		}
	}
}

// The audit lists decisions in the order ralph-gate recorded them: a cascade recorded after a
// revert is listed after it, though it is dated at the older move that caused it (it used to
// be listed above the revert).
func TestAuditListsDecisionsAsRecorded(t *testing.T) {
	dsn := filepath.Join(t.TempDir(), "ralph-gate.db")
	ctx := context.Background()
	st, err := store.Open(ctx, store.DriverSQLite, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	for _, e := range []enforce.AuditEntry{
		{At: t0.Add(time.Minute), ItemID: "I2", IssueNumber: 2, Repo: "acme/app", Actor: "agent-1", ActorKind: "agent", FromState: "Backlog", ToState: "Done", Verdict: enforce.VerdictReverted, Reason: "revert"},
		{At: t0, ItemID: "I2", IssueNumber: 2, Repo: "acme/app", Actor: "ralph-gate[bot]", ActorKind: "app", FromState: "Backlog", ToState: "Ready for Plan", Verdict: enforce.VerdictAutomated, Reason: "cascade"},
	} {
		if _, err := st.AppendAudit(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	code, out, errOut := runCLI(t, "", "audit", "--dsn", dsn, "--item", "2")
	if code != exitOK {
		t.Fatalf("audit exited %d: %s", code, errOut)
	}
	if r, c := strings.Index(out, "revert"), strings.Index(out, "cascade"); r < 0 || c < 0 || r > c {
		t.Errorf("the revert recorded first is not listed first:\n%s", out)
	}
}

// audit --policy lists the organizations' policy changes, oldest first, with their pushers
// and outcomes; --org selects one organization's; a hostile login is shown escaped.
func TestAuditListsPolicyChanges(t *testing.T) {
	dsn := filepath.Join(t.TempDir(), "ralph-gate.db")
	ctx := context.Background()
	st, err := store.Open(ctx, store.DriverSQLite, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	for _, c := range []store.PolicyChange{
		{Owner: "acme", SHA: "aaaaaaaaaaaaaaaa", At: t0, Outcome: store.PolicyInForce, Summary: "+ project acme/1 enforced (enforce)"},
		{Owner: "acme", SHA: "bbbbbbbbbbbbbbbb", Pusher: "agent-1", At: t0.Add(time.Minute), Outcome: store.PolicyRefused,
			Reason: "agent-1 is not a policy admin of acme; only a policy admin of acme (alice) may change it", Summary: "+ actors.bypass: agent-1"},
		{Owner: "globex", SHA: "cccc", Pusher: "evil\u202eeman", At: t0.Add(2 * time.Minute), Outcome: store.PolicyInForce},
	} {
		if err := st.RecordPolicyChange(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	tests := []struct {
		name      string
		args      []string
		code      int
		want, not []string
	}{
		{"all", []string{"--policy"}, exitOK, []string{"(first read)", "aaaaaaaaaaaa ", "agent-1", "refused", "+ actors.bypass: agent-1", "not a policy admin", `evil\u202eeman`}, []string{"\u202e"}},
		{"one organization", []string{"--policy", "--org", "acme"}, exitOK, []string{"agent-1"}, []string{"globex"}},
		{"json", []string{"--policy", "--json", "--org", "acme"}, exitOK, []string{`"pusher":"agent-1"`, `"outcome":"refused"`, `"changes":["+ actors.bypass: agent-1"]`}, nil},
		{"--org without --policy", []string{"--org", "acme"}, exitUsage, []string{"give it with --policy"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, "", append([]string{"audit", "--dsn", dsn}, tt.args...)...)
			if code != tt.code {
				t.Fatalf("audit exited %d, want %d: %s%s", code, tt.code, out, errOut)
			}
			for _, w := range tt.want {
				if !strings.Contains(out+errOut, w) {
					t.Errorf("the output lacks %q:\n%s%s", w, out, errOut)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(out, n) {
					t.Errorf("the output has %q:\n%s", n, out)
				}
			}
			if i, j := strings.Index(out, "aaaaaaaaaaaa"), strings.Index(out, "bbbbbbbbbbbb"); tt.name == "all" && (i < 0 || j < i) {
				t.Errorf("not oldest first:\n%s", out)
			}
		})
	}
}
