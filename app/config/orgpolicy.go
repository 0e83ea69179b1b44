package config

import (
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/ralph-gate/ralph-gate/policy"
)

// Policy says where each organization keeps its policy file, read when config.yml lists no
// projects (OrgPolicies).
type Policy struct {
	// Repository is the organization's repository that holds the file.
	Repository string `yaml:"repository"`
	// Path is the file's path from that repository's root.
	Path string `yaml:"path"`
}

// The defaults of the policy section.
const (
	DefaultPolicyRepository = ".github"
	DefaultPolicyPath       = "ralph-gate.yml"
)

// OrgPolicies reports whether each organization's policy is read from its own repository
// (policy.repository, policy.path): config.yml lists no projects.
func (c Config) OrgPolicies() bool { return len(c.Projects) == 0 }

// policyDefaults fills the policy section's empty keys.
func (c *Config) policyDefaults() {
	if c.Policy.Repository == "" {
		c.Policy.Repository = DefaultPolicyRepository
	}
	if c.Policy.Path == "" {
		c.Policy.Path = DefaultPolicyPath
	}
}

// repoName is a repository's name as GitHub allows it.
var repoName = regexp.MustCompile(`^[A-Za-z0-9._-]{1,100}$`)

// validatePolicy checks the policy section.
func (c Config) validatePolicy() Problems {
	var problems Problems
	if r := c.Policy.Repository; !repoName.MatchString(r) || r == "." || r == ".." {
		problems = append(problems, Problem{Path: "policy.repository",
			Message: fmt.Sprintf("must be the name of a repository of the organization (letters, digits, '.', '_', '-'; at most 100), got %q", r)})
	}
	if p := c.Policy.Path; !relativeFilePath(p) {
		problems = append(problems, Problem{Path: "policy.path",
			Message: fmt.Sprintf("must be a file's path from the repository's root, without \"..\" (such as ralph-gate.yml or .github/ralph-gate.yml), got %q", p)})
	}
	return problems
}

// relativeFilePath reports whether p names a file inside a repository: a relative path of
// non-empty elements, none "." or "..", without backslashes, control characters or spaces
// around it.
func relativeFilePath(p string) bool {
	if p == "" || len(p) > 1024 || strings.TrimSpace(p) != p || strings.ContainsAny(p, `\`) {
		return false
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	for _, el := range strings.Split(p, "/") {
		if el == "" || el == "." || el == ".." {
			return false
		}
	}
	return true
}

// orgFile is what an organization's policy file may hold: the sections of config.yml that
// are the organization's to decide.
type orgFile struct {
	Projects []Project   `yaml:"projects"`
	Workflow policy.Spec `yaml:"workflow"`
	Actors   Actors      `yaml:"actors"`
	MCP      orgMCP      `yaml:"mcp"`
}

// orgMCP is the part of the mcp section an organization gives: its agents, without tokens.
type orgMCP struct {
	Agents []orgAgent `yaml:"agents"`
}

// orgAgent is an agent as an organization gives it: what it may do, never its token.
type orgAgent struct {
	Name     string   `yaml:"name"`
	Commands []string `yaml:"commands"`
	Role     string   `yaml:"role"`
}

func orgShape() reflect.Type { return reflect.TypeOf(orgFile{}) }

// The messages of what an organization's policy file may not hold.
const (
	operatorKeyMessage = "is the operator's: it belongs in the deployment's config.yml, not in an organization's policy file " +
		"(which holds only projects, workflow, actors and mcp.agents)"
	tokenKeyMessage = "tokens stay in the deployment's secrets: the operator gives this agent's token in the deployment's " +
		"config.yml (mcp.agents[].token_env), never in an organization's policy file"
)

// ForOrganization returns the configuration that applies to organization org, whose policy
// file (policy.repository's policy.path) is data: this deployment's configuration with the
// file's sections in place of its own. The file may hold projects (each {number, mode}; owner
// may be left out and is org), workflow (extending the embedded default workflow exactly as
// config.yml's does; absent: the default workflow), actors (absent: the deployment's) and
// mcp.agents (name, commands, role: each merged by name onto the deployment's agent, which
// gives its token; absent: none). It must list at least one project.
// Every other key of config.yml is the operator's, and a problem.
//
// The file is decoded strictly and every problem is reported at once, by key path and with
// the same messages as validate gives for the same section of config.yml, each with the
// 1-based line of its key in the file (Problem.Line). On any problem the configuration is
// the zero Config.
//
// What a file can make it do is bounded (docs/CONFIGURATION.md, "Policy in the organization's
// repository"): a file over a bound (treeProblems, overBounds) is refused with that problem
// before its workflow, actors and agents are checked, and at most MaxProblems problems are
// listed, then one saying how many more there are. The work is in proportion to the file's
// size (TestForOrganizationScales).
func (c Config) ForOrganization(org string, data []byte) (Config, Problems) {
	if len(data) > MaxFileBytes {
		return Config{}, Problems{{Path: "(file)", Line: 1,
			Message: fmt.Sprintf("is larger than %d bytes: is it the policy file?", MaxFileBytes)}}
	}
	root, problems := parseDocument(data)
	if root == nil {
		return Config{}, withLines(problems, nil, data, nil)
	}
	doc := root.Content[0]
	if doc.Kind != yaml.MappingNode {
		return Config{}, withLines(Problems{mismatch(doc, "(file)", "a mapping ("+knownList(orgShape())+")")}, nil, data, nil)
	}
	refused, duplicates, more := treeProblems(doc)
	if len(refused) > 0 {
		return Config{}, listed(append(refused, duplicates...), more, root, data, nil)
	}
	problems = append(duplicates, takeOperatorKeys(doc, configShape(), orgShape(), "")...)
	var file orgFile
	decoded, origin := decodeStrict(root, data, orgShape(), &file, &file.Workflow)
	problems = append(problems, decoded...)
	if over := file.overBounds(); len(over) > 0 {
		return Config{}, listed(append(over, problems...), more, root, data, origin)
	}

	eff := c
	// An organization's agents are the ones its file names: none of the deployment's works for
	// it otherwise (an agent works for the one organization that names it).
	eff.MCP.Agents = nil
	eff.Workflow = file.Workflow
	if given(doc, "actors") {
		eff.Actors = file.Actors
	}
	var semantic Problems
	eff.Projects, semantic = orgProjects(org, file.Projects)
	agentsGiven := given(valueOf(doc, "mcp"), "agents")
	if agentsGiven {
		var ps Problems
		eff.MCP.Agents, ps = c.orgAgents(org, file.MCP.Agents)
		problems = append(problems, ps...)
	}
	for _, p := range eff.Validate() {
		if orgOwned(p.Path) {
			semantic = append(semantic, p)
		}
	}
	semantic = origin.kept(problems, semantic)
	if len(problems)+len(semantic) == 0 {
		return eff, nil
	}
	// Only the problems listed are placed in the file (their paths and lines looked up).
	all := append(problems, semantic...)
	if n := len(problems); n < MaxProblems {
		all = append(all[:n:n], origin.placed(semantic[:min(len(semantic), MaxProblems-n)])...)
	}
	return Config{}, listed(all, more+len(problems)+len(semantic)-len(all), root, data, origin)
}

// MaxProblems is how many problems of an organization's policy file ForOrganization lists;
// one more says how many it leaves out. The problems are in the file's order, mostly: the
// first ones are the ones to fix first.
const MaxProblems = 100

// maxProblemText bounds a listed problem's path and message, in bytes (the longest a policy
// file's problem has, a list of known keys, is about 250).
const maxProblemText = 1000

// listed are the first MaxProblems problems of an organization's file, each with the line of
// its key and its path and message cut to maxProblemText, then one that says how many more
// there are (more besides those in ps): a file of any size gets a short list.
func listed(ps Problems, more int, root *yaml.Node, data []byte, origin *workflowOrigin) Problems {
	more += max(len(ps)-MaxProblems, 0)
	out := withLines(ps[:min(len(ps), MaxProblems)], root, data, origin)
	for i, p := range out {
		out[i].Path, out[i].Message = cut(p.Path, maxProblemText), cut(p.Message, maxProblemText)
	}
	if more > 0 {
		out = append(out, Problem{Path: "(file)", Line: 1,
			Message: fmt.Sprintf("… and %d more not listed (only the first %d problems of a policy file are): fix these first", more, MaxProblems)})
	}
	return out
}

// cut is s cut to at most n bytes, at a character's start, with "…" when it was longer.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n - len("…")
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

// The bounds of an organization's policy file, each many times what the default workflow uses
// (docs/CONFIGURATION.md, "Policy in the organization's repository"; TestForOrganizationBounds):
// real organizations stay far below them, and no file makes validation, or the machine it
// compiles, cost more than they allow.
const (
	// MaxOrgNameLength bounds every key of the file and every name it gives: a state's, a
	// command's, an intent's, a login or pattern (the default's longest is 20 characters).
	MaxOrgNameLength = 100
	// MaxOrgDepth bounds how deep the file's values lie (workflow.states[0].next[0] is 5
	// levels deep, the deepest a valid file needs).
	MaxOrgDepth = 10
	// MaxOrgMappingKeys bounds the keys of each mapping (the largest a file needs is
	// gates.wip_limits, one key per state).
	MaxOrgMappingKeys = MaxOrgStates
	// MaxOrgProjects bounds the projects (the documentation's example lists 2).
	MaxOrgProjects = 1000
	// MaxOrgStates bounds the workflow's states, the default's included (it has 11): the
	// compiled machine holds a table of states × states.
	MaxOrgStates = 500
	// MaxOrgCommands bounds the workflow's commands (the default has 10), and as many intents
	// (7): problems list the commands.
	MaxOrgCommands = 100
	// MaxOrgStateReferences bounds how many times the workflow names a state, the default's
	// included (it names one 115 times): next, from_anywhere, humans_only, initial,
	// pipeline, parent_gates, the intents' targets, the commands' inputs, outputs and lock,
	// gates.wip_limits and the requirements' into.
	MaxOrgStateReferences = 10000
	// MaxOrgRoles bounds actors.roles (the documentation's example has 2, config.yml's comment 4).
	MaxOrgRoles = 100
	// MaxOrgActorEntries bounds the entries of actors: its agents and bypass, and each role's
	// agents, owns and commands.
	MaxOrgActorEntries = 1000
	// MaxOrgAgents bounds mcp.agents (the example names 1), and MaxOrgAgentCommands the
	// commands they list in all.
	MaxOrgAgents        = 100
	MaxOrgAgentCommands = 1000
)

// overBounds are the problems of a decoded file over a bound (its workflow merged with the
// default's).
func (f orgFile) overBounds() Problems {
	var problems Problems
	over := func(path string, n, bound int, what string) {
		if n > bound {
			problems = append(problems, Problem{Path: path, Message: fmt.Sprintf(
				"holds %d %s, more than the %d a policy file may: the file is refused without checking its workflow, actors and agents further", n, what, bound)})
		}
	}
	name := func(path, s string) {
		if n := utf8.RuneCountInString(s); n > MaxOrgNameLength {
			problems = append(problems, Problem{Path: path, Message: fmt.Sprintf(
				"is %d characters long, more than the %d a name in a policy file may be: the file is refused without checking it further", n, MaxOrgNameLength)})
		}
	}
	w := f.Workflow
	over("projects", len(f.Projects), MaxOrgProjects, "projects")
	over("workflow.states", len(w.States), MaxOrgStates, "states")
	over("workflow.commands", len(w.Commands), MaxOrgCommands, "commands")
	over("workflow.intents", len(w.Intents), MaxOrgCommands, "intents")
	over("workflow", stateReferences(w), MaxOrgStateReferences, "references to states")
	over("actors.roles", len(f.Actors.Roles), MaxOrgRoles, "roles")
	over("actors", actorEntries(f.Actors), MaxOrgActorEntries, "agents, bypass logins and roles' agents, owns and commands")
	over("mcp.agents", len(f.MCP.Agents), MaxOrgAgents, "agents")
	commands := 0
	for _, a := range f.MCP.Agents {
		commands += len(a.Commands)
	}
	over("mcp.agents", commands, MaxOrgAgentCommands, "commands of agents")
	if len(problems) > 0 {
		return problems // the names are looked at in a file of bounded size
	}
	for i, s := range w.States {
		name(fmt.Sprintf("workflow.states[%d].name", i), s.Name)
	}
	for i, c := range w.Commands {
		name(fmt.Sprintf("workflow.commands[%d].name", i), c.Name)
	}
	for i, it := range w.Intents {
		name(fmt.Sprintf("workflow.intents[%d].name", i), it.Name)
	}
	for i, a := range f.Actors.Agents {
		name(fmt.Sprintf("actors.agents[%d]", i), a)
	}
	for i, a := range f.Actors.Bypass {
		name(fmt.Sprintf("actors.bypass[%d]", i), a)
	}
	for _, role := range slices.Sorted(maps.Keys(f.Actors.Roles)) {
		for i, a := range f.Actors.Roles[role].Agents {
			name(fmt.Sprintf("actors.roles.%s.agents[%d]", role, i), a)
		}
	}
	return problems
}

// stateReferences counts the places a workflow names a state.
func stateReferences(w policy.Spec) int {
	n := len(w.FromAnywhere) + 2*len(w.HumansOnly) + len(w.Initial) + len(w.Pipeline) + len(w.ParentGates) + len(w.Gates.WIPLimits)
	for _, s := range w.States {
		n += len(s.Next)
	}
	for _, it := range w.Intents {
		n += len(it.Targets)
	}
	for _, c := range w.Commands {
		n += len(c.Inputs) + len(c.Outputs)
		if c.Lock != "" {
			n++
		}
	}
	for _, r := range w.Requirements {
		n += len(r.Into)
	}
	return n
}

// actorEntries counts the entries of the actors section.
func actorEntries(a Actors) int {
	n := len(a.Agents) + len(a.Bypass)
	for _, r := range a.Roles {
		n += len(r.Agents) + len(r.Owns) + len(r.Commands)
	}
	return n
}

// treeProblems walks a policy file's tree once, before anything else reads it, and refuses
// (refused) a file that nests deeper than MaxOrgDepth, holds a key longer than
// MaxOrgNameLength or a mapping of more than MaxOrgMappingKeys keys: every later walk, and
// every problem's key path, then costs little whatever the file. It takes out every key given
// twice in a mapping, keeping the first, each a problem (duplicates) worded as yaml.v3 words
// it (which, decoding, would compare every key of a mapping with every other, and drop the
// mapping whole). Only the first MaxProblems problems are made; more counts the others.
func treeProblems(doc *yaml.Node) (refused, duplicates Problems, more int) {
	var path []string // the steps to the node walked: ".key" or "[i]"
	at := func(step string) string {
		p := strings.TrimPrefix(strings.Join(path, "")+step, ".")
		if p == "" {
			return "(file)"
		}
		return p
	}
	report := func(to *Problems, step string, line int, format string, args ...any) {
		if len(refused)+len(duplicates) == MaxProblems {
			more++
			return
		}
		*to = append(*to, Problem{Path: at(step), Line: line, Message: fmt.Sprintf(format, args...)})
	}
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind != yaml.MappingNode && n.Kind != yaml.SequenceNode {
			return // an alias was walked at its anchor
		}
		if len(path) >= MaxOrgDepth && len(n.Content) > 0 {
			report(&refused, "", n.Line, "nests deeper than the %d levels a policy file may (workflow.states[0].next[0] is 5 levels deep): the file is refused without checking it further",
				MaxOrgDepth)
			return
		}
		if n.Kind == yaml.SequenceNode {
			for i, item := range n.Content {
				path = append(path, fmt.Sprintf("[%d]", i))
				walk(item)
				path = path[:len(path)-1]
			}
			return
		}
		if keys := len(n.Content) / 2; keys > MaxOrgMappingKeys {
			report(&refused, "", n.Line, "holds %d keys, more than the %d a mapping in a policy file may: the file is refused without checking it further",
				keys, MaxOrgMappingKeys)
			return
		}
		type key struct {
			kind  yaml.Kind
			value string
		}
		first := map[key]*yaml.Node{}
		kept := n.Content[:0:0]
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if n := utf8.RuneCountInString(k.Value); n > MaxOrgNameLength {
				report(&refused, "."+cut(k.Value, 40), k.Line, "is a key of %d characters, more than the %d a key or name in a policy file may be: the file is refused without checking it further",
					n, MaxOrgNameLength)
				continue
			}
			if f, dup := first[key{k.Kind, k.Value}]; dup {
				report(&duplicates, "."+k.Value, k.Line, "line %d: mapping key %#v already defined at line %d", k.Line, k.Value, f.Line)
				continue
			}
			first[key{k.Kind, k.Value}] = k
			kept = append(kept, k, v)
			path = append(path, "."+k.Value)
			walk(v)
			path = path[:len(path)-1]
		}
		n.Content = kept
	}
	walk(doc)
	return refused, duplicates, more
}

// OrgPolicyOwner is the owner the first of a policy file's projects names, "" when none names
// one (or the text is not a policy file): the organization whose file it is, for a check of
// the file outside the App (ralph-gate validate --org-policy).
func OrgPolicyOwner(data []byte) string {
	if len(data) > MaxFileBytes {
		return ""
	}
	root, problems := parseDocument(data)
	if len(problems) > 0 {
		return ""
	}
	projects := valueOf(root.Content[0], "projects")
	if projects == nil || projects.Kind != yaml.SequenceNode {
		return ""
	}
	for _, p := range projects.Content {
		if owner := valueOf(p, "owner"); owner != nil && owner.Kind == yaml.ScalarNode && strings.TrimSpace(owner.Value) != "" && !isNull(owner) {
			return strings.TrimSpace(owner.Value)
		}
	}
	return ""
}

// given reports whether a mapping gives key a value (null is none).
func given(n *yaml.Node, key string) bool {
	v := valueOf(n, key)
	return v != nil && !isNull(v)
}

// orgProjects are the projects an organization's file lists, each owned by org (the owner
// left out is org; another is a problem), at least one.
func orgProjects(org string, listed []Project) ([]Project, Problems) {
	var problems Problems
	if len(listed) == 0 {
		problems = append(problems, Problem{Path: "projects",
			Message: fmt.Sprintf("list at least one of %s's projects to enforce ({number}, or {number, mode})", org)})
	}
	out := make([]Project, len(listed))
	for i, p := range listed {
		switch {
		case strings.TrimSpace(p.Owner) == "":
			p.Owner = org
		case !strings.EqualFold(p.Owner, org):
			problems = append(problems, Problem{Path: fmt.Sprintf("projects[%d].owner", i),
				Message: fmt.Sprintf("%q is another organization: %s's policy file lists only %s's own projects (owner may be left out)", p.Owner, org, org)})
		}
		out[i] = p
	}
	return out, problems
}

// orgAgents merges each agent an organization gives onto the deployment's agent of that name,
// which keeps its token: the commands and role given replace the deployment's. An agent the
// deployment does not list is a problem (it has no token).
func (c Config) orgAgents(org string, agents []orgAgent) ([]MCPAgent, Problems) {
	var problems Problems
	out := make([]MCPAgent, len(agents))
	for i, a := range agents {
		d, ok := c.MCPAgentNamed(a.Name)
		switch {
		case !ok:
			d = MCPAgent{Name: a.Name}
			if a.Name != "" {
				problems = append(problems, Problem{Path: fmt.Sprintf("mcp.agents[%d].name", i),
					Message: fmt.Sprintf("agent %q is not in the deployment's config.yml: the operator adds it there under mcp.agents, with its token (token_env)", a.Name)})
			}
		case d.Org != "" && !strings.EqualFold(d.Org, org):
			problems = append(problems, Problem{Path: fmt.Sprintf("mcp.agents[%d].name", i),
				Message: fmt.Sprintf("agent %q works for another organization (the deployment's config.yml, mcp.agents[].org): name only your own agents", a.Name)})
		}
		d.Commands = slices.Clone(d.Commands)
		if a.Commands != nil {
			d.Commands = slices.Clone(a.Commands)
		}
		if a.Role != "" {
			d.Role = a.Role
		}
		out[i] = d
	}
	return out, problems
}

// agentTokenPath is the path of what validate says about an agent's token, which is the
// deployment's, never the organization's.
var agentTokenPath = regexp.MustCompile(`^mcp\.agents\[\d+\](\.token|\.token_env|\.token_sha256)?$`)

// orgOwned reports whether a problem of the effective configuration is about what the
// organization's file gave: its projects, workflow, actors and agents (not their tokens).
func orgOwned(path string) bool {
	if agentTokenPath.MatchString(path) {
		return false
	}
	for _, section := range []string{"projects", "workflow", "actors", "mcp.agents"} {
		if under(path, section) {
			return true
		}
	}
	return false
}

// under reports whether path is section or a path below it.
func under(path, section string) bool {
	rest, ok := strings.CutPrefix(path, section)
	return ok && (rest == "" || rest[0] == '.' || rest[0] == '[')
}

// takeOperatorKeys removes from a mapping of an organization's file every key that config.yml
// holds there (type full) but the organization's file may not (type org): each is a problem
// at its key path, or at every key path below it, with its line. Keys neither type knows are
// left for unknownKeys.
func takeOperatorKeys(n *yaml.Node, full, org reflect.Type, at string) Problems {
	var problems Problems
	switch {
	case full == org:
		return nil
	case full.Kind() == reflect.Slice && org.Kind() == reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return nil
		}
		for i, item := range n.Content {
			problems = append(problems, takeOperatorKeys(item, full.Elem(), org.Elem(), fmt.Sprintf("%s[%d]", at, i))...)
		}
		return problems
	case full.Kind() != reflect.Struct || org.Kind() != reflect.Struct || n.Kind != yaml.MappingNode:
		return nil
	}
	fullFields, orgFields := yamlFields(full), yamlFields(org)
	kept := n.Content[:0:0]
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		p := join(at, k.Value)
		ot, isOrg := orgFields[k.Value]
		ft, isConfig := fullFields[k.Value]
		switch {
		case isOrg:
			kept = append(kept, k, v)
			if isConfig {
				problems = append(problems, takeOperatorKeys(v, ft, ot, p)...)
			}
		case isConfig && full == reflect.TypeOf(MCPAgent{}):
			problems = append(problems, Problem{Path: p, Message: tokenKeyMessage, Line: k.Line})
		case isConfig:
			problems = append(problems, operatorKeys(k, v, ft, p)...)
		default:
			kept = append(kept, k, v)
		}
	}
	n.Content = kept
	return problems
}

// operatorKeys is the problem of an operator's key, at each key path the file gives below it
// that config.yml holds (of type t): the walk follows config.yml's keys, so that however deep
// the file nests under them, each problem is found once and its path stays short.
func operatorKeys(k, v *yaml.Node, t reflect.Type, at string) Problems {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if v.Kind != yaml.MappingNode || len(v.Content) == 0 || t.Kind() != reflect.Struct {
		return Problems{{Path: at, Message: operatorKeyMessage, Line: k.Line}}
	}
	fields := yamlFields(t)
	var problems Problems
	for i := 0; i+1 < len(v.Content); i += 2 {
		ck, cv := v.Content[i], v.Content[i+1]
		p := join(at, ck.Value)
		if ft, ok := fields[ck.Value]; ok {
			problems = append(problems, operatorKeys(ck, cv, ft, p)...)
		} else {
			problems = append(problems, Problem{Path: p, Message: operatorKeyMessage, Line: ck.Line})
		}
	}
	return problems
}

// withLines gives every problem of an organization's file the line of its key (see lineFor).
// root is the parsed file, nil when the text did not parse.
func withLines(problems Problems, root *yaml.Node, data []byte, origin *workflowOrigin) Problems {
	var doc *yaml.Node
	if root != nil {
		// The tree was changed as it was decoded (keys taken out, the workflow merged): the
		// lines are those of the text as written.
		var fresh yaml.Node
		if err := yaml.Unmarshal(data, &fresh); err == nil && len(fresh.Content) > 0 {
			doc = fresh.Content[0]
		}
	}
	last := max(textLines(data), 1)
	out := make(Problems, len(problems))
	for i, p := range problems {
		if p.Line == 0 {
			p.Line = lineFor(doc, p, origin)
		}
		p.Line = min(max(p.Line, 1), last)
		out[i] = p
	}
	return out
}

// lineFor is the line of a problem's key in the file: the line a YAML error names, else the
// line of the key its path leads to, else of the nearest key above it that the file holds.
// A problem of the merged workflow is placed where the file gave the value, and one on a
// value the default gave (not in the file) at the workflow key.
func lineFor(doc *yaml.Node, p Problem, origin *workflowOrigin) int {
	if m := yamlLine.FindStringSubmatch(p.Message); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	if doc == nil || p.Path == "(file)" {
		return 1
	}
	if !under(p.Path, "workflow") {
		line, _, _ := walkPath(doc, p.Path)
		return line
	}
	workflowLine, _, _ := walkPath(doc, "workflow")
	at, ok := origin.filePath(p.Path)
	if !ok {
		return workflowLine
	}
	line, _, atIndex := walkPath(doc, at)
	if atIndex {
		// The file's list is shorter: the item is the default's.
		return workflowLine
	}
	return line
}

// filePath is the path in the file of a value of the merged workflow; false when the value
// is the default's (the file's item at that place in the list went elsewhere).
func (o *workflowOrigin) filePath(p string) (string, bool) {
	if at, ok := o.toFile(p); ok {
		return at, true
	}
	return p, o.toMerged(p) == p
}

// LineOf is the 1-based line of the key at a key path (workflow.states[3].next[1],
// actors.roles.reviewer.agents[0]) in a YAML file, or of the nearest key above it that the
// file holds; 0 when the text is not YAML or holds no document.
func LineOf(data []byte, path string) int {
	if len(data) > MaxFileBytes {
		return 0
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil || len(root.Content) == 0 {
		return 0
	}
	line, _, _ := walkPath(root.Content[0], path)
	return line
}

// walkPath follows a key path from a document's top node: the line of the deepest key (or
// list item) found, whether the whole path was, and whether the walk stopped at a list index
// the file does not have. A key may hold dots: the longest key that fits is taken.
func walkPath(n *yaml.Node, path string) (line int, found, atIndex bool) {
	line = n.Line
	rest := path
	if !strings.HasPrefix(rest, "[") {
		rest = "." + rest
	}
	for rest != "" {
		switch {
		case rest[0] == '[':
			end := strings.IndexByte(rest, ']')
			if end < 0 {
				return line, false, false
			}
			i, err := strconv.Atoi(rest[1:end])
			if err != nil || n.Kind != yaml.SequenceNode || i < 0 || i >= len(n.Content) {
				return line, false, n.Kind == yaml.SequenceNode
			}
			n, rest = n.Content[i], rest[end+1:]
			line = n.Line
		case rest[0] == '.' && n.Kind == yaml.MappingNode:
			rest = rest[1:]
			best := -1
			for j := 0; j+1 < len(n.Content); j += 2 {
				k := n.Content[j].Value
				fits := strings.HasPrefix(rest, k) && (len(rest) == len(k) || rest[len(k)] == '.' || rest[len(k)] == '[')
				if fits && (best < 0 || len(k) > len(n.Content[best].Value)) {
					best = j
				}
			}
			if best < 0 {
				return line, false, false
			}
			line, rest, n = n.Content[best].Line, rest[len(n.Content[best].Value):], n.Content[best+1]
		default:
			return line, false, false
		}
	}
	return line, true, false
}

// orgPolicyDoc is docs/CONFIGURATION.md's part on the organizations' policy files (after the
// policy section's keys).
const orgPolicyDoc = `### Policy in the organization's repository

When config.yml lists no ` + "`projects`" + `, ` + "`serve`" + ` reads each organization's policy from that
organization's repository: the file ` + "`policy.path`" + ` (` + "`ralph-gate.yml`" + `) at the root of
` + "`policy.repository`" + ` (` + "`.github`" + `). The organization decides its projects and how they are
enforced; the operator keeps the deployment. A ` + "`.github/ralph-gate.yml`" + `:

` + "```yaml" + `
projects:
  - number: 1
  - {number: 2, mode: evaluate}
workflow:
  review_mode: interactive
actors:
  roles:
    builder: {agents: ["builder-*"], owns: [Ready for Plan, Plan in Progress, In Progress]}
    validator: {agents: ["validator-*"], owns: [Plan in Review]}
mcp:
  agents:
    - {name: builder-1, role: builder}
` + "```" + `

| the organization's file holds | the deployment's config.yml keeps |
|---|---|
| ` + "`projects`" + `: at least one, each ` + "`{number, mode}`" + ` (` + "`owner`" + ` may be left out and is the organization; another organization is a problem) | ` + "`server`, `github`, `store`, `enforcement`, `reconcile`, `redelivery`, `health`, `logging`, `ui`, `policy`" + ` |
| ` + "`workflow`" + `: extends the embedded default workflow exactly as config.yml's does (config.yml's own ` + "`workflow`" + ` does not apply to the organizations); absent, the default workflow | ` + "`mcp.default_repo`, `mcp.limits`" + ` |
| ` + "`actors`" + `: replaces the deployment's whole section; absent, the deployment's | every agent's token (` + "`mcp.agents[].token_env`" + `, ` + "`token_sha256`" + `, ` + "`token`" + `) |
| ` + "`mcp.agents`" + `: ` + "`name`, `commands`, `role`" + `; each is merged by name onto the deployment's agent of that name, which gives its token (the commands and role given replace its own); absent, none: an agent works for the organizations whose files name it | |

The file is decoded as strictly as config.yml. Every problem is reported at once (up to 100,
below), by key path, with the message ` + "`ralph-gate validate`" + ` gives for the same section of config.yml
and the line of its key in the file (a value of the default workflow that the file's change broke: the line of
` + "`workflow`" + `). An operator's key is a problem at its path
(` + "`server.port: is the operator's: it belongs in the deployment's config.yml, …`" + `), and so is a token
(` + "`mcp.agents[0].token_env: tokens stay in the deployment's secrets: …`" + `), an agent the deployment does
not list (the operator adds it under ` + "`mcp.agents`" + `, with its token) and a file of more than 1 MiB.

**Checking a file before pushing it.** ` + "`ralph-gate validate --org-policy .github/ralph-gate.yml`" + `
checks a file exactly as the push's check run does, against the deployment's configuration
(` + "`--config`" + `, checked as a file; without it, the embedded config.yml): each problem by key path with its line
(` + "`workflow.review_mod (line 3): unknown key …`" + `), exit code 1 on any, 0 for a valid file. The
organization is the owner the file's projects name, or ` + "`--org LOGIN`" + `, which a file whose projects
leave ` + "`owner`" + ` out needs. ` + "`--json`" + ` gives each problem its ` + "`line`" + `.
` + "`cmd/ralph-gate.TestValidateOrgPolicy`" + ` proves it.

**What a file may hold.** Anyone who may push to the organization's repository writes the file,
so what it can make the App do is bounded, each bound many times what the default workflow uses.
A file past a bound is refused with that problem, at its key path and line, before its workflow,
actors and agents are checked further:

| what | at most | the default |
|---|---|---|
| the file | 1 MiB | config.yml is about 15 KiB |
| ` + "`projects`" + ` | 1000 | the example above lists 2 |
| ` + "`workflow.states`" + `, the default's included | 500 | 11 |
| ` + "`workflow.commands`" + `; ` + "`workflow.intents`" + ` | 100; 100 | 10; 7 |
| the times the workflow names a state, the default's included: ` + "`next`, `from_anywhere`, `humans_only`, `initial`, `pipeline`, `parent_gates`" + `, the intents' ` + "`targets`" + `, the commands' ` + "`inputs`, `outputs`" + ` and ` + "`lock`" + `, ` + "`gates.wip_limits`" + `, the requirements' ` + "`into`" + ` | 10000 | 115 |
| ` + "`actors.roles`" + ` | 100 | 2 in the example above |
| the entries of ` + "`actors`" + `: ` + "`agents`, `bypass`" + `, each role's ` + "`agents`, `owns`" + ` and ` + "`commands`" + ` | 1000 | 2 |
| ` + "`mcp.agents`" + `; the commands they list, in all | 100; 1000 | 1; 1 in the example above |
| the characters of a key, or of a name: a state's, a command's, an intent's, a login or pattern | 100 | 20 |
| the keys of one mapping | 500 | 14 (` + "`workflow`" + `) |
| how deep a value lies | 10 levels | 5 (` + "`workflow.states[0].next[0]`" + `) |

A key given twice in one mapping is a problem, and the first is kept. At most 100 problems are
listed, the file's first, then one that says how many more there are
(` + "`(file): … and 412 more not listed`" + `); a problem's path and message are cut at 1000 bytes. The time
a file takes to check grows in proportion to its size, up to the 1 MiB it may hold.
` + "`TestForOrganizationBounds`" + ` (app/config) proves each bound, at it and past it, and
` + "`TestForOrganizationScales`" + ` that files of every worst-case shape (states that do not exist named by
the thousand, as many states as references, deep nesting, long keys, unknown or repeated keys,
aliases), from 32 KB to 600 KB, get at most 101 problems for work in proportion to their size;
` + "`BenchmarkForOrganization`" + ` measures them.

` + `**When it is read, and what is in force.** Only a ` + "`" + `push` + "`" + ` to the default branch changes an
organization's policy; a restart or an installation event puts the kept policy in force again,
never the file at the head by itself. There is one exception, for an organization ralph-gate
has never recorded anything of and whose ` + "`" + `policy_admins` + "`" + ` are not named: its first policy is the
file at the head when ` + "`" + `serve` + "`" + ` first reads it (at start, or when the App is installed there),
and the person who installs the App vouches for it. With policy admins named, the first policy
comes from a policy admin's push. While an organization has no policy in force, every push to
the default branch is read (its pusher vouches for the file as it is); once one is, only a push
that changes the file is. A push's webhook is answered at once and the file checked by a job of
its own queue: its own workers, so checking one organization's file never holds a worker the
boards' changes need, and one organization's pushes are taken in one at a time, a push that
finds another of its organization under way waiting off the worker. Each push gets a check run on its commit, named ` + "`" + `ralph-gate policy` + "`" + `, and is recorded with
its pusher (` + "`" + `ralph-gate audit --policy` + "`" + `):

| the push | check run | the policy in force |
|---|---|---|
| valid, newer than the policy in force's commit, pushed by someone who may change the policy (below) | ` + "`" + `success` + "`" + `: what it changes, and what it would have decided differently (below; on a public repository, the counts alone) | is the pushed file, from the next second on |
| pushed by someone who may not change the policy | ` + "`" + `failure` + "`" + `: who may change it and how, what it would have changed | stays |
| with problems | ` + "`" + `failure` + "`" + `: every problem, an annotation on each problem's line | stays |
| older than the policy in force's commit (a late delivery) | ` + "`" + `success` + "`" + ` (` + "`" + `failure` + "`" + ` listing the problems of an invalid file): a newer commit's policy is in force | stays |
| newer, the file the policy in force | ` + "`" + `success` + "`" + `: unchanged | stays; the newer commit is now its commit |

Pushes are ordered by their commits (GitHub compares the push's commit with the policy in
force's) before anything else, not by when their webhooks arrive: a late push never replaces a
newer policy, a change and its quick revert leave the revert in force, and a push that does not
touch the file (a README right after a policy change) hides none that did. A commit that has
diverged from the policy in force's (a force-push rewrote the branch) is newer only while the
branch still holds it. A force-push, a new branch, or a push of more commits than its webhook
lists is read whatever it lists. A pusher vouches for the whole file at their commit: a refused
change left on the branch goes in force with the next change a policy admin pushes unless it is
reverted (the refused check run says so, and the admin's check run lists every change against
the policy in force). A change made before a policy was
put in force is judged by the policy before it, however late its report (docs/ENFORCEMENT.md
"Policy per organization"). The last valid file is kept in the store with its commit and
pusher, so a restart enforces it before GitHub is read again. Replicas on one PostgreSQL store
share it: the replica a push reaches reads the file and puts it in force only while the store
still holds the policy it compared with, and the others put the same policy in force, from the
same time, when the store notifies them. The projects a policy brings into force are reconciled
at once. An organization with no valid file has none of its projects enforced; a suspended
installation's projects are not enforced until it is unsuspended; an uninstalled organization's
policy is forgotten (its record of changes stays). ` + "`" + `ralph-gate doctor` + "`" + ` checks that every installation grants Contents:
read (the file) and Checks: write (the check run), and says which commit's policy is in force
for each organization, whether a newer push was refused, or that there is no policy file yet.

### Who may change an organization's policy

The file that limits the agents lives in a repository they can push to, so who pushed a change
decides whether it counts. config.yml's ` + "`" + `organizations` + "`" + ` (the operator's, outside every
organization's repository) names the organizations this deployment serves and, for each, its
` + "`" + `policy_admins` + "`" + `: logins, or teams of the organization written ` + "`" + `@org/team-slug` + "`" + `.

` + "`" + `` + "`" + `` + "`" + `yaml
organizations:
  - login: acme
    policy_admins: [alice, "@acme/platform"]
` + "`" + `` + "`" + `` + "`" + `

- A push changes the policy only when its pusher (for a merged pull request, the person who
  merged it) is one of the organization's ` + "`" + `policy_admins` + "`" + ` (a team's active members; reading them
  needs the Members permission, read: without it the push is refused, saying so), or, when none
  are named, a person who is neither an agent nor a bot by the policy in force. A bot never
  changes it.
- Anyone else's push gets a failing check run that says who may change the policy and how (a
  policy admin pushes the change, or merges a pull request that makes it) and what the change
  would have changed; it is recorded as refused with its pusher and counted in
  ` + "`" + `ralph_gate_policy_changes_total{outcome="refused_pusher"}` + "`" + ` (docs/OPERATIONS.md alerts on it).
- With ` + "`" + `organizations` + "`" + ` listed, an organization it does not list is not served: its installation
  and pushes are ignored (logged once), its policy is never read, and no agent or page of a
  served organization is affected. Empty, every organization that installs the App is served;
  ` + "`" + `ralph-gate doctor` + "`" + ` warns when such an App is installed beyond its owner's organization.
- An agent works for one organization: a file naming an agent that another organization's policy
  in force names is refused at that agent, never switched off everywhere.

` + "`" + `organizations` + "`" + ` is only for policies read from the organizations (config.yml lists no
` + "`" + `projects` + "`" + `). ` + "`" + `app/config.TestOrganizations` + "`" + `, ` + "`" + `app.TestMayChangePolicy` + "`" + ` and
` + "`" + `sandbox.TestOnlyPolicyAdminsChangeThePolicy` + "`" + ` (an agent's bypass refused and its next illegal move
reverted; a policy admin's change followed at once by an agent's README push in force within
seconds, its check run saying what it would decide differently) prove it, with
` + "`" + `sandbox.TestStrangerOrganizationIsNotServed` + "`" + `, ` + "`" + `sandbox.TestOrgPolicyLatePushNeverReplacesANewer` + "`" + `,
` + "`" + `sandbox.TestPolicyChangesInTheOrderOfTheirCommits` + "`" + ` and
` + "`" + `sandbox.TestFirstPolicyPushReconcilesItsProjects` + "`" + ` (an agent's first file refused, and still out
of force after a restart).

### Backtesting a change

Before a change of the policy file is put in force, ` + "`" + `ralph-gate policy backtest --org acme
--file ralph-gate.yml --config config.yml` + "`" + ` shows what it would decide differently, and the push's
check run shows the same. It replays the organization's moves recorded in the last 7 days
(` + "`" + `--days` + "`" + `) under the proposed file and compares each with what was decided: whether the file
enforces the move's project and in which mode, the actor's kind under its ` + "`" + `actors` + "`" + `, the
transition table and the worker roles (for a handoff, also whether the file names the agent and
lets it use the command). Gates (lock ownership, blockers, convergence, WIP limits, serialized
work) and requirements depend on other items and on fields as they were, which the audit log
does not hold: their outcome is kept as recorded, and the output counts them; closes, reopens and
merges are kept as recorded but for their project's enforcement and mode. The policy in force is
the one the store keeps for the organization; the command only reads the store (` + "`" + `--driver` + "`" + `,
` + "`" + `--dsn` + "`" + `, or the store of ` + "`" + `--config` + "`" + `). A file with problems prints them by key path and line and
exits 1, as ` + "`" + `ralph-gate validate` + "`" + ` does. The output groups the differences by recorded and
proposed verdict and rule, and by actor, lists the newest, and names the projects that would
start or stop being enforced or change mode (` + "`" + `--json` + "`" + ` for scripts); at most the newest 50,000
moves are replayed, and it says so when more were recorded. A check run on a public repository
is public: there it gives the counts alone, without issues or actors. ` + "`" + `app.TestBacktest` + "`" + ` proves each part
(a bypass added for an agent, a project removed, a mode changed to evaluate, an unchanged policy,
gate and requirement refusals kept as recorded), ` + "`" + `app.TestBacktestMarkdownEscapes` + "`" + ` that logins,
states and titles are shown as written and as nothing else, ` + "`" + `store.TestBacktestOrgAudit` + "`" + ` the
query, and ` + "`" + `cmd/ralph-gate.TestPolicyBacktest` + "`" + ` the command.

### The organizations' boards and agents

The board health pages (` + "`" + `ui.enabled` + "`" + `) show each signed-in person the projects of the
organizations they belong to, among those whose policy is in force (none yet: nobody signs in).

An MCP agent works for the organization whose file names it under ` + "`" + `mcp.agents` + "`" + `: its calls are
held to that organization's workflow and act on its projects only. An agent no organization
names works for none, and an organization cannot take an agent the operator gave another
(` + "`" + `mcp.agents[].org` + "`" + `) or one another organization's policy in force names: name each agent in one
organization's file.

` + `` + "`TestForOrganization`" + ` (app/config) proves each of these rules, ` + "`FuzzForOrganization`" + ` that no file makes
it fail without a problem, and ` + "`TestModesAskOnlyForWhatTheyUse`" + ` that serve needs no ` + "`projects`" + ` while
` + "`mcp --stdio`" + ` (which reads no policy file) still does.

` + `` + "`" + `sandbox.TestOrgPolicyEndToEnd` + "`" + ` (SQLite and PostgreSQL) proves the push: enforced at once, a
pushed ` + "`" + `mode: evaluate` + "`" + ` in force with a passing check run, an invalid push refused with a
failing one naming ` + "`" + `projects[0].mode` + "`" + ` on line 3, and the previous policy in force after a
restart; ` + "`" + `sandbox.TestOrgPolicyReplicas` + "`" + ` the replicas; ` + "`" + `sandbox.TestTwoOrganizationsEndToEnd` + "`" + `
two organizations on one deployment, each held to its own policy, written with its own
installation, its agents working for it only; ` + "`" + `cmd/ralph-gate.TestDoctorSaysWhichPolicyIsInForce` + "`" + `
doctor's lines.
`
