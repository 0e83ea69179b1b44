package policy

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// ownershipMap is the four roles of the state ownership map (docs/ENFORCEMENT.md, Worker roles).
func ownershipMap() map[string]RoleSpec {
	return map[string]RoleSpec{
		"analyst":    {Agents: []string{"analyst-*"}, Owns: []string{"Backlog", "Research Needed", "Research in Progress"}},
		"builder":    {Agents: []string{"builder-*"}, Owns: []string{"Ready for Plan", "Plan in Progress", "Plan in Review", "In Progress"}},
		"validator":  {Agents: []string{"validator-*"}, Owns: []string{"Plan in Review"}},
		"integrator": {Agents: []string{"integrator-*"}, Owns: []string{"In Review"}, Serialize: SerializeRepository},
	}
}

func compiledRoles(t *testing.T, mode string, specs map[string]RoleSpec) (*Machine, *Roles) {
	t.Helper()
	m := machineWith(t, func(s *Spec) { s.ReviewMode = mode })
	r, ps := CompileRoles(m, specs)
	if len(ps) > 0 {
		t.Fatalf("CompileRoles: %v", ps)
	}
	return m, r
}

func TestCompileRolesOwnership(t *testing.T) {
	tests := []struct {
		mode, state string
		owners      []string
	}{
		{ReviewSkip, "Backlog", []string{"analyst"}},
		{ReviewSkip, "Research in Progress", []string{"analyst"}},
		{ReviewSkip, "Plan in Review", []string{"builder", "validator"}},
		{ReviewAuto, "Plan in Review", []string{"builder", "validator"}},
		{ReviewInteractive, "Plan in Review", []string{"validator"}},
		{ReviewInteractive, "In Progress", []string{"builder"}},
		{ReviewSkip, "In Review", []string{"integrator"}},
		{ReviewSkip, "Human Needed", nil},
		{ReviewSkip, "Done", nil},
	}
	for _, tt := range tests {
		_, r := compiledRoles(t, tt.mode, ownershipMap())
		if got := r.Owners(tt.state); !slices.Equal(got, tt.owners) {
			t.Errorf("%s: owners of %s = %v, want %v", tt.mode, tt.state, got, tt.owners)
		}
	}
}

func TestRolesOfLogins(t *testing.T) {
	_, r := compiledRoles(t, ReviewSkip, ownershipMap())
	for login, want := range map[string]string{
		"analyst-1": "analyst", "Builder-7": "builder", "validator-x": "validator", "integrator-2": "integrator",
		"agent-1": "", "alice": "", "": "",
	} {
		if got := r.Of(login); got != want {
			t.Errorf("Of(%q) = %q, want %q", login, got, want)
		}
	}
	var none *Roles
	if none.Of("builder-1") != "" || none.Names() != nil || none.Serialized("integrator") {
		t.Error("a nil *Roles must mean no roles")
	}
	if !r.Serialized("integrator") || r.Serialized("builder") {
		t.Error("only the integrator serializes")
	}
}

func TestRoleCommandsDeclaredOrDerived(t *testing.T) {
	specs := ownershipMap()
	specs["validator"] = RoleSpec{Agents: []string{"validator-*"}, Owns: []string{"Plan in Review"}, Commands: []string{"ralph_review"}}
	_, r := compiledRoles(t, ReviewSkip, specs)
	for role, want := range map[string][]string{
		"analyst":    {"triage", "split", "research"},
		"builder":    {"plan", "plan_epic", "review", "impl", "pr"},
		"validator":  {"review"},
		"integrator": {"merge"},
	} {
		if got := r.Commands(role); !slices.Equal(got, want) {
			t.Errorf("commands of %s = %v, want %v", role, got, want)
		}
	}
}

func TestCompileRolesProblems(t *testing.T) {
	tests := []struct {
		name  string
		mode  string
		specs map[string]RoleSpec
		want  []string // "path: message fragment"
	}{
		{"no roles, skip", ReviewSkip, nil, nil},
		{"no roles, interactive", ReviewInteractive, nil, []string{"workflow.review_mode: interactive needs a reviewing role"}},
		{"interactive without a reviewing role", ReviewInteractive, map[string]RoleSpec{
			"builder": {Agents: []string{"b-*"}, Owns: []string{"Plan in Review", "In Progress"}},
		}, []string{"workflow.review_mode: interactive needs a reviewing role"}},
		{"unknown state with a suggestion", ReviewSkip, map[string]RoleSpec{
			"analyst": {Agents: []string{"a-*"}, Owns: []string{"Reserch Needed"}},
		}, []string{`actors.roles.analyst.owns[0]: unknown state "Reserch Needed" (did you mean "Research Needed"?)`}},
		{"no agents", ReviewSkip, map[string]RoleSpec{"analyst": {Owns: []string{"Backlog"}}}, []string{"actors.roles.analyst.agents: lists no agent"}},
		{"an agent in two roles", ReviewSkip, map[string]RoleSpec{
			"a": {Agents: []string{"bot-*"}, Owns: []string{"Backlog"}},
			"b": {Agents: []string{"Bot-*"}, Owns: []string{"In Progress"}},
		}, []string{`actors.roles.b.agents[0]: "Bot-*" is also an agent of the a role`}},
		{"bad pattern and empty", ReviewSkip, map[string]RoleSpec{
			"a": {Agents: []string{"", "x\\"}, Owns: []string{"Backlog"}},
		}, []string{"actors.roles.a.agents[0]: must not be empty", `actors.roles.a.agents[1]: invalid pattern`}},
		{"unknown command", ReviewSkip, map[string]RoleSpec{
			"a": {Agents: []string{"a-*"}, Owns: []string{"Backlog"}, Commands: []string{"deploy"}},
		}, []string{`actors.roles.a.commands[0]: unknown command "deploy"`}},
		{"serialize", ReviewSkip, map[string]RoleSpec{
			"a": {Agents: []string{"a-*"}, Owns: []string{"In Review"}, Serialize: "org"},
		}, []string{`actors.roles.a.serialize: must be "repository" or empty, got "org"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := machineWith(t, func(s *Spec) { s.ReviewMode = tt.mode })
			r, ps := CompileRoles(m, tt.specs)
			var got []string
			for _, p := range ps {
				got = append(got, p.String())
			}
			if len(got) != len(tt.want) {
				t.Fatalf("problems %q, want %d like %q", got, len(tt.want), tt.want)
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tt.want[i]) {
					t.Errorf("problem %d = %q, want it to start %q", i, got[i], tt.want[i])
				}
			}
			if len(ps) > 0 && r != nil {
				t.Error("roles returned along with problems")
			}
		})
	}
}

func TestReviewModeValidated(t *testing.T) {
	s := DefaultSpec()
	s.ReviewMode = "sometimes"
	if _, ps := Compile(s); len(ps) != 1 || ps[0].Path != "workflow.review_mode" {
		t.Fatalf("problems %v, want one at workflow.review_mode", ps)
	}
	if m := DefaultMachine(); m.ReviewMode() != ReviewSkip {
		t.Errorf("default review mode %q, want skip", m.ReviewMode())
	}
}

func TestUnownedStatesAndIdleRoles(t *testing.T) {
	specs := ownershipMap()
	delete(specs, "integrator")
	specs["idle"] = RoleSpec{Agents: []string{"idle-*"}}
	m, r := compiledRoles(t, ReviewSkip, specs)
	if got := r.Unowned(m); !slices.Equal(got, []string{"In Review"}) {
		t.Errorf("unowned %v, want [In Review]", got)
	}
	if got := r.Idle(); !slices.Equal(got, []string{"idle"}) {
		t.Errorf("idle %v, want [idle]", got)
	}
}

// The ownership rule, row by row (docs/ENFORCEMENT.md, Worker roles).
func TestDecideWithRoles(t *testing.T) {
	tests := []struct {
		name, mode       string
		from, to, actor  string
		kind             ActorKind
		role             string // declared (an MCP agent's role:)
		verdict          Verdict
		rule             Rule
		reason, recovery string // fragments
	}{
		{"builder out of Research Needed", ReviewSkip, "Research Needed", "Research in Progress", "builder-2", ActorAgent, "", Revert, RuleRole,
			"builder-2 (builder) may not move an item out of Research Needed: the analyst role owns it", "leave it to an agent of the analyst role, or escalate to Human Needed"},
		{"analyst out of Research Needed", ReviewSkip, "Research Needed", "Research in Progress", "analyst-1", ActorAgent, "", Allow, RuleLegal, "", ""},
		{"builder escalates from anywhere", ReviewSkip, "Research Needed", "Human Needed", "builder-2", ActorAgent, "", Allow, RuleLegal, "", ""},
		{"integrator escalates from anywhere", ReviewSkip, "In Progress", "Human Needed", "integrator-1", ActorAgent, "", Allow, RuleLegal, "", ""},
		{"agent without a role keeps the agent rules", ReviewSkip, "Research Needed", "Research in Progress", "agent-7", ActorAgent, "", Allow, RuleLegal, "", ""},
		{"a person is not bound by roles", ReviewInteractive, "Plan in Review", "In Progress", "alice", ActorHuman, "", Allow, RuleLegal, "", ""},
		{"interactive: builder out of review", ReviewInteractive, "Plan in Review", "In Progress", "builder-1", ActorAgent, "", Revert, RuleRole,
			"builder-1 (builder) may not move an item out of Plan in Review: in interactive review mode the validator role owns it", "leave it to an agent of the validator role"},
		{"interactive: validator out of review", ReviewInteractive, "Plan in Review", "In Progress", "validator-1", ActorAgent, "", Allow, RuleLegal, "", ""},
		{"auto: builder out of review", ReviewAuto, "Plan in Review", "In Progress", "builder-1", ActorAgent, "", Allow, RuleLegal, "", ""},
		{"skip: builder out of review", ReviewSkip, "Plan in Review", "In Progress", "builder-1", ActorAgent, "", Allow, RuleLegal, "", ""},
		{"declared role wins over the login", ReviewSkip, "Research Needed", "Research in Progress", "researcher-1", ActorAgent, "analyst", Allow, RuleLegal, "", ""},
		{"declared role is held to its states", ReviewSkip, "In Progress", "In Review", "researcher-1", ActorAgent, "analyst", Revert, RuleRole,
			"researcher-1 (analyst) may not move an item out of In Progress: the builder role owns it", ""},
		{"no state: placed only by the owner of the first state", ReviewSkip, "", "Backlog", "builder-1", ActorAgent, "", Revert, RuleRole,
			"builder-1 (builder) may not move an item into Backlog: the analyst role owns it", "leave it to an agent of the analyst role"},
		{"no state: analyst places it", ReviewSkip, "", "Backlog", "analyst-1", ActorAgent, "", Allow, RuleLegal, "", ""},
		{"the transition table comes first", ReviewSkip, "Backlog", "In Progress", "analyst-1", ActorAgent, "", Revert, RuleTransition, "", ""},
		{"an unknown author (no sender) has no role", ReviewSkip, "In Progress", "In Review", "", ActorAgent, "", Allow, RuleLegal, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, r := compiledRoles(t, tt.mode, ownershipMap())
			m = m.WithRoles(r)
			c := Change{From: tt.from, To: tt.to, Actor: tt.actor, ActorKind: tt.kind, Role: tt.role}
			d := m.Decide(c)
			if d.Verdict != tt.verdict || d.Rule != tt.rule || !strings.Contains(d.Reason, tt.reason) {
				t.Fatalf("got %v/%s %q, want %v/%s containing %q", d.Verdict, d.Rule, d.Reason, tt.verdict, tt.rule, tt.reason)
			}
			if d.Verdict == Revert && tt.rule == RuleRole {
				ref := m.RefusalFor(c, d)
				if !strings.Contains(ref.Recovery, tt.recovery) {
					t.Errorf("recovery %q, want it to contain %q", ref.Recovery, tt.recovery)
				}
				for _, s := range d.Allowed {
					if !m.isEscalated(s) && !m.roles.mayLeave(m.roleOf(c), tt.from, s) {
						t.Errorf("allowed lists %s, which the role may not reach", s)
					}
				}
			}
		})
	}
}

// An agent matching no role, and every person, bypass actor and the app, are decided exactly
// as with no roles configured, for every move.
func TestRolesLeaveOthersAlone(t *testing.T) {
	m := DefaultMachine()
	_, r := compiledRoles(t, ReviewInteractive, ownershipMap())
	withRoles := m.WithRoles(r)
	for _, from := range append([]string{""}, m.States()...) {
		for _, to := range m.States() {
			for _, c := range []Change{
				{From: from, To: to, Actor: "agent-1", ActorKind: ActorAgent},
				{From: from, To: to, Actor: "builder-1", ActorKind: ActorHuman},
				{From: from, To: to, Actor: "builder-1", ActorKind: ActorBypass},
				{From: from, To: to, Actor: "builder-1", ActorKind: ActorApp},
			} {
				kind := c.ActorKind
				a, b := m.Decide(c), withRoles.Decide(c)
				if a.Verdict != b.Verdict || a.Rule != b.Rule || a.Reason != b.Reason || !slices.Equal(a.Allowed, b.Allowed) {
					t.Fatalf("%s → %s by %v: %+v vs %+v", from, to, kind, a, b)
				}
			}
		}
	}
}

// The generated diagrams mark each state's owners; without roles they are unchanged.
func TestDiagramsMarkOwners(t *testing.T) {
	m, r := compiledRoles(t, ReviewInteractive, ownershipMap())
	plain := m.Mermaid()
	withRoles := m.WithRoles(r)
	g, d := withRoles.Mermaid(), withRoles.Dot()
	for _, want := range []string{`state "Research Needed · analyst" as research_needed`, `state "Plan in Review · validator" as plan_in_review`, `state "Done" as done`} {
		if !strings.Contains(g, want) {
			t.Errorf("mermaid lacks %q:\n%s", want, g)
		}
	}
	if !strings.Contains(d, `label="In Review\nintegrator"`) {
		t.Errorf("dot lacks the integrator's In Review:\n%s", d)
	}
	if strings.Contains(plain, "·") {
		t.Error("a machine without roles marks owners")
	}
}

// An integrator may not work on a second item of a repository while another is being
// integrated; escalation stays open, and other roles are not serialized.
func TestSerializedRole(t *testing.T) {
	m, r := compiledRoles(t, ReviewSkip, ownershipMap())
	m = m.WithRoles(r)
	busy := &Integration{Repo: "acme/app", Number: 12, Holder: "integrator-1"}
	c := Change{From: "In Review", To: "Done", Actor: "integrator-2", ActorKind: ActorAgent, Integrating: busy}
	d := m.Decide(c)
	if d.Verdict != Revert || d.Rule != RuleSerialized || !strings.Contains(d.Reason, "acme/app#12 is being integrated by integrator-1") {
		t.Fatalf("second integration: %+v", d)
	}
	if ref := m.RefusalFor(c, d); !strings.Contains(ref.Recovery, "wait until #12 is integrated (it leaves In Review), then retry") {
		t.Errorf("recovery %q", ref.Recovery)
	}
	c.To = "Human Needed"
	if d := m.Decide(c); d.Verdict != Allow {
		t.Errorf("escalation while busy: %+v", d)
	}
	c = Change{From: "In Review", To: "Done", Actor: "integrator-2", ActorKind: ActorAgent}
	if d := m.Decide(c); d.Verdict != Allow {
		t.Errorf("no integration under way: %+v", d)
	}
	c = Change{From: "In Progress", To: "In Review", Actor: "builder-1", ActorKind: ActorAgent, Integrating: busy}
	if d := m.Decide(c); d.Verdict != Allow {
		t.Errorf("a builder is not serialized: %+v", d)
	}
	if !m.SerializedFrom("integrator", "In Review") || m.SerializedFrom("integrator", "In Progress") || m.SerializedFrom("builder", "In Progress") {
		t.Error("SerializedFrom")
	}
}

// A compilation looks up the nearest state for the first 100 misspelt names a role owns,
// each once: a file misspelling thousands costs the states' length a hundred times.
func TestCompileRolesSuggestsForTheFirstNames(t *testing.T) {
	var owns []string
	for i := range maxSuggestions + 5 {
		owns = append(owns, fmt.Sprintf("Backlog%d", i))
	}
	owns = append(owns, "Backlog0")
	_, ps := CompileRoles(DefaultMachine(), map[string]RoleSpec{"analyst": {Agents: []string{"analyst-*"}, Owns: owns}})
	if len(ps) != len(owns) {
		t.Fatalf("%d problems, want %d", len(ps), len(owns))
	}
	for i, p := range ps {
		suggested := strings.HasSuffix(p.Message, `(did you mean "Backlog"?)`)
		if want := i < maxSuggestions || i == len(ps)-1; suggested != want {
			t.Errorf("%s: suggested %v, want %v", p, suggested, want)
		}
	}
}
