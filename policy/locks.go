package policy

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// LocksSpec configures locks (workflow.locks, docs/ENFORCEMENT.md "Lock expiry").
type LocksSpec struct {
	// TTL: a lock held longer may be taken over by another agent of a role that owns its
	// state, through the façade; 0 (the default) never.
	TTL time.Duration `yaml:"ttl" json:"ttl,omitempty"`
}

// TakeOver is an agent's request to take over the lock an item is held in.
type TakeOver struct {
	Number int    // the issue, for the texts
	State  string // the item's last legal state
	Holder string // who holds its lock
	Since  time.Time
	Agent  string // who asks
	Role   string // the role it acts in ("" none)
}

// LockTTL is workflow.locks.ttl (0: locks never expire).
func (m *Machine) LockTTL() time.Duration { return m.spec.Locks.TTL }

// LockExpired reports whether a lock held since since is past workflow.locks.ttl at now.
func (m *Machine) LockExpired(since, now time.Time) bool {
	ttl := m.spec.Locks.TTL
	return ttl > 0 && !since.IsZero() && now.Sub(since) > ttl
}

// CheckTakeOver says whether t may be made at now: expiry is on, the item is in a lock state
// held by someone else past the ttl (or by nobody known), and the agent's role (when roles are
// configured) owns that state. nil when it may; else the refusal, rule lock_ownership (role
// for a role that does not own the state).
func (m *Machine) CheckTakeOver(t TakeOver, now time.Time) *Refusal {
	r := &Refusal{Tried: fmt.Sprintf("%s asked to take over the lock on #%d", orSomeone(t.Agent), t.Number),
		Rule: RuleLockOwnership, Options: []string{}, TakeOver: true}
	ttl := m.spec.Locks.TTL
	switch {
	case !m.IsLock(t.State):
		r.Why = fmt.Sprintf("#%d is in %s, which is not a lock", t.Number, displayFrom(t.State))
		r.Recovery = "retry without take_over"
	case strings.EqualFold(t.Holder, t.Agent):
		r.Why = fmt.Sprintf("you hold the lock on #%d already", t.Number)
		r.Recovery = "retry without take_over"
	case ttl <= 0:
		r.Why = fmt.Sprintf("%s is locked by %s, and locks do not expire here (workflow.locks.ttl is off)", t.State, orSomeone(t.Holder))
		r.Recovery = fmt.Sprintf("ask %s to hand the item off, or ask a human to move it", orSomeone(t.Holder))
		r.Options = []string{}
		if t.Holder != "" {
			r.Options = []string{t.Holder}
		}
	case t.Role != "" && m.roles.Has(t.Role) && !slices.Contains(m.roles.Owners(t.State), t.Role):
		r.Why = fmt.Sprintf("the %s role does not own %s (its owners: %s)", t.Role, t.State, joinOr(orNone(m.roles.Owners(t.State))))
		r.Recovery = "leave it to an agent of a role that owns " + t.State + ", or ask a human"
		r.Rule = RuleRole
	case t.Holder == "":
		return nil // a lock nobody is known to hold: the agent takes it
	case !m.LockExpired(t.Since, now):
		left := "its age is unknown"
		if !t.Since.IsZero() {
			left = "it expires in " + t.Since.Add(ttl).Sub(now).Round(time.Second).String()
		}
		r.Why = fmt.Sprintf("%s is locked by %s, within workflow.locks.ttl (%s): %s", t.State, t.Holder, ttl, left)
		r.Recovery = fmt.Sprintf("wait until the lock expires, or ask %s to hand the item off", t.Holder)
		r.Options = []string{t.Holder}
	default:
		return nil
	}
	return r
}

// takenOverText is the lock-ownership refusal of a move by the holder a lock was taken from.
func takenOverText(state, holder, from string) string {
	return fmt.Sprintf("%s took over the lock on %s from %s after it expired (workflow.locks.ttl); only the holder or a human may move it now",
		holder, state, from)
}

func orSomeone(s string) string {
	if s == "" {
		return "someone"
	}
	return s
}

func orNone(ss []string) []string {
	if len(ss) == 0 {
		return []string{"none"}
	}
	return ss
}
