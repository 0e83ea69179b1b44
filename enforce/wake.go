package enforce

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// A walk may need another item's history: the convergence gate counts each group member with
// its legal state when the move was made, and a step waits for its relatives' earlier history
// (relatives.go). Such a wait is woken, never polled: the waiting item is noted as a dependent
// of the other item, and when a walk of that item ends having moved its history on (its record
// written) the dependents are walked again. The job of the waiting report backs off meanwhile (1 s, doubling to 5 min): it is the
// durable fallback for a restart, or a member walked on another replica.

// groupUnsettled is errGroupUnsettled for one member: the item whose history must move on.
type groupUnsettled struct {
	member string // the member's item id
	number int
}

func (g groupUnsettled) Error() string { return fmt.Sprintf("#%d: %s", g.number, errGroupUnsettled) }
func (g groupUnsettled) Unwrap() error { return errGroupUnsettled }

// walkAgain is the wait of a walk whose member settled while it looked: it goes on at once.
const walkAgain = 10 * time.Millisecond

// Backoff of a waiting item's job between wakes.
const (
	dependentFirstWait = time.Second
	dependentMaxWait   = 5 * time.Minute
)

// dependent is an item waiting on another's history, and how to walk it again.
type dependent struct {
	board        Board
	installation int64
	owner        string
}

// dependents are the items waiting on members' histories, in this process.
type dependents struct {
	mu    sync.Mutex
	on    map[string]map[string]dependent // member item → waiting item → how to walk it
	waits map[string]int                  // waiting item → waits in a row (its backoff)
	soon  map[string]dependent            // items to walk once the walk under way has ended (inline)
	// wakes counts the walks that moved a history on (each wakes its item's dependents);
	// lastWake is, per item, the count when its history last moved on.
	wakes    uint64
	lastWake map[string]uint64
}

// maxRememberedWakes bounds lastWake (one entry per item walked lately).
const maxRememberedWakes = 10000

// await notes that item waits on member, and returns how long its job should stay away.
//
// since is the wake count (mark) from before the walk looked at the member: a member whose walk
// ended since then may have settled after the look — a wake this item would have missed —
// so it is walked again at once instead (again), without waiting.
func (d *dependents) await(item, member string, dep dependent, since uint64) (wait time.Duration, again bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.lastWake[member] > since {
		return 0, true
	}
	if d.on == nil {
		d.on, d.waits = map[string]map[string]dependent{}, map[string]int{}
	}
	if d.on[member] == nil {
		d.on[member] = map[string]dependent{}
	}
	d.on[member][item] = dep
	n := d.waits[item]
	d.waits[item] = n + 1
	return min(dependentFirstWait<<min(n, 16), dependentMaxWait), false
}

// mark is the count of wakes so far: a walk notes it before it looks at other items.
func (d *dependents) mark() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.wakes
}

// settled forgets an item's backoff: its walk went on.
func (d *dependents) settled(item string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.waits, item)
}

// later keeps an item to walk once the walk under way has ended (a simulated world).
func (d *dependents) later(item string, dep dependent) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.soon == nil {
		d.soon = map[string]dependent{}
	}
	d.soon[item] = dep
}

// takeLater returns the items kept by later, and forgets them.
func (d *dependents) takeLater() map[string]dependent {
	d.mu.Lock()
	defer d.mu.Unlock()
	soon := d.soon
	d.soon = nil
	return soon
}

// take returns the items waiting on member, and forgets them.
func (d *dependents) take(member string) map[string]dependent {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.wakes++
	if d.lastWake == nil || len(d.lastWake) > maxRememberedWakes {
		// Bounded: a walk that looked before this reset and waits is woken by its backoff.
		d.lastWake = map[string]uint64{}
	}
	d.lastWake[member] = d.wakes
	deps := d.on[member]
	delete(d.on, member)
	return deps
}

// holdForMember keeps a walk's reports until the member it needs has moved on: its job comes
// back after a backoff, and a walk of the member wakes it sooner.
func (e *Enforcer) holdForMember(ctx context.Context, w *walk, g groupUnsettled) (Result, error) {
	wait, again := e.deps.await(w.rec.ItemID, g.member, dependent{board: plainBoard(w.board), installation: w.installation, owner: w.owner}, w.wakes)
	if again {
		zerolog.Ctx(ctx).Debug().Str("member", g.member).Msg("a group member's walk ended meanwhile: walking again")
		return Result{Verdict: VerdictWait, Reason: g.Error(), RetryAfter: walkAgain}, nil
	}
	zerolog.Ctx(ctx).Debug().Str("member", g.member).Dur("backoff", wait).Msg("waiting for a group member's history")
	return Result{Verdict: VerdictWait, Reason: g.Error(), RetryAfter: wait}, nil
}

// wake walks again the items waiting on member's history, once a walk of it has ended having
// moved it on.
// Beside the caller (in its goroutine in a simulated world); a failure leaves the item to its
// job.
func (e *Enforcer) wake(ctx context.Context, member string, progressed bool) {
	if e.inline {
		soon := e.deps.takeLater()
		for _, item := range slices.Sorted(maps.Keys(soon)) { // in a stable order: a simulated world replays
			e.walkDependent(ctx, item, soon[item])
		}
	}
	if !progressed {
		return // nothing its dependents wait for has changed
	}
	deps := e.deps.take(member)
	for _, item := range slices.Sorted(maps.Keys(deps)) {
		dep := deps[item]
		if e.inline {
			e.walkDependent(ctx, item, dep)
			continue
		}
		e.explaining.Add()
		go func() {
			defer e.explaining.Done()
			e.walkDependent(context.WithoutCancel(ctx), item, dep)
		}()
	}
}

// dependentAttempts is how often a woken or owed walk is tried (walkDependent).
const dependentAttempts = 10

func (e *Enforcer) walkDependent(ctx context.Context, item string, dep dependent) {
	lc := zerolog.Ctx(ctx).With().Str("item", item).Str("woken_by", "a group member's history").Logger()
	ctx = lc.WithContext(ctx)
	// A failure is retried, as a job's would be (a write owed by automation may have no job of
	// its own), backing off from 100 ms to 10 s (about a minute in all); then the item is left
	// to its jobs and the reconciler.
	backoff := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		w := &walk{board: dep.board, installation: dep.installation, owner: dep.owner}
		res, err := e.walkOn(ctx, w, item)
		if err == nil && res.Verdict == VerdictWait && res.RetryAfter == walkAgain && attempt < dependentAttempts {
			continue // the member it waited on settled meanwhile
		}
		if err == nil || errors.Is(err, context.Canceled) {
			return
		}
		if attempt == dependentAttempts {
			zerolog.Ctx(ctx).Warn().Err(err).Msg("walking a woken item failed; left to its jobs and the reconciler")
			return
		}
		if !e.inline {
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
				return
			}
			backoff = min(2*backoff, 10*time.Second)
		}
	}
}

// walkSoon walks an item beside the caller: an automated move recorded in its history that its
// chain did not write at once is written by the item's walk, once the reports of the values its
// card shows are judged (automation.go).
func (e *Enforcer) walkSoon(ctx context.Context, b Board, it Item) {
	dep := dependent{board: plainBoard(b), owner: it.Owner}
	if e.inline {
		// One event at a time: walked once the walk under way has let go of its item (the
		// caller may hold the lock of the item to walk).
		e.deps.later(it.ID, dep)
		return
	}
	e.explaining.Add()
	go func() {
		defer e.explaining.Done()
		e.walkDependent(context.WithoutCancel(ctx), it.ID, dep)
	}()
}
