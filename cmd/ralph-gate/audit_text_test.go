package main

import (
	"testing"

	"github.com/ralph-gate/ralph-gate/enforce"
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
