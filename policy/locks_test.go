package policy

import (
	"strings"
	"testing"
	"time"
)

func TestCheckTakeOver(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	ttl := time.Hour
	m := machineWith(t, func(s *Spec) { s.Locks.TTL = ttl })
	off := defaultMachine(t)
	withTTL := machineWith(t, func(s *Spec) { s.Locks.TTL = ttl })
	roles, ps := CompileRoles(withTTL, ownershipMap())
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	rm := withTTL.WithRoles(roles)
	expired := TakeOver{Number: 3, State: sRIP, Holder: "agent-1", Since: now.Add(-ttl - time.Second), Agent: "agent-2"}
	with := func(f func(*TakeOver)) TakeOver { t := expired; f(&t); return t }
	tests := []struct {
		name    string
		m       *Machine
		t       TakeOver
		rule    Rule   // "" = allowed
		why     string // substring
		recover string // substring
	}{
		{"past the ttl", m, expired, "", "", ""},
		{"expiry off", off, expired, RuleLockOwnership, "locks do not expire here (workflow.locks.ttl is off)", "ask agent-1 to hand the item off"},
		{"within the ttl", m, with(func(t *TakeOver) { t.Since = now.Add(-ttl + 90*time.Second) }), RuleLockOwnership,
			"Research in Progress is locked by agent-1, within workflow.locks.ttl (1h0m0s): it expires in 1m30s", "wait until the lock expires"},
		{"exactly the ttl is not past it", m, with(func(t *TakeOver) { t.Since = now.Add(-ttl) }), RuleLockOwnership, "it expires in 0s", ""},
		{"lock of unknown age", m, with(func(t *TakeOver) { t.Since = time.Time{} }), RuleLockOwnership, "its age is unknown", ""},
		{"not a lock", m, with(func(t *TakeOver) { t.State = sRN }), RuleLockOwnership, "#3 is in Research Needed, which is not a lock", "retry without take_over"},
		{"nobody known holds it", m, with(func(t *TakeOver) { t.Holder, t.Since = "", time.Time{} }), "", "", ""},
		{"nobody known holds it, expiry off", off, with(func(t *TakeOver) { t.Holder = "" }), RuleLockOwnership, "locked by someone, and locks do not expire here", "ask someone to hand the item off"},
		{"the holder itself", m, with(func(t *TakeOver) { t.Agent = "Agent-1" }), RuleLockOwnership, "you hold the lock on #3 already", "retry without take_over"},
		{"a role that owns the state", rm, with(func(t *TakeOver) { t.Role = "analyst" }), "", "", ""},
		{"a role that does not own it", rm, with(func(t *TakeOver) { t.Role = "builder" }), RuleRole,
			"the builder role does not own Research in Progress (its owners: analyst)", "leave it to an agent of a role that owns Research in Progress"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.m.CheckTakeOver(tt.t, now)
			if tt.rule == "" {
				if r != nil {
					t.Fatalf("refused: %v", r)
				}
				return
			}
			if r == nil {
				t.Fatal("allowed")
			}
			if r.Rule != tt.rule || !strings.Contains(r.Why, tt.why) || !strings.Contains(r.Recovery, tt.recover) {
				t.Errorf("refusal %+v, want rule %s, why ~ %q, recovery ~ %q", r, tt.rule, tt.why, tt.recover)
			}
		})
	}
	if !m.LockExpired(expired.Since, now) || m.LockExpired(now.Add(-time.Minute), now) || off.LockExpired(expired.Since, now) {
		t.Error("LockExpired disagrees with the ttl")
	}
}

// The holder a lock was taken from is told so when it moves the item; anyone else is refused
// as before, and a human may still move it.
func TestDecideAfterATakeOver(t *testing.T) {
	m := machineWith(t, func(s *Spec) { s.Locks.TTL = time.Hour })
	c := Change{From: sRIP, To: sRFP, Actor: "agent-1", ActorKind: ActorAgent, LockHolder: "agent-2", LockTakenFrom: "agent-1", Number: 3}
	d := m.Decide(c)
	if d.Rule != RuleLockOwnership || d.Reason != "agent-2 took over the lock on Research in Progress from agent-1 after it expired (workflow.locks.ttl); only the holder or a human may move it now" {
		t.Errorf("Decide = %v: %s", d.Rule, d.Reason)
	}
	if r := m.RefusalFor(c, d); r.Recovery != "leave #3 to agent-2 and pick other work (pick_actionable_issue)" {
		t.Errorf("recovery %q", r.Recovery)
	}
	other := c
	other.Actor = "agent-3"
	if d := m.Decide(other); d.Rule != RuleLockOwnership || !strings.Contains(d.Reason, "locked by agent-2; only the holder or a human may move it, not agent-3") {
		t.Errorf("another agent: %s", d.Reason)
	}
	human := c
	human.Actor, human.ActorKind = "alice", ActorHuman
	if d := m.Decide(human); d.Verdict != Allow {
		t.Errorf("a human: %s", d.Reason)
	}
	if _, ps := Compile(func() Spec { s := DefaultSpec(); s.Locks.TTL = -time.Second; return s }()); len(ps) != 1 || ps[0].Path != "workflow.locks.ttl" {
		t.Errorf("a negative ttl: %v", ps)
	}
}
