package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/ralph-gate/ralph-gate/app/config"
	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/ghboard"
	"github.com/ralph-gate/ralph-gate/ghsim"
	"github.com/ralph-gate/ralph-gate/marker"
	"github.com/ralph-gate/ralph-gate/policy"
	"github.com/ralph-gate/ralph-gate/store"
)

// flatSeed is the demo world with n loose issues (no parents, no blockers) instead of the demo's
// issues; state(i) gives issue i's first Workflow State ("" for none).
func flatSeed(t testing.TB, n int, state func(i int) string) []byte {
	t.Helper()
	initial := make([]string, n)
	for k := range initial {
		initial[k] = state(k + 1)
	}
	return familySeed(t, initial, nil)
}

// reconcileSettled makes the reconciler judge every item at once (no settle time) and proves
// a gap 300 ms after the missing change (how long a delivery attempt may take).
func reconcileSettled(c *config.Config) {
	c.Reconcile.Settle = 0
	c.Enforcement.ReorderWindow = 300 * time.Millisecond
}

// sweepThenReconcile runs what the periodic reconcile job runs: a sweep (whose completion
// proves that no failed delivery is missing), then a pass.
func (e *env) sweepThenReconcile() enforce.ReconcileReport {
	e.t.Helper()
	rep, err := e.sb.App.SweepNow(context.Background())
	if err != nil || !rep.Complete {
		e.t.Fatalf("sweep: %+v %v; want a complete sweep", rep, err)
	}
	return e.reconcile()
}

func (e *env) reconcile() enforce.ReconcileReport {
	e.t.Helper()
	reps, err := e.sb.App.ReconcileNow(context.Background())
	if err != nil {
		e.t.Fatalf("reconcile: %v", err)
	}
	if len(reps) != 1 {
		e.t.Fatalf("%d reports, want 1", len(reps))
	}
	return reps[0]
}

// delivered waits until ghsim has attempted every webhook queued so far.
func (e *env) delivered() {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := e.sb.Sim.WaitIdle(ctx); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) faults(f ghsim.Faults) {
	e.t.Helper()
	if err := e.sb.Sim.SetFaults(f); err != nil {
		e.t.Fatal(err)
	}
}

// A webhook GitHub never delivered (nothing to redeliver) leaves its value on the board; the
// reconciler finds it and, once a complete sweep proves no delivery is missing, judges it as a
// change whose author is unknown (judged as an agent's move).
func TestReconcilerFindsLostWebhooks(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, driver string) {
		e := start(t, driver, nil, reconcileSettled)
		first := e.reconcile() // first install: everything adopted
		if first.Adopted != first.Items || first.Reverted != 0 || e.appWrites() != 0 {
			t.Fatalf("first pass %+v wrote %d values; want everything adopted and nothing written", first, e.appWrites())
		}
		e.faults(ghsim.Faults{Webhook: ghsim.WebhookFaults{DropRate: 1, Unrecorded: true}})
		e.move("agent-1", 5, "In Progress")    // illegal from Backlog: webhook never sent
		e.move("alice", 8, "Plan in Progress") // legal: webhook never sent
		e.move("alice", 6, "Human Needed")     // legal escalation: webhook never sent
		e.delivered()                          // the faults apply when GitHub attempts the delivery
		e.faults(ghsim.Faults{})
		e.settle()
		e.wantState(5, "In Progress")       // nobody told ralph-gate yet
		time.Sleep(1500 * time.Millisecond) // past the delivery window (+1 s: GitHub dates to the second): a sweep now proves the gap

		rep := e.sweepThenReconcile()
		if rep.Drifted != 3 || rep.Reverted != 1 || rep.Accepted != 2 || rep.Pages != 1 {
			t.Fatalf("report %+v: want 3 drifts, 1 reverted, 2 accepted, 1 page", rep)
		}
		e.settle()
		e.wantState(5, "Backlog")
		e.wantState(8, "Plan in Progress")
		e.wantState(6, "Human Needed")
		cs := e.comments(5)
		if len(cs) != 1 || !strings.Contains(cs[0].Body, "no webhook reported") || !strings.Contains(cs[0].Body, "In Progress") {
			t.Fatalf("comments on #5: %+v; want one explaining the drift", cs)
		}
		// Nothing left to do: a second pass is in sync and writes nothing.
		writes := e.appWrites()
		again := e.reconcile()
		if again.Drifted != 0 || again.InSync != again.Items || e.appWrites() != writes {
			t.Fatalf("second pass %+v wrote %d values", again, e.appWrites()-writes)
		}
		found := false
		for _, a := range e.audit(5) {
			found = found || (a.Verdict == enforce.VerdictReverted && a.Actor == enforce.DriftActor && a.ActorKind == "agent")
		}
		if !found {
			t.Fatalf("no audit of the drift revert on #5 (judged as an agent): %+v", e.audit(5))
		}
	})
}

// A drift whose webhook failed (GitHub lists it) is not judged as an unknown author's: the
// reconciler's gap asks for a sweep, the redelivered webhook arrives with its real sender and
// is judged as theirs.
func TestReconcilerDriftRecoveredWithItsAuthor(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, driver string) {
		e := start(t, driver, nil, reconcileSettled)
		e.reconcile()
		e.faults(ghsim.Faults{Webhook: ghsim.WebhookFaults{DropRate: 1}})
		e.move("agent-1", 5, "In Progress") // illegal from Backlog: delivery failed
		e.move("owner", 6, "Human Needed")  // bypass: delivery failed
		e.delivered()
		e.faults(ghsim.Faults{})
		e.settle()
		rep := e.reconcile()
		if rep.Drifted != 2 || rep.Deferred != 2 {
			t.Fatalf("report %+v: want 2 drifts, both held for their webhooks", rep)
		}
		waitFor(t, 20*time.Second, func() bool { s, _ := e.sb.State("app", 5); return s == "Backlog" })
		e.settle()
		e.wantState(5, "Backlog")
		e.wantState(6, "Human Needed")
		cs := e.comments(5)
		if len(cs) != 1 || !strings.Contains(cs[0].Body, "`agent-1` (agent)") {
			t.Fatalf("comments on #5: %+v; want one naming agent-1", cs)
		}
		for _, i := range []int{5, 6} {
			for _, a := range e.audit(i) {
				if a.Actor == enforce.DriftActor && a.Verdict != enforce.VerdictAdopted {
					t.Errorf("#%d: a change with a redeliverable webhook was judged as an unknown author's: %+v", i, a)
				}
			}
		}
	})
}

// Installing on a board that already has values adopts them all without a write; after that,
// webhooks are judged against the adopted values.
func TestReconcilerAdoptsOnFirstInstall(t *testing.T) {
	t.Parallel()
	e := start(t, "sqlite", flatSeed(t, 30, func(i int) string {
		return []string{"", "Backlog", "Done", "In Progress", "Human Needed", "Plan in Review"}[i%6]
	}), reconcileSettled)
	rep := e.reconcile()
	if rep.Items != 30 || rep.Adopted != 30 || rep.Reverted != 0 || e.appWrites() != 0 {
		t.Fatalf("report %+v, %d writes: want 30 adopted, no writes", rep, e.appWrites())
	}
	for _, c := range e.comments(3) {
		t.Fatalf("comment on an adopted item: %s", c.Body)
	}
	e.move("agent-1", 3, "Backlog") // #3 was adopted in In Progress; In Progress → Backlog is illegal
	e.settle()
	e.wantState(3, "In Progress")
}

// The reconciler of a 10,000-item project reads one GraphQL page per 100 items.
func TestReconciler10000Items(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 items: skipped with -short")
	}
	t.Parallel()
	const n = 10000
	states := []string{"Backlog", "Research Needed", "Ready for Plan", "In Progress", "Done"}
	e := start(t, "sqlite", flatSeed(t, n, func(i int) string { return states[i%len(states)] }), reconcileSettled)
	graphqlReads := func() int {
		c := 0
		for _, r := range e.sb.Sim.Requests().Entries {
			if r.TokenKind == "installation" && strings.HasPrefix(r.Operation, "graphql") {
				c++
			}
		}
		return c
	}
	before := graphqlReads()
	t0 := time.Now()
	first := e.reconcile()
	firstTook := time.Since(t0)
	reads := graphqlReads() - before
	if first.Items != n || first.Adopted != n || !first.Complete {
		t.Fatalf("first pass %+v", first)
	}
	if limit := n/100 + 2; reads > limit || first.Pages != n/100 {
		t.Fatalf("first pass: %d GraphQL requests, %d pages; want at most %d (one per 100 items)", reads, first.Pages, limit)
	}
	before = graphqlReads()
	t0 = time.Now()
	second := e.reconcile()
	secondTook := time.Since(t0)
	if reads := graphqlReads() - before; second.InSync != n || reads > n/100+2 {
		t.Fatalf("second pass %+v with %d GraphQL requests", second, reads)
	}
	t.Logf("10,000 items: first pass (adopt) %d GraphQL requests in %s; second pass (in sync) %d requests in %s",
		reads, firstTook.Round(time.Millisecond), second.Requests, secondTook.Round(time.Millisecond))
}

// The reconciler spends at most its share of the rate limit per window: it pauses, keeps its
// place, and does not spend more in the same window.
func TestReconcilerBudget(t *testing.T) {
	t.Parallel()
	opts := Options{Seed: flatSeed(t, 1000, func(int) string { return "Backlog" }),
		SimOptions: ghsim.Options{RateLimit: 100},
		Configure: func(c *config.Config) {
			c.Logging.Level = "warn"
			c.Reconcile.Settle = 0
			c.Reconcile.BudgetShare = 0.05 // 5 of 100 requests an hour
		}}
	ctx := context.Background()
	sb, err := Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	reps, err := sb.App.ReconcileNow(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rep := reps[0]
	if rep.Complete || rep.Paused == "" || rep.Requests > rep.Budget || rep.Budget != 5 || rep.Pages != 5 {
		t.Fatalf("report %+v: want a pause after 5 pages (5%% of 100)", rep)
	}
	reps, err = sb.App.ReconcileNow(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if reps[0].Pages != 0 || reps[0].Paused == "" {
		t.Fatalf("second pass in the same window %+v: want a pause without requests", reps[0])
	}
	t.Logf("paused: %s", reps[0].Paused)
}

// The sweeper redelivers failed deliveries (JWT, 202), once: the webhook is then processed
// with its real sender, and a second sweep redelivers nothing.
func TestRedeliverySweeper(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, driver string) {
		e := start(t, driver, nil, nil)
		e.faults(ghsim.Faults{Webhook: ghsim.WebhookFaults{DropRate: 1}})
		e.move("agent-1", 5, "In Progress") // illegal
		e.move("alice", 8, "Plan in Progress")
		e.delivered()
		e.faults(ghsim.Faults{})
		e.settle()
		failed := 0
		for _, d := range e.sb.Sim.Deliveries() {
			if !d.Success() {
				failed++
			}
		}
		if failed != 2 {
			t.Fatalf("%d failed deliveries, want 2", failed)
		}
		rep, err := e.sb.App.SweepNow(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if rep.Redelivered != 2 {
			t.Fatalf("sweep %+v: want 2 redelivered", rep)
		}
		e.settle()
		e.wantState(5, "Backlog")
		e.wantState(8, "Plan in Progress")
		if cs := e.comments(5); len(cs) != 1 || !strings.Contains(cs[0].Body, "`agent-1` (agent)") {
			t.Fatalf("comments on #5: %+v; want one naming agent-1", cs)
		}
		again, err := e.sb.App.SweepNow(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if again.Redelivered != 0 || again.Failed != 0 {
			t.Fatalf("second sweep %+v: want nothing to redeliver", again)
		}
	})
}

// model is what the board must end up as: per issue, its last legal state and lock holder, and
// every illegal move made (each must be explained exactly once).
type model struct {
	m       *policy.Machine
	actors  policy.Actors
	legal   map[int]string
	holder  map[int]string
	illegal map[int][]marker.Transition
	moves   int
	bad     []int // issues whose explanations did not match
}

func newModel(t testing.TB, cfg config.Config, n int, initial string) *model {
	m, err := cfg.Machine()
	if err != nil {
		t.Fatal(err)
	}
	md := &model{m: m, actors: cfg.PolicyActors("ralph-gate[bot]"), legal: map[int]string{}, holder: map[int]string{}, illegal: map[int][]marker.Transition{}}
	for i := 1; i <= n; i++ {
		md.legal[i] = initial
	}
	return md
}

// pick chooses a random move of issue i: legal or illegal with even odds (when a legal one
// exists).
func (md *model) pick(rng *rand.Rand, i int) (actor, to string) {
	actors := []string{"agent-1", "agent-2", "alice"}
	states := md.m.States()
	wantLegal := rng.IntN(2) == 0
	for tries := 0; ; tries++ {
		actor, to = actors[rng.IntN(len(actors))], states[rng.IntN(len(states))]
		if to == md.legal[i] {
			continue
		}
		if (md.decide(i, actor, to).Verdict == policy.Allow) == wantLegal || tries > 60 {
			return actor, to
		}
	}
}

func (md *model) decide(i int, actor, to string) policy.Decision {
	return md.m.Decide(policy.Change{From: md.legal[i], To: to, Actor: actor, ActorKind: md.actors.Classify(actor), LockHolder: md.holder[i]})
}

// apply records a move as ralph-gate must judge it; it reports whether it is legal.
func (md *model) apply(i int, actor, to string) bool {
	md.moves++
	d := md.decide(i, actor, to)
	if d.Verdict != policy.Allow {
		md.illegal[i] = append(md.illegal[i], marker.Transition{From: md.legal[i], To: to, Actor: actor})
		return false
	}
	from := md.legal[i]
	md.legal[i] = to
	switch {
	case md.m.IsLock(to) && from != to:
		md.holder[i] = actor
	case !md.m.IsLock(to):
		md.holder[i] = ""
	}
	return true
}

// check compares the board with the model: every value is the last legal one, and every
// illegal move appears exactly once among the app's violation comments on its issue (a burst
// of one actor's violations is coalesced into one comment, so "exactly one explanation" means
// one marker line per refused move, in at most one comment per actor and coalescing window).
func (md *model) check(t *testing.T, st ghsim.State, appLogin string) {
	t.Helper()
	byNumber := map[int]ghsim.IssueState{}
	for _, is := range st.Issues {
		byNumber[is.Number] = is
	}
	inSummaries := summarized(st, appLogin)
	for i, want := range md.legal {
		is := byNumber[i]
		if got := is.Fields["Workflow State"]; got != want {
			t.Errorf("#%d is in %q, want %q (its last legal state)", i, got, want)
		}
		var seen []marker.Transition
		comments := map[string]int{} // actor -> violation comments listing their violations
		for _, c := range is.Comments {
			if c.Author != appLogin || !strings.Contains(c.Body, marker.Violation) {
				continue
			}
			ms, err := marker.ParseTransitions(c.Body)
			if err != nil {
				t.Errorf("#%d: %v", i, err)
			}
			actors := map[string]bool{}
			for _, m := range ms {
				actors[m.Actor] = true
			}
			if len(actors) > 1 {
				t.Errorf("#%d: one violation comment lists the violations of %d actors: %v", i, len(actors), ms)
			}
			for a := range actors {
				comments[a]++
			}
			seen = append(seen, ms...)
		}
		for a, n := range comments {
			if n > 1 {
				t.Errorf("#%d has %d violation comments of %s; one coalesces each actor's within the window", i, n, a)
			}
		}
		seen = append(seen, inSummaries[i]...) // a storm's summary explains them elsewhere
		want := md.illegal[i]
		if len(seen) != len(want) {
			t.Errorf("#%d: %d explained violations, want %d (%v vs %v)", i, len(seen), len(want), seen, want)
			md.bad = append(md.bad, i)
			continue
		}
		// Order is not part of the promise: a job interrupted between its revert and its
		// comment explains after a later move's job did.
		used := make([]bool, len(seen))
		for _, w := range want {
			found := false
			for k, m := range seen {
				if !used[k] && m.To == w.To && m.From == w.From && (m.Actor == w.Actor || m.Actor == enforce.DriftActor) {
					used[k], found = true, true
					break
				}
			}
			if !found {
				t.Errorf("#%d: the refused move %s → %s by %s is not explained (explained: %v)", i, w.From, w.To, w.Actor, seen)
				md.bad = append(md.bad, i)
			}
		}
	}
}

// checkLocks compares every lock holder with the model: holder(i) is who ralph-gate records
// as holding issue i's lock.
func (md *model) checkLocks(t *testing.T, holder func(i int) string) {
	t.Helper()
	for i, l := range md.legal {
		if !md.m.IsLock(l) {
			continue
		}
		if got := holder(i); got != md.holder[i] {
			t.Errorf("#%d: %s held by %q, want %q (who took it)", i, l, got, md.holder[i])
		}
	}
}

// userMove moves an issue as a seeded user the way a careful client does under faults: 5xx are
// retried (by ghboard), a rate limit is waited out in full.
func userMove(ctx context.Context, sb *Sandbox, login string, number int, state string) error {
	for attempt := 0; attempt < 20; attempt++ {
		err := sb.Move(ctx, login, "app", number, state)
		var rl *ghboard.RateLimitError
		switch {
		case err == nil:
			return nil
		case errors.As(err, &rl):
			time.Sleep(rl.RetryAfter + 50*time.Millisecond)
		default:
			time.Sleep(100 * time.Millisecond)
		}
	}
	return fmt.Errorf("%s could not move #%d to %s", login, number, state)
}

// earlyRetries counts requests of the app's identities that were retried before a
// retry-after had passed. ghsim flags every request an identity makes inside a retry-after it
// was given (early_retry); some of those had left the app before the answer carrying the
// retry-after arrived (other workers' requests in flight at that moment). The app's gate
// records, for each wait, when it learnt it and how many requests of that identity were then
// in flight: a flagged request that arrived after the app learnt the wait and is not one of
// those in flight is a retry before retry-after.
func earlyRetries(sb *Sandbox) (early, flagged int) {
	waits := sb.App.GitHubWaits()
	explained := make([]int, len(waits))
	for _, r := range sb.Sim.Requests().Entries {
		if !r.EarlyRetry || (r.TokenKind != "installation" && r.TokenKind != "app") {
			continue
		}
		flagged++
		kind := "token"
		if r.TokenKind == "app" {
			kind = "app"
		}
		for k, w := range waits {
			if w.Identity != kind || r.Time.Before(w.Learnt) || !r.Time.Before(w.Until) {
				continue
			}
			explained[k]++
			if explained[k] > w.InFlight {
				early++
				if testing.Verbose() {
					fmt.Printf("early: %s %s at %s; wait learnt %s until %s with %d in flight\n", r.Identity, r.Operation,
						r.Time.Format("15:04:05.000000"), w.Learnt.Format("15:04:05.000000"), w.Until.Format("15:04:05.000000"), w.InFlight)
				}
			}
			break
		}
	}
	return early, flagged
}

// Under 20% 5xx, secondary rate limits with retry-after, 10% dropped and 10% duplicated,
// reordered webhooks, the board ends as it would without faults once the sweeper and one
// reconciliation pass have run, and no request is retried before its retry-after.
func TestFaultsSameEndState(t *testing.T) {
	t.Parallel() // mostly waiting out retry-afters
	const items, rounds = 12, 5
	e := start(t, "sqlite", flatSeed(t, items, func(int) string { return "Backlog" }), func(c *config.Config) {
		c.Reconcile.Settle = 0
		c.Enforcement.ReorderWindow = 500 * time.Millisecond
	})
	ctx := context.Background()
	e.reconcile() // installed on an existing board: adopt
	md := newModel(t, e.sb.Config, items, "Backlog")
	rng := rand.New(rand.NewPCG(7, 11))
	e.faults(ghsim.Faults{ErrorRate: 0.2, SecondaryRateLimitRate: 0.05, RetryAfterS: 1,
		Webhook: ghsim.WebhookFaults{DropRate: 0.1, DuplicateRate: 0.1, Reorder: true}})
	for round := 0; round < rounds; round++ {
		for i := 1; i <= items; i++ {
			actor, to := md.pick(rng, i)
			if err := userMove(ctx, e.sb, actor, i, to); err != nil {
				t.Fatal(err)
			}
			md.apply(i, actor, to)
		}
		e.settle()
		// The sweeper recovers the dropped webhooks (retrying when GitHub asks it to wait).
		for sweeps := 0; ; sweeps++ {
			if sweeps == 30 {
				t.Fatal("30 sweeps did not recover every dropped webhook")
			}
			rep, err := e.sb.App.SweepNow(ctx)
			var ra interface{ RetryAfterDuration() time.Duration }
			if errors.As(err, &ra) {
				time.Sleep(ra.RetryAfterDuration())
				continue
			}
			if err == nil && rep.Failed == rep.GaveUp && rep.Waiting == 0 {
				break // nothing left to redeliver (a redelivery can be dropped or refused too)
			}
			e.settle()
		}
	}
	// One reconciliation pass (resumed if GitHub asks it to wait) finds whatever is left.
	var rep enforce.ReconcileReport
	for attempt := 0; ; attempt++ {
		reps, err := e.sb.App.ReconcileNow(ctx)
		var ra interface{ RetryAfterDuration() time.Duration }
		if err != nil && attempt < 10 {
			if errors.As(err, &ra) {
				time.Sleep(ra.RetryAfterDuration())
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		rep = reps[0]
		break
	}
	e.settle()
	e.faults(ghsim.Faults{})
	md.check(t, e.sb.Sim.State(), e.sb.App.AppLogin())
	md.checkLocks(t, func(i int) string { return e.item(i).LockHolder })
	for _, i := range md.bad {
		is, _ := e.sb.Issue("app", i)
		for _, c := range is.Comments {
			t.Logf("#%d comment by %s:\n%s", i, c.Author, c.Body)
		}
		for _, a := range e.audit(i) {
			t.Logf("#%d audit: %s %s %s→%s %s (%s) delivery %s", i, a.At.Format("15:04:05.000"), a.Actor, a.FromState, a.ToState, a.Verdict, a.Reason, a.DeliveryID)
		}
	}
	early, flagged := earlyRetries(e.sb)
	if early != 0 {
		t.Errorf("%d requests retried before their retry-after", early)
	}
	log := e.sb.Sim.Requests()
	t.Logf("%d moves (%d illegal); faults: %d 5xx, %d secondary limits, %d early-flagged in flight (0 retried early); reconciliation: %+v",
		md.moves, countIllegal(md), log.Counts["fault:error"], log.Counts["fault:secondary_rate_limit"], flagged, rep)
	// Nothing was decided twice for one delivery.
	decisions := map[string]int{}
	entries, err := e.sb.App.Store().QueryAudit(ctx, store.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range entries {
		if a.DeliveryID != "" && (a.Verdict == enforce.VerdictAllowed || a.Verdict == enforce.VerdictReverted) {
			decisions[a.DeliveryID]++
		}
	}
	for id, n := range decisions {
		if n > 1 {
			t.Errorf("delivery %s decided %d times", id, n)
		}
	}
}

func countIllegal(md *model) int {
	n := 0
	for _, v := range md.illegal {
		n += len(v)
	}
	return n
}

// Logs never carry the private key, the webhook secret or a token, even at debug level and
// under faults (errors quote GitHub's answers).
func TestSecretsNeverLogged(t *testing.T) {
	t.Parallel()
	var buf lockedBuffer
	logger := zerolog.New(&buf).Level(zerolog.DebugLevel)
	ctx := logger.WithContext(context.Background())
	sb, err := Start(ctx, Options{Configure: func(c *config.Config) { c.Logging.Level = "debug"; c.Reconcile.Settle = 0 }})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	if err := sb.Sim.SetFaults(ghsim.Faults{ErrorRate: 0.2, SecondaryRateLimitRate: 0.1, RetryAfterS: 1,
		Webhook: ghsim.WebhookFaults{DropRate: 0.3}}); err != nil {
		t.Fatal(err)
	}
	for _, mv := range []struct {
		who, to string
		n       int
	}{{"agent-1", "In Progress", 5}, {"alice", "Plan in Progress", 8}, {"agent-2", "Done", 6}} {
		if err := userMove(ctx, sb, mv.who, mv.n, mv.to); err != nil {
			t.Fatal(err)
		}
	}
	_ = sb.Settle(ctx)
	_, _ = sb.App.SweepNow(ctx)
	_, _ = sb.App.ReconcileNow(ctx)
	_ = sb.Settle(ctx)
	sb.Sim.SetFaults(ghsim.Faults{})
	// A bad signature is logged (as a refusal), never with the secret.
	logs := buf.String()
	if !strings.Contains(logs, "reconciliation") {
		t.Fatalf("the run logged nothing useful:\n%s", logs)
	}
	pem := string(sb.Sim.PrivateKeyPEM())
	for _, line := range strings.Split(pem, "\n") {
		if len(line) >= 40 && strings.Contains(logs, line) {
			t.Fatalf("the private key is in the logs")
		}
	}
	if strings.Contains(logs, "PRIVATE KEY") {
		t.Fatal("a PEM header is in the logs")
	}
	if strings.Contains(logs, sb.Config.GitHub.App.WebhookSecret) {
		t.Fatal("the webhook secret is in the logs")
	}
	for _, re := range []*regexp.Regexp{regexp.MustCompile(`ghs_[0-9a-f]{20,}`), regexp.MustCompile(`eyJ[A-Za-z0-9_-]{10,}\.`), regexp.MustCompile(`(?i)(token|bearer) [A-Za-z0-9_-]{20,}`)} {
		if m := re.FindString(logs); m != "" {
			t.Fatalf("a token is in the logs: %q", m)
		}
	}
	t.Logf("%d bytes of debug logs checked", len(logs))
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Graceful shutdown lets a job that is talking to GitHub finish: the revert and its comment
// are made before Serve returns.
func TestGracefulShutdownDrainsJobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sb, err := Start(ctx, Options{Configure: func(c *config.Config) { c.Logging.Level = "warn" }})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	if err := sb.Move(ctx, "agent-1", "app", 5, "In Progress"); err != nil {
		t.Fatal(err)
	}
	// Slow GitHub down for the app, then shut down while the job is in flight.
	if err := sb.Sim.SetFaults(ghsim.Faults{LatencyMS: 400, Operations: []string{"graphql:*"}}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(sb.Sim.Requests().Entries) == 0 || !inFlight(sb) {
		if time.Now().After(deadline) {
			t.Fatal("the job never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := sb.Close(); err != nil {
		t.Fatal(err)
	}
	is, err := sb.Issue("app", 5)
	if err != nil {
		t.Fatal(err)
	}
	if is.Fields["Workflow State"] != "Backlog" || len(is.Comments) != 1 {
		t.Fatalf("after shutdown #5 is %q with %d comments: the in-flight job was not drained", is.Fields["Workflow State"], len(is.Comments))
	}
}

// inFlight reports whether the app has started reading the board.
func inFlight(sb *Sandbox) bool {
	for _, r := range sb.Sim.Requests().Entries {
		if r.TokenKind == "installation" {
			return true
		}
	}
	return false
}

// waitFor polls cond until it holds or the time is up.
func waitFor(t *testing.T, limit time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not reached within %s", limit)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
