package bench

import (
	"fmt"
	"strings"
)

// The seeded world: one organization, one enforced project, people and agents, and ranges of
// issues reserved for each phase so that no phase disturbs another.
const (
	org        = "bench"
	repo       = "app"
	webhookKey = "bench-e728adab4a57aa11c77ffe9f"
	field      = "Workflow State"
)

var (
	humans = []string{"alice", "bob"}
	agents = []string{"agent-1", "agent-2", "agent-3", "agent-4", "agent-5", "agent-6", "agent-7", "agent-8"}
)

func token(login string) string { return login + "-token" }

// layout says which issue numbers each phase uses.
type layout struct {
	warmup      []int // a legal and an illegal move warm the app's caches before anything is counted
	legal       []int // leaves in Research Needed (a person moves them to Ready for Plan)
	illegal     []int // leaves in Backlog (an agent moves them to In Progress: refused)
	cascade     int   // a parent in Plan in Progress with cascadeN children in Ready for Plan
	cascadeN    int
	converge    int   // a parent in Research Needed …
	convergeKid []int // … whose children in Research Needed converge it when the last is ready
	latency     []int // leaves in Backlog for the revert-latency samples
	correct     []int // leaves in Backlog for the time-to-correct samples
	ack         []int // leaves in Ready for Plan the acknowledgement phase sends webhooks about
	burst       []int // leaves in Backlog for the burst
}

type seedBuilder struct {
	b    strings.Builder
	next int
}

func newSeedBuilder() *seedBuilder {
	s := &seedBuilder{next: 1}
	fmt.Fprintf(&s.b, "org: %s\napp: {id: 7001, slug: ralph-gate, installation_id: 8002, webhook_secret: %s}\nusers:\n", org, webhookKey)
	for _, u := range append(append([]string{}, humans...), agents...) {
		fmt.Fprintf(&s.b, "  - {login: %s, token: %s}\n", u, token(u))
	}
	fmt.Fprintf(&s.b, `repos: [%s]
projects:
  - number: 1
    title: Bench
    fields:
      %s: [Backlog, Research Needed, Research in Progress, Ready for Plan, Plan in Progress,
           Plan in Review, In Progress, In Review, Done, Canceled, Human Needed]
      Estimate: [XS, S, M, L, XL]
      Priority: [P0, P1, P2, P3]
issues:
`, repo, field)
	return s
}

func (s *seedBuilder) issue(state string, parent int) int {
	n := s.next
	s.next++
	fmt.Fprintf(&s.b, "  - {repo: %s, number: %d, title: \"Bench %d\", project: 1", repo, n, n)
	if parent > 0 {
		fmt.Fprintf(&s.b, ", parent: %d", parent)
	}
	fmt.Fprintf(&s.b, ", fields: {%s: %s, Estimate: S}}\n", field, state)
	return n
}

func (s *seedBuilder) issues(count int, state string) []int {
	out := make([]int, count)
	for i := range out {
		out[i] = s.issue(state, 0)
	}
	return out
}

func (s *seedBuilder) bytes() []byte { return []byte(s.b.String()) }

// mainSeed builds the world of every phase but reconciliation.
func mainSeed(o Options) ([]byte, layout) {
	s := newSeedBuilder()
	var l layout
	l.warmup = []int{s.issue("Research Needed", 0), s.issue("Backlog", 0)}
	l.legal = s.issues(o.CostRepeats, "Research Needed")
	l.illegal = s.issues(o.CostRepeats, "Backlog")
	l.cascade, l.cascadeN = s.issue("Plan in Progress", 0), o.CascadeN
	for range o.CascadeN {
		s.issue("Ready for Plan", l.cascade)
	}
	l.converge = s.issue("Research Needed", 0)
	for range 3 {
		l.convergeKid = append(l.convergeKid, s.issue("Research Needed", l.converge))
	}
	l.latency = s.issues(o.LatencySamples, "Backlog")
	l.correct = s.issues(o.CorrectSamples, "Backlog")
	l.ack = s.issues(o.AckWebhooks, "Ready for Plan")
	l.burst = s.issues(o.BurstEvents, "Backlog")
	return s.bytes(), l
}

// reconcileSeed builds a board of n leaf items spread over the queue states.
func reconcileSeed(n int) []byte {
	s := newSeedBuilder()
	states := []string{"Backlog", "Research Needed", "Ready for Plan", "Plan in Review", "In Review", "Done"}
	for i := range n {
		s.issue(states[i%len(states)], 0)
	}
	return s.bytes()
}
