package enforce

import (
	"slices"
	"time"
)

// Modes say how a project is held to the workflow (docs/ENFORCEMENT.md "Modes"). Under
// enforce, a refused move is reverted, explained on its issue and audited `reverted`, and
// allowed moves set off automation. Under warn and evaluate nothing is written for enforcement:
// a refused move stands, audited `would_revert` with the rule that refused it, and no
// automation runs; warn explains each refused move on its issue, saying it was not reverted.
// A refused move that stands becomes the item's state: its history goes on from the value the
// board shows, so each refused move is told once, as enforce would have refused it, and a
// move judged under one mode is never undone later under another.
type Mode string

// Modes.
const (
	ModeEnforce  Mode = "enforce"
	ModeWarn     Mode = "warn"
	ModeEvaluate Mode = "evaluate"
)

// Modes lists the modes, from the least to the most written.
func Modes() []Mode { return []Mode{ModeEvaluate, ModeWarn, ModeEnforce} }

// Valid reports whether m is one of Modes.
func (m Mode) Valid() bool { return slices.Contains(Modes(), m) }

// Writes reports whether enforcement writes to GitHub under m: reverts, automation.
func (m Mode) Writes() bool { return m == ModeEnforce || m == "" }

// ModeIn is the mode modes gives a project: enforce when modes is nil or gives no valid mode.
func ModeIn(modes func(owner string, number int) Mode, owner string, number int) Mode {
	if modes == nil {
		return ModeEnforce
	}
	if m := modes(owner, number); m.Valid() {
		return m
	}
	return ModeEnforce
}

// refusedVerdict is the verdict a refused step's marker carries: would_revert when it stood,
// else reverted.
func refusedVerdict(v Verdict) Verdict {
	if v == VerdictWouldRevert {
		return v
	}
	return VerdictReverted
}

// stand makes a refused step that is not reverted (warn, evaluate) the item's state: the
// history goes on from the value the board shows. Whoever entered a lock state holds it.
func stand(rec *Record, o Observation, lock bool) {
	rec.LastLegalState, rec.RejectedState = o.To, ""
	if o.At.After(rec.LegalAt) {
		rec.LegalAt = o.At
	}
	rec.LockHolder, rec.LockSince, rec.LockTakenFrom = "", time.Time{}, ""
	if lock && !unknownAuthor(o.Actor) {
		rec.LockHolder, rec.LockSince = o.Actor, o.At
	}
}
