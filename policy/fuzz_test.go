package policy

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func FuzzDecide(f *testing.F) {
	m := DefaultMachine()
	f.Add(sBacklog, sIP, "agent-1", 3, "agent-2", 1, 2, 0)
	f.Add("", sRN, "alice", 4, "", 0, 0, 5)
	f.Add(sRFP, sPIP, "x", 0, "", 0, 3, 0)
	f.Add("\xff", "Done\x00", "", 9, "Ω", -1, -1, -1)
	f.Fuzz(func(t *testing.T, from, to, actor string, kind int, holder string, nBlockers, nGroup, wip int) {
		c := Change{From: from, To: to, Actor: actor, ActorKind: ActorKind(kind), LockHolder: holder, WIPCount: wip}
		for i := 0; i < nBlockers%8; i++ {
			c.OpenBlockers = append(c.OpenBlockers, Member{Number: i, State: from})
		}
		for i := 0; i < nGroup%8; i++ {
			c.Group = append(c.Group, Member{Number: i, State: []string{to, from, "", sCancel}[i%4]})
		}
		d := m.Decide(c)
		if d.Reason == "" || d.Allowed == nil || d.Blocking == nil || d.RevertTo != from {
			t.Fatalf("malformed decision %+v", d)
		}
		if d.Verdict == Revert && (d.TakesLock || d.ReleasesLock) {
			t.Fatalf("revert touches locks: %+v", d)
		}
		// Gates may refuse a move the table allows, never allow one it refuses.
		k := ActorKind(kind)
		if k != ActorApp && k != ActorBypass && from != to && (from == "" || m.IsState(from)) {
			ck := m.Check(from, to, k)
			tableRule := d.Rule == RuleTransition || d.Rule == RuleHumansOnly || d.Rule == RuleUnknownState || d.Rule == RuleNotInitial
			if ck.Allowed == tableRule || (!ck.Allowed && d.Verdict == Allow) {
				t.Fatalf("Check %+v disagrees with Decide %+v", ck, d)
			}
		}
	})
}

func FuzzResolve(f *testing.F) {
	m := DefaultMachine()
	f.Add("research", "__LOCK__")
	f.Add("ralph_triage", "complete")
	f.Add("RALPH_", "____")
	f.Add("", "")
	f.Add("hero", "In Review")
	f.Fuzz(func(t *testing.T, cmd, arg string) {
		for _, res := range []func() (string, error){
			func() (string, error) { return m.ResolveIntent(cmd, arg) },
			func() (string, error) { return m.ResolveState(cmd, arg) },
		} {
			st, err := res()
			if err != nil {
				var r *Refusal
				if !errors.As(err, &r) || !strings.Contains(err.Error(), ". Recovery: ") || st != "" {
					t.Fatalf("bad refusal %q (%T), state %q", err, err, st)
				}
				for _, o := range r.Options {
					if !strings.Contains(r.Recovery, o) {
						t.Fatalf("option %q not in recovery %q", o, r.Recovery)
					}
				}
				continue
			}
			if !m.IsState(st) {
				t.Fatalf("resolved to non-state %q", st)
			}
		}
	})
}

func FuzzDetectPipeline(f *testing.F) {
	f.Add([]byte(`{"issues":[{"number":1,"title":"A","workflowState":"Research Needed","estimate":"S","subIssueCount":0}],"isGroup":true,"groupPrimary":1,"options":{"autoMode":true,"streamCount":2}}`))
	f.Add([]byte(`{"issues":[]}`))
	f.Add([]byte(`{"issues":[{"workflowState":"In Review"},{"workflowState":"Done"}],"options":{"autoMode":true,"streamCount":-9}}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var in PipelineInput
		if json.Unmarshal(data, &in) != nil {
			return
		}
		res := DetectPipeline(in)
		if res.Phase == "" || res.Reason == "" || res.RemainingPhases == nil || res.Convergence.Blocking == nil {
			t.Fatalf("malformed result %+v", res)
		}
		if res.Convergence.Met != (len(res.Convergence.Blocking) == 0) && res.Convergence.Met {
			t.Fatalf("met with blockers: %+v", res)
		}
		r := res.SuggestedRoster
		if r.Analyst < 0 || r.Analyst > 3 || r.Builder < 0 || r.Builder > 3 || r.Integrator < 0 || r.Integrator > 2 {
			t.Fatalf("roster out of range: %+v", r)
		}
		if _, err := json.Marshal(res); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzCompile feeds arbitrary specs (as JSON) to Compile and exercises the machine it returns.
func FuzzCompile(f *testing.F) {
	b, _ := json.Marshal(DefaultSpec())
	f.Add(b)
	f.Add([]byte(`{"field":"F","states":[{"name":"A","kind":"queue","next":["B"]},{"name":"B","kind":"terminal"}],"initial":["A"],"pipeline":["A","B"],"parent_gates":["B"],"automation":{"max_cascade_depth":1}}`))
	f.Add([]byte(`{"states":[{"name":"A","kind":"lock","next":["A","A"]}],"from_anywhere":[{"to":"A"}],"commands":[{"name":"RALPH_X","lock":"A"}],"intents":[{"name":"__L__","targets":{"*":"A","x":"Q"},"ambiguous":["x"]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var s Spec
		if json.Unmarshal(data, &s) != nil {
			return
		}
		m, ps := Compile(s)
		if (m == nil) == (len(ps) == 0) {
			t.Fatalf("machine %v with %d problems", m, len(ps))
		}
		for _, p := range ps {
			if p.Path == "" || p.Message == "" {
				t.Fatalf("empty problem %+v", p)
			}
		}
		if m == nil {
			return
		}
		states := append(m.States(), "", "nope")
		for _, from := range states {
			for _, to := range states {
				m.Check(from, to, ActorAgent)
				m.Decide(Change{From: from, To: to, ActorKind: ActorAgent, Group: []Member{{State: from}}, OpenBlockers: []Member{{State: to}}})
			}
			m.PlanCascade(from, []Member{{Number: 1, State: from}})
			m.ConvergenceTarget(from, []Member{{Number: 1, State: from}})
			m.CheckConvergence(from, []Member{{Number: 1, State: from}})
		}
		for _, c := range append(m.Commands(), "nope") {
			for _, it := range append(m.Intents(), "nope") {
				m.ResolveIntent(c, it)
			}
			for _, st := range states {
				m.ResolveState(c, st)
			}
		}
		m.Mermaid()
		m.Dot()
	})
}
