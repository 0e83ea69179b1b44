package main

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ralph-gate/ralph-gate/app/config"
	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/ghsim"
	"github.com/ralph-gate/ralph-gate/internal/oracle"
	"github.com/ralph-gate/ralph-gate/marker"
	"github.com/ralph-gate/ralph-gate/mcpserver/toolspec"
	"github.com/ralph-gate/ralph-gate/payload"
	"github.com/ralph-gate/ralph-gate/policy"
	"github.com/ralph-gate/ralph-gate/store"
)

// The cluster end to end: three `ralph-gate serve` processes started at once on one empty
// PostgreSQL database, behind a round-robin reverse proxy that the simulator's webhooks and
// the agents' MCP calls go through, as a Deployment with replicaCount: 3 behind a Service runs.
// People and agents make a burst of legal and illegal moves while agents race to claim issues
// through different replicas, and one replica is SIGKILLed in the middle of the burst. Once it
// settles, the board, every lock holder and every explanation must be what the oracle
// (internal/oracle) gives for the true history (the order the simulator made the changes in);
// each actor's violations on an issue are explained in one comment; no issue is claimed twice;
// and the periodic jobs (reconciler, redelivery sweep) ran on one replica per interval.

const (
	clusterReplicas          = 3
	clusterReorderWindow     = 2 * time.Second
	clusterReconcileInterval = 4 * time.Second
	clusterRedeliverInterval = 3 * time.Second
	// clusterSettleBound is how long the burst may take to settle after its last move:
	// the reorder window and a sweep per judgment, one write a second per replica for the
	// reverts and comments, and the River leader's lease (15 s) when the leader was killed.
	clusterSettleBound = 50 * time.Second
)

// clusterBurstMove is one move of the burst: as actor, issue to state, after a pause; phase 1
// moves are made before the kill, phase 2 moves after it.
type clusterBurstMove struct {
	issue     int
	actor, to string
	after     time.Duration
	phase     int
}

func TestCluster(t *testing.T) {
	clearAppEnv(t)
	began := time.Now()
	dsn := freshPostgresDatabase(t)
	bin := buildRalphGate(t)
	// The replicas' configurations and logs (replica-N.log): kept with go test -artifacts.
	dir := t.ArtifactDir()

	// The world: burst issues (estimate XL, so a claim never picks them) and claimable issues
	// (Research Needed, small), no parents: the app's only writes on burst issues are reverts.
	rng := rand.New(rand.NewPCG(20260, 0xc1))
	starts := []string{"Backlog", "Research Needed", "Ready for Plan", "In Progress", "Research in Progress", "In Review"}
	const burstIssues, claimIssues = 12, 6
	initial := map[int]string{}
	var burst, claimable []int
	var issues []ghsim.SeedIssue
	for k := 1; k <= burstIssues; k++ {
		initial[k] = starts[rng.IntN(len(starts))]
		burst = append(burst, k)
		issues = append(issues, ghsim.SeedIssue{Repo: "app", Number: k, Title: fmt.Sprintf("Burst %d", k), Project: 1,
			Fields: map[string]string{"Workflow State": initial[k], "Estimate": "XL", "Priority": "P3"}})
	}
	for k := burstIssues + 1; k <= burstIssues+claimIssues; k++ {
		claimable = append(claimable, k)
		issues = append(issues, ghsim.SeedIssue{Repo: "app", Number: k, Title: fmt.Sprintf("Claim %d", k), Project: 1,
			Fields: map[string]string{"Workflow State": "Research Needed", "Estimate": []string{"XS", "S"}[k%2], "Priority": fmt.Sprintf("P%d", k%3)}})
	}
	var seed ghsim.Seed
	file, sim := startSimServer(t, nil, func(s *ghsim.Seed) {
		s.Issues, s.DraftItems = issues, nil
		seed = *s
	})
	appLogin := seed.App.Slug + "[bot]"
	tokens := map[string]string{}
	for _, u := range seed.Users {
		tokens[u.Login] = u.Token
	}

	// Agents on the façade, each with its own token (given to serve as its SHA-256).
	claimers := []string{"claimer-1", "claimer-2", "claimer-3", "claimer-4"}
	agentToken := map[string]string{}
	var mcpAgents []map[string]any
	for _, name := range claimers {
		agentToken[name] = name + "-token-for-the-cluster"
		sum := sha256.Sum256([]byte(agentToken[name]))
		mcpAgents = append(mcpAgents, map[string]any{"name": name, "token_sha256": hex.EncodeToString(sum[:]), "commands": []string{"research"}})
	}
	c := startCluster(t, bin, file, dir, clusterReplicas, func(cfg map[string]any) {
		cfg["store"] = map[string]any{"driver": "postgres", "dsn": dsn}
		cfg["enforcement"] = map[string]any{"reorder_window": clusterReorderWindow.String()}
		cfg["reconcile"] = map[string]any{"interval": clusterReconcileInterval.String(), "settle": "1s"}
		cfg["redelivery"] = map[string]any{"interval": clusterRedeliverInterval.String()}
		cfg["logging"] = map[string]any{"level": "debug", "format": "json"}
		cfg["mcp"] = map[string]any{"default_repo": "app", "agents": mcpAgents}
	})
	sim.SetWebhookURL(c.proxy.URL + "/api/github/hook")
	t.Logf("%d replicas ready behind %s after %s", clusterReplicas, c.proxy.URL, time.Since(began).Round(time.Millisecond))

	cfg, err := config.Load(filepath.Join(dir, "config-1.yml"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := cfg.Machine()
	if err != nil {
		t.Fatal(err)
	}
	actors := cfg.PolicyActors(appLogin)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, err := store.OpenReadOnly(ctx, "postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })

	// The first reconciliation (River's leader runs it on start) adopts every item as it is.
	adoptBy := time.Now().Add(20 * time.Second)
	for !slices.ContainsFunc(c.nodes, func(nd *clusterNode) bool { return len(periodicRuns(nd, "reconcile", "reconciliation")) > 0 }) {
		if time.Now().After(adoptBy) {
			t.Fatalf("no reconciliation within 20 s of start:\n%s", c.nodes[0].log.Tail(30))
		}
		time.Sleep(100 * time.Millisecond)
	}

	// The burst: each burst issue gets 2 or 3 moves by people and agents, some legal, some not
	// (judged as the app would, each from the legal state the moves before it leave).
	names := []string{"alice", "owner", "agent-1", "agent-2"}
	states := m.States()
	var plan []clusterBurstMove
	predicted := map[string]int{}
	for _, k := range burst {
		legal := initial[k]
		n := 2 + rng.IntN(2)
		for j := range n {
			actor := names[rng.IntN(len(names))]
			kind := actors.Classify(actor)
			to := states[rng.IntN(len(states))]
			if next := m.AllowedNext(legal, kind); len(next) > 0 && rng.IntN(2) == 0 {
				to = next[rng.IntN(len(next))]
			}
			if to == legal {
				continue
			}
			verdict := "illegal"
			if d := m.Decide(policy.Change{From: legal, To: to, Actor: actor, ActorKind: kind}); d.Verdict == policy.Allow {
				verdict, legal = "legal", to
			}
			predicted[kind.String()+" "+verdict]++
			phase := 1
			if j >= (n+1)/2 {
				phase = 2
			}
			plan = append(plan, clusterBurstMove{issue: k, actor: actor, to: to, after: time.Duration(200+rng.IntN(800)) * time.Millisecond, phase: phase})
		}
	}
	for _, want := range []string{"human legal", "human illegal", "agent legal", "agent illegal"} {
		if predicted[want] < 2 {
			t.Fatalf("the burst's plan has %d %s moves (%v): choose another random seed", predicted[want], want, predicted)
		}
	}
	t.Logf("burst: %d moves on %d issues, as planned %v", len(plan), len(burst), predicted)

	mover := newBoardMover(ctx, t, sim.URL(), seed.Org, "app", tokens, burst)
	stateOf := func(number int) string {
		for _, is := range sim.State().Issues {
			if is.Number == number {
				return is.Fields["Workflow State"]
			}
		}
		return ""
	}

	var (
		phase1, phase2 sync.WaitGroup
		killed         = make(chan struct{})
		moveErrs       = make(chan error, len(plan))
		victim         = 1 // the second replica
		killedAt       time.Time
		release        sync.Once // lets the second half of the burst go, also when the test stops early
	)
	defer release.Do(func() { close(killed) })
	for _, k := range burst {
		var mine []clusterBurstMove
		for _, mv := range plan {
			if mv.issue == k {
				mine = append(mine, mv)
			}
		}
		phase1.Add(1)
		phase2.Add(1)
		go func() {
			defer phase2.Done()
			done1 := false
			for _, mv := range mine {
				if mv.phase == 2 && !done1 {
					done1 = true
					phase1.Done()
					<-killed
				}
				time.Sleep(mv.after)
				if stateOf(mv.issue) == mv.to {
					continue // no change, no webhook
				}
				if err := mover.move(ctx, mv.actor, mv.issue, mv.to); err != nil {
					moveErrs <- err
				}
			}
			if !done1 {
				phase1.Done()
				<-killed
			}
		}()
	}

	// Meanwhile agents race to claim the claimable issues, through the proxy (each call may
	// reach another replica): more calls than issues.
	type claim struct {
		agent string
		out   toolspec.PickOutput
		err   error
	}
	var (
		claimWG sync.WaitGroup
		claimMu sync.Mutex
		claims  []claim
	)
	for _, name := range claimers {
		claimWG.Go(func() {
			cs, err := connectClusterAgent(ctx, c.proxy.URL+"/mcp", agentToken[name])
			if err != nil {
				claimMu.Lock()
				claims = append(claims, claim{agent: name, err: fmt.Errorf("connect: %w", err)})
				claimMu.Unlock()
				return
			}
			defer cs.Close()
			var calls sync.WaitGroup
			for range 2 {
				calls.Go(func() {
					res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: toolspec.PickActionableIssue,
						Arguments: map[string]any{"workflowState": "Research Needed", "claim": true, "command": "research", "reason": "cluster race"}})
					cl := claim{agent: name, err: err}
					if err == nil && res.IsError {
						cl.err = fmt.Errorf("tool error: %s", clusterToolText(res))
					} else if err == nil {
						data, _ := json.Marshal(res.StructuredContent)
						cl.err = json.Unmarshal(data, &cl.out)
					}
					claimMu.Lock()
					claims = append(claims, cl)
					claimMu.Unlock()
				})
			}
			calls.Wait()
		})
	}

	// Mid-burst: once the first half of the moves is made (and the claims are in), SIGKILL a
	// replica while their webhooks are still being judged. The proxy keeps sending it requests
	// for a second, as a Service does until the pod is seen gone: those deliveries fail and
	// the redelivery sweeps must bring them back.
	phase1.Wait()
	claimWG.Wait()
	// The victim is River's leader when it can be told (the replica that schedules the
	// periodic jobs: they must move to another), else the second replica.
	clients := make([]string, len(c.nodes))
	for i, nd := range c.nodes {
		if clients[i], err = nodeClient(ctx, st, nd); err != nil {
			t.Fatal(err)
		}
	}
	leader, err := riverLeader(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.Index(clients, leader); i >= 0 {
		victim = i
	}
	c.nodes[victim].kill(t)
	killedAt = time.Now()
	release.Do(func() { close(killed) })
	go func() {
		time.Sleep(time.Second)
		c.remove(victim)
	}()
	t.Logf("replica %d (pid %d, River client %q, leader: %v) SIGKILLed %s after start", c.nodes[victim].n, c.nodes[victim].cmd.Process.Pid,
		clients[victim], clients[victim] == leader, killedAt.Sub(began).Round(time.Millisecond))
	phase2.Wait()
	close(moveErrs)
	for err := range moveErrs {
		t.Fatal(err)
	}
	burstEnd := time.Now()

	// Settled: the board and every explanation match the oracle, and stay so for a while
	// (a second explanation would show up as a difference). Bounded.
	var (
		diffs       []string
		summary     clusterSummary
		stableSince time.Time
		lastDels    int
		deadline    = burstEnd.Add(clusterSettleBound)
	)
	for {
		diffs, summary = clusterCheck(ctx, t, sim, st, m, actors, appLogin, burst, initial)
		dels := len(sim.Deliveries())
		switch {
		case len(diffs) > 0 || dels != lastDels:
			stableSince = time.Time{}
		case stableSince.IsZero():
			stableSince = time.Now()
		}
		lastDels = dels
		if !stableSince.IsZero() && time.Since(stableSince) >= 2*clusterReorderWindow {
			break
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	settled := time.Since(burstEnd)
	if len(diffs) > 0 {
		var b strings.Builder
		for _, nd := range c.nodes {
			fmt.Fprintf(&b, "\nreplica %d's last lines:\n%s", nd.n, nd.log.Tail(15))
		}
		t.Errorf("%s after the burst, %d difference(s) from the oracle (go test -artifacts -outputdir DIR keeps every replica's log):\n%s\n%s",
			settled.Round(time.Millisecond), len(diffs), strings.Join(diffs, "\n"), b.String())
	} else {
		t.Logf("settled %s after the last move: %d moves (%d illegal, reverted and explained once; %d legal, standing), %d deliveries failed",
			settled.Round(time.Millisecond), summary.moves, summary.illegal, summary.moves-summary.illegal, summary.failedDeliveries)
	}
	if summary.illegal < 4 || summary.moves-summary.illegal < 4 {
		t.Errorf("the burst made %d moves of which %d illegal: too few of one kind to prove anything", summary.moves, summary.illegal)
	}
	if summary.failedDeliveries == 0 {
		t.Logf("no delivery failed around the kill (the redelivery path was not exercised this time)")
	}

	t.Run("claims through different replicas never give one issue twice", func(t *testing.T) {
		byIssue := map[int][]string{}
		for _, cl := range claims {
			if cl.err != nil {
				t.Errorf("%s: pick_actionable_issue: %v", cl.agent, cl.err)
				continue
			}
			if cl.out.Claimed && cl.out.Issue != nil {
				byIssue[cl.out.Issue.Number] = append(byIssue[cl.out.Issue.Number], cl.agent)
			}
		}
		for num, who := range byIssue {
			if len(who) > 1 {
				t.Errorf("#%d was claimed %d times: by %v", num, len(who), who)
			}
			if !slices.Contains(claimable, num) {
				t.Errorf("#%d was claimed (by %v), but it is not a claimable issue", num, who)
			}
		}
		if len(byIssue) != len(claimable) {
			t.Errorf("%d calls claimed %d of the %d claimable issues (%v): every one should have been taken", len(claims), len(byIssue), len(claimable), byIssue)
		}
		calls := c.toolCallsByNode()
		if len(calls) < 2 {
			t.Errorf("the claims reached %d replica(s) (%v), want at least 2", len(calls), calls)
		}
		state := sim.State()
		for _, is := range state.Issues {
			if !slices.Contains(claimable, is.Number) {
				continue
			}
			who := byIssue[is.Number]
			rec, err := st.GetItem(ctx, is.ItemID)
			if err != nil {
				t.Errorf("#%d: %v", is.Number, err)
				continue
			}
			if len(who) == 1 && (is.Fields["Workflow State"] != "Research in Progress" || rec.LockHolder != who[0]) {
				t.Errorf("#%d, claimed by %s, is in %s locked by %q", is.Number, who[0], is.Fields["Workflow State"], rec.LockHolder)
			}
			for _, cm := range is.Comments {
				if strings.Contains(cm.Body, marker.Violation) {
					t.Errorf("#%d, a claimed issue, got a violation comment:\n%s", is.Number, cm.Body)
				}
			}
		}
		t.Logf("claims: %d calls, %d issues claimed; tool calls by replica %v", len(claims), len(byIssue), calls)
	})

	t.Run("periodic jobs run on one replica per interval", func(t *testing.T) {
		type job struct {
			name, msg string
			every     time.Duration
		}
		jobs := []job{
			{"redeliver", "redelivery sweep", clusterRedeliverInterval},
			{"reconcile", "redelivery sweep", clusterReconcileInterval}, // each pass sweeps first
		}
		type run struct {
			node, attempt int
			at            time.Time
		}
		runsOf := func(j job) []run {
			var runs []run
			for _, nd := range c.nodes {
				for _, r := range periodicRuns(nd, j.name, j.msg) {
					runs = append(runs, run{node: nd.n, attempt: r.attempt, at: r.at})
				}
			}
			slices.SortFunc(runs, func(a, b run) int { return a.at.Compare(b.at) })
			return runs
		}
		// After the kill the jobs run on the survivors (a new leader is elected when the
		// killed one led: its lease runs out within 15 s) — unless the killed replica was
		// running one: River's rescuer makes it available again after 3 minutes
		// (docs/RELIABILITY.md), and until then it is not scheduled again.
		stuck := map[string]bool{}
		for _, j := range jobs {
			for wait := killedAt.Add(40 * time.Second); ; time.Sleep(250 * time.Millisecond) {
				runs := runsOf(j)
				if slices.ContainsFunc(runs, func(r run) bool { return r.at.After(killedAt) }) {
					break
				}
				if time.Since(killedAt) > 5*time.Second {
					if stuck[j.name], err = stuckPeriodic(ctx, st, j.name, killedAt); err != nil {
						t.Fatal(err)
					}
					if stuck[j.name] {
						t.Logf("%s was running on the killed replica: it runs again once River rescues it", j.name)
						break
					}
				}
				if time.Now().After(wait) {
					t.Errorf("%s did not run in the 40 s after the kill", j.name)
					break
				}
			}
		}
		for _, j := range jobs {
			runs := runsOf(j)
			byNode := map[int]int{}
			var before, after int
			for _, r := range runs {
				byNode[r.node]++
				if r.at.Before(killedAt) {
					before++
				} else {
					after++
				}
			}
			switch {
			case before < 1:
				t.Errorf("%s ran %d times before the kill, want at least 1 (every %s)", j.name, before, j.every)
			case stuck[j.name]:
				// A known limit (docs/RELIABILITY.md, Periodic jobs after a crash): not run
				// again until River rescues the run the killed replica held, 3 minutes on.
				t.Logf("%s: %d runs, none since the kill: the killed replica held its run", j.name, len(runs))
			case len(runs) < 3:
				t.Errorf("%s ran %d times in all, want at least 3 (every %s)", j.name, len(runs), j.every)
			}
			// Never two runs in one interval: consecutive runs, wherever they ran, are at least
			// half an interval apart (a retry of the same run excepted).
			for i := 1; i < len(runs); i++ {
				if gap := runs[i].at.Sub(runs[i-1].at); gap < j.every/2 && runs[i].attempt <= 1 {
					t.Errorf("%s ran on replica %d and again on replica %d %s later (every %s): two runs in one interval",
						j.name, runs[i-1].node, runs[i].node, gap.Round(time.Millisecond), j.every)
				}
			}
			if len(runs) > 1 {
				span := runs[len(runs)-1].at.Sub(runs[0].at)
				if limit := int(span/j.every) + 2; len(runs) > limit {
					t.Errorf("%s ran %d times in %s, at most %d at one run every %s", j.name, len(runs), span.Round(time.Millisecond), limit, j.every)
				}
			}
			t.Logf("%s: %d runs (%d before the kill, %d after), by replica %v", j.name, len(runs), before, after, byNode)
		}
		if after, err := riverLeader(ctx, st); err == nil {
			t.Logf("River leader before the kill %q (replica %d's client: %q), after %q", leader, c.nodes[victim].n, clients[victim], after)
		}
	})

	for i, nd := range c.nodes {
		if i == victim {
			continue
		}
		if !nd.running() {
			t.Errorf("replica %d exited (%v):\n%s", nd.n, nd.err, nd.log.Tail(30))
			continue
		}
		if code, _, err := nd.get("/healthz"); err != nil || code != 200 {
			t.Errorf("replica %d: /healthz %d (%v)", nd.n, code, err)
		}
	}
	t.Logf("the whole test took %s", time.Since(began).Round(time.Millisecond))
}

// clusterSummary counts what the true history holds.
type clusterSummary struct {
	moves, illegal, failedDeliveries int
}

// clusterCheck compares the burst's issues with the oracle over the true history (the changes
// in the order the simulator made them, with their senders): the board value, the lock holder
// and how often each move was explained; each violation comment names one actor, each actor
// has one comment per issue, and every line names the move's actor and target.
func clusterCheck(ctx context.Context, t *testing.T, sim *ghsim.Server, st *store.Store, m *policy.Machine, actors policy.Actors,
	appLogin string, burst []int, initial map[int]string) ([]string, clusterSummary) {
	t.Helper()
	state := sim.State()
	dels := sim.Deliveries()
	slices.SortStableFunc(dels, func(a, b ghsim.Delivery) int { return int(a.EventSeq) - int(b.EventSeq) })
	numberOf := map[string]int{}
	byNumber := map[int]ghsim.IssueState{}
	for _, is := range state.Issues {
		numberOf[is.ItemID] = is.Number
		byNumber[is.Number] = is
	}
	or := oracle.New(m, actors)
	for _, k := range burst {
		or.Start(byNumber[k].ItemID, initial[k])
	}
	var (
		problems []string
		sum      clusterSummary
		seen     = map[string]bool{}
		sender   = map[string]string{}
	)
	for _, d := range dels {
		if !d.Success() {
			sum.failedDeliveries++
		}
		if d.Event != "projects_v2_item" || seen[d.GUID] {
			continue
		}
		seen[d.GUID] = true
		fc, err := payload.ProjectsV2Item(d.Payload())
		if err != nil || fc.Ignore != "" || fc.Field != "Workflow State" {
			continue
		}
		num := numberOf[fc.ItemID]
		if !slices.Contains(burst, num) {
			continue
		}
		mv := oracle.Move{From: fc.From, To: fc.To, Actor: fc.Sender, Delivery: d.GUID, At: fc.At, App: fc.Sender == appLogin}
		if mv.App && fc.To != or.Legal[fc.ItemID] {
			problems = append(problems, fmt.Sprintf("#%d: the app wrote %s → %s, not a revert to its legal value (%s)", num, fc.From, fc.To, or.Legal[fc.ItemID]))
		}
		if !mv.App {
			sum.moves++
			sender[d.GUID] = fc.Sender
		}
		or.Step(fc.ItemID, mv)
	}
	sum.illegal = len(or.Violations)
	// A storm's summary, on one issue, explains refused moves of the issues it names.
	inSummaries := map[string]int{}
	for _, is := range byNumber {
		for _, cm := range is.Comments {
			if cm.Author == appLogin && strings.HasPrefix(cm.Body, marker.ViolationSummary) {
				byIssue, _ := marker.Explained(cm.Body, "")
				for _, ms := range byIssue {
					for _, mk := range ms {
						inSummaries[mk.Delivery]++
					}
				}
			}
		}
	}
	for _, k := range burst {
		is := byNumber[k]
		explained := map[string]int{}
		for _, mv := range or.Moves(is.ItemID) {
			if n := inSummaries[mv.Delivery]; n > 0 {
				explained[mv.Delivery] += n
			}
		}
		comments := map[string]int{} // actor → violation comments
		for _, cm := range is.Comments {
			if cm.Author != appLogin || !strings.Contains(cm.Body, marker.Violation) {
				continue
			}
			ms, err := marker.ParseTransitions(cm.Body)
			if err != nil {
				problems = append(problems, fmt.Sprintf("#%d: a violation comment's markers do not parse: %v", k, err))
			}
			who := map[string]bool{}
			for _, mk := range ms {
				explained[mk.Delivery]++
				who[mk.Actor] = true
				s, reported := sender[mk.Delivery]
				if reported && s != mk.Actor {
					problems = append(problems, fmt.Sprintf("#%d: the comment names %s for %s's move %s", k, mk.Actor, s, mk.Delivery))
				}
				// (A marker of no reported move is the oracle's difference below.)
				if reported && (!strings.Contains(cm.Body, fmt.Sprintf("`%s` (", mk.Actor)) || !strings.Contains(cm.Body, "to **"+mk.To+"**")) {
					problems = append(problems, fmt.Sprintf("#%d: the comment does not list %s's move to %s:\n%s", k, mk.Actor, mk.To, cm.Body))
				}
			}
			if len(who) != 1 {
				problems = append(problems, fmt.Sprintf("#%d: one violation comment lists the moves of %d actors: %v", k, len(who), who))
			}
			for a := range who {
				comments[a]++
			}
		}
		for a, n := range comments {
			if n != 1 {
				problems = append(problems, fmt.Sprintf("#%d: %d violation comments for %s's moves, want one", k, n, a))
			}
		}
		holder := ""
		rec, err := st.GetItem(ctx, is.ItemID)
		switch {
		case err == nil:
			holder = rec.LockHolder
		case !errors.Is(err, enforce.ErrNotFound):
			problems = append(problems, fmt.Sprintf("#%d: read its record: %v", k, err))
		}
		if diffs := or.Check(is.ItemID, is.Fields["Workflow State"], holder, explained); len(diffs) > 0 {
			var b strings.Builder
			fmt.Fprintf(&b, "#%d:\n  %s\n  true history:", k, strings.Join(diffs, "\n  "))
			for _, mv := range or.Moves(is.ItemID) {
				fmt.Fprintf(&b, "\n    %s %s: %s → %s (%s)", mv.At.Format("15:04:05"), mv.Actor, mv.From, mv.To, mv.Delivery)
			}
			b.WriteString("\n  its violation comments:")
			for _, cm := range is.Comments {
				if cm.Author != appLogin || !strings.Contains(cm.Body, marker.Violation) {
					continue
				}
				for _, l := range strings.Split(cm.Body, "\n") {
					if strings.HasPrefix(l, "- ") {
						b.WriteString("\n    " + l)
					}
				}
			}
			problems = append(problems, b.String())
		}
	}
	return problems, sum
}

// periodicRun is one run of a periodic job, as a replica's log shows it.
type periodicRun struct {
	attempt int
	at      time.Time
}

// periodicRuns finds the lines a periodic job's runs write (msg, with the job's name in the
// periodic field) in a replica's log.
func periodicRuns(nd *clusterNode, name, msg string) []periodicRun {
	var out []periodicRun
	for _, ln := range nd.log.Lines() {
		if !strings.Contains(ln.text, `"periodic":"`+name+`"`) {
			continue
		}
		var rec struct {
			Periodic string `json:"periodic"`
			Message  string `json:"message"`
			Attempt  int    `json:"attempt"`
		}
		if json.Unmarshal([]byte(ln.text), &rec) != nil || rec.Periodic != name || rec.Message != msg {
			continue
		}
		out = append(out, periodicRun{attempt: rec.Attempt, at: ln.at})
	}
	return out
}

// riverLeader is the River client that leads (schedules the periodic jobs) now.
func riverLeader(ctx context.Context, st *store.Store) (string, error) {
	var id string
	if err := st.DB().QueryRowContext(ctx, `SELECT leader_id FROM river_leader`).Scan(&id); err != nil {
		return "", fmt.Errorf("read river_leader: %w", err)
	}
	return id, nil
}

// nodeClient finds a node's River client id: every job whose work the node's log shows
// (a worker's line: its delivery and attempt) lists the client among those that worked on it
// (river_job.attempted_by), so the client is in all those lists. "" until only one is.
func nodeClient(ctx context.Context, st *store.Store, nd *clusterNode) (string, error) {
	var cands []string // nil: any
	tried := map[string]bool{}
	for _, ln := range nd.log.Lines() {
		var rec struct {
			Delivery string `json:"delivery"`
			Attempt  int    `json:"attempt"`
		}
		if json.Unmarshal([]byte(ln.text), &rec) != nil || rec.Delivery == "" || rec.Attempt == 0 || tried[rec.Delivery] {
			continue
		}
		tried[rec.Delivery] = true
		var list string
		err := st.DB().QueryRowContext(ctx, `SELECT array_to_string(attempted_by, ',') FROM river_job
			WHERE kind IN ('workflow_change', 'workflow_lifecycle') AND args->>'delivery_id' = $1`, rec.Delivery).Scan(&list)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			continue
		case err != nil:
			return "", fmt.Errorf("the job of delivery %s: %w", rec.Delivery, err)
		}
		clients := strings.Split(list, ",")
		if cands == nil {
			cands = clients
		} else {
			cands = slices.DeleteFunc(cands, func(c string) bool { return !slices.Contains(clients, c) })
		}
		if cands = slices.Compact(slices.Sorted(slices.Values(cands))); len(cands) == 1 {
			return cands[0], nil
		}
	}
	return "", nil
}

// stuckPeriodic reports whether a periodic job that started before the kill is still running:
// the killed replica's, which River's rescuer makes available again only after
// RescueStuckJobsAfter (until then the job is not scheduled again).
func stuckPeriodic(ctx context.Context, st *store.Store, name string, killedAt time.Time) (bool, error) {
	var n int
	err := st.DB().QueryRowContext(ctx, `SELECT count(*) FROM river_job WHERE kind = 'periodic' AND args->>'name' = $1
		AND state = 'running' AND attempted_at < $2`, name, killedAt).Scan(&n)
	return n > 0, err
}

func clusterToolText(res *mcp.CallToolResult) string {
	var text []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text = append(text, tc.Text)
		}
	}
	return strings.Join(text, "\n")
}
