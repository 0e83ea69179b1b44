package config

import (
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

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
	problems = takeOperatorKeys(doc, configShape(), orgShape(), "")
	var file orgFile
	decoded, origin := decodeStrict(root, data, orgShape(), &file, &file.Workflow)
	problems = append(problems, decoded...)

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
	problems = append(problems, origin.unshadowed(problems, semantic)...)
	if len(problems) > 0 {
		return Config{}, withLines(problems, root, data, origin)
	}
	return eff, nil
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
			problems = append(problems, operatorKeys(k, v, p)...)
		default:
			kept = append(kept, k, v)
		}
	}
	n.Content = kept
	return problems
}

// operatorKeys is the problem of an operator's key, at each key path the file gives below it.
func operatorKeys(k, v *yaml.Node, at string) Problems {
	if v.Kind != yaml.MappingNode || len(v.Content) == 0 {
		return Problems{{Path: at, Message: operatorKeyMessage, Line: k.Line}}
	}
	var problems Problems
	for i := 0; i+1 < len(v.Content); i += 2 {
		problems = append(problems, operatorKeys(v.Content[i], v.Content[i+1], join(at, v.Content[i].Value))...)
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

The file is decoded as strictly as config.yml. Every problem is reported at once, by key path,
with the message ` + "`ralph-gate validate`" + ` gives for the same section of config.yml and the line of its
key in the file (a value of the default workflow that the file's change broke: the line of
` + "`workflow`" + `). An operator's key is a problem at its path
(` + "`server.port: is the operator's: it belongs in the deployment's config.yml, …`" + `), and so is a token
(` + "`mcp.agents[0].token_env: tokens stay in the deployment's secrets: …`" + `), an agent the deployment does
not list (the operator adds it under ` + "`mcp.agents`" + `, with its token) and a file of more than 1 MiB.

` + `**When it is read, and what is in force.** ` + "`" + `serve` + "`" + ` reads every installed organization's file at
start (the head of the repository's default branch), when the App is installed, and on every
` + "`" + `push` + "`" + ` to the default branch that changes the file. Each push gets a check run on its commit,
named ` + "`" + `ralph-gate policy` + "`" + `: ` + "`" + `success` + "`" + ` when the file is valid, or ` + "`" + `failure` + "`" + ` listing every problem
(an annotation on each problem's line). A valid file is in force at once, for the changes made
from the next second on: a change made before it is judged by the policy before it, however late
its report (docs/ENFORCEMENT.md "Policy per organization"). A push delivered late, when a newer
commit is already the branch's head, is checked and reported, never put in force over it (a
force-push, a new branch, or a push of more commits than its webhook lists is read whatever it
lists). A refused file, a removed one, or one that cannot be read never replaces the policy in
force: the organization's last valid file
stays, kept in the store with its commit, so a restart enforces it before GitHub is read again.
Replicas on one PostgreSQL store share it: the replica a push reaches reads the file, and the
others put the same policy in force, from the same time, when the store notifies them. Reading
the same commit again (a restart) changes nothing. An organization with no valid file has none of
its projects enforced; an uninstalled organization is forgotten. ` + "`" + `ralph-gate doctor` + "`" + ` checks that
every installation grants Contents: read (the file) and Checks: write (the check run), and says
which commit's policy is in force for each organization and whether a newer push was refused.

The board health pages (` + "`" + `ui.enabled` + "`" + `) show every organization's projects: a person signs in
when a member of every organization whose policy is in force (none yet: nobody).

An MCP agent works for the organization whose file names it under ` + "`" + `mcp.agents` + "`" + `: its calls are
held to that organization's workflow and act on its projects only. An agent no organization
names works for none; one several name works for none of them either (so that no call reaches
another organization's board by mistake), and an organization cannot take an agent the operator
gave another: name each agent in one organization's file.

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
