// Package config decodes, defaults and validates ralph-gate's configuration file.
//
// Decoding is strict: unknown keys and type mismatches are problems, and Validate reports
// every problem at once, each with its key path (workflow.states[3].next[1]). The process
// refuses to start on any problem. This package must not talk to GitHub or the store.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	ralphgate "github.com/ralph-gate/ralph-gate"
	"github.com/ralph-gate/ralph-gate/policy"
)

// Config is the whole configuration file.
type Config struct {
	Server   Server    `yaml:"server"`
	GitHub   GitHub    `yaml:"github"`
	Store    Store     `yaml:"store"`
	Projects []Project `yaml:"projects"`
	Policy   Policy    `yaml:"policy"`
	// Organizations, when set, are the only organizations served (their policy admins say
	// who may change each one's policy); empty: every organization that installs the App.
	Organizations []Organization `yaml:"organizations"`
	Enforcement   Enforcement    `yaml:"enforcement"`
	Reconcile     Reconcile      `yaml:"reconcile"`
	Redelivery    Redelivery     `yaml:"redelivery"`
	Health        Health         `yaml:"health"`
	Logging       Logging        `yaml:"logging"`
	Actors        Actors         `yaml:"actors"`
	MCP           MCP            `yaml:"mcp"`
	UI            UI             `yaml:"ui"`
	Workflow      policy.Spec    `yaml:"workflow"`
}

// Server is where the service listens.
type Server struct {
	Address string `yaml:"address"`
	Port    int    `yaml:"port"`
	// MaxBodyBytes bounds a webhook body; larger ones are refused with 413. The default
	// (DefaultMaxBodyBytes) and its reasoning are in config.yml's comments.
	MaxBodyBytes int64 `yaml:"max_body_bytes"`
	// MaxConcurrentWebhooks bounds the webhook bodies read at once, before their signature
	// can be checked; a delivery that finds no free slot within a short wait is answered 503.
	MaxConcurrentWebhooks int `yaml:"max_concurrent_webhooks"`
	// PublicURL is the address people open (links, the sign-in's callback URL).
	PublicURL string `yaml:"public_url"`
}

// GitHub is go-githubapp's configuration (same keys), secrets overridable from the
// environment: GITHUB_APP_INTEGRATION_ID, GITHUB_APP_WEBHOOK_SECRET, and the private key as
// GITHUB_APP_PRIVATE_KEY_FILE (a file) or GITHUB_APP_PRIVATE_KEY (its text).
type GitHub struct {
	WebURL   string `yaml:"web_url"`
	V3APIURL string `yaml:"v3_api_url"`
	V4APIURL string `yaml:"v4_api_url"`
	App      App    `yaml:"app"`
	OAuth    OAuth  `yaml:"oauth"`
}

// App identifies the GitHub App.
type App struct {
	IntegrationID int64  `yaml:"integration_id"`
	WebhookSecret string `yaml:"webhook_secret"`
	PrivateKey    string `yaml:"private_key"`
	// keyFile is GITHUB_APP_PRIVATE_KEY_FILE when the environment gave the key as a file.
	keyFile string
}

// Store selects the database.
type Store struct {
	Driver string `yaml:"driver"` // sqlite | postgres
	DSN    string `yaml:"dsn"`
}

// Project is one enforced organization project.
type Project struct {
	Owner  string `yaml:"owner"`
	Number int    `yaml:"number"`
	// Mode is how this project is enforced: evaluate, warn or enforce ("": enforcement.mode).
	Mode string `yaml:"mode"`
}

// EnforcementModes are the enforcement modes (docs/ENFORCEMENT.md "Modes"), from the least written.
func EnforcementModes() []string { return []string{"evaluate", "warn", "enforce"} }

// ModeOf is the mode a project is enforced in: its own, else enforcement.mode, else enforce.
func (c Config) ModeOf(owner string, number int) string {
	for _, p := range c.Projects {
		if strings.EqualFold(p.Owner, owner) && p.Number == number && p.Mode != "" {
			return p.Mode
		}
	}
	if c.Enforcement.Mode != "" {
		return c.Enforcement.Mode
	}
	return "enforce"
}

// Enforcement tunes how changes are processed.
type Enforcement struct {
	// ReorderWindow: how long GitHub may take to attempt a delivery after a change. A change
	// is judged once a redelivery sweep proves every change up to this long after it reported.
	ReorderWindow time.Duration `yaml:"reorder_window"`
	// GapHold: the longest a change waits for that proof; then it is judged all the same.
	GapHold time.Duration `yaml:"gap_hold"`
	// CoalesceWindow: how long one violation comment absorbs new violations on its issue.
	CoalesceWindow time.Duration `yaml:"coalesce_window"`
	// Workers: how many changes are processed at once (changes of one item never overlap).
	Workers int `yaml:"workers"`
	// Mode is how the projects are enforced unless a project says otherwise: evaluate, warn
	// or enforce.
	Mode string `yaml:"mode"`
}

// Logging selects the log level and format.
type Logging struct {
	Level  string `yaml:"level"`  // debug | info | warn | error
	Format string `yaml:"format"` // json | console
}

// Actors says who is an agent and who may bypass enforcement.
type Actors struct {
	// Agents are logins or path.Match glob patterns.
	Agents []string `yaml:"agents"`
	// Bypass logins are never reverted (always audited).
	Bypass []string `yaml:"bypass"`
	// Roles are the worker roles: each role's agents, the states it owns, its commands
	// (docs/ENFORCEMENT.md, Worker roles). Empty: agents keep the agent rules alone.
	Roles map[string]policy.RoleSpec `yaml:"roles"`
}

// Problem is one configuration problem at a key path.
type Problem = policy.Problem

// Problems is every problem found in one configuration; it is an error.
type Problems []Problem

func (ps Problems) Error() string {
	lines := make([]string, 0, len(ps))
	for _, p := range ps {
		lines = append(lines, p.String())
	}
	return fmt.Sprintf("%d configuration problem(s):\n  %s", len(ps), strings.Join(lines, "\n  "))
}

// Default returns the embedded default configuration, decoded.
func Default() (Config, error) {
	return Parse(ralphgate.DefaultConfig())
}

// Load reads and parses a configuration file; an empty path means the embedded default.
func Load(file string) (Config, error) {
	if file == "" {
		return Default()
	}
	data, err := readFile(file)
	if err != nil {
		return Config{}, err
	}
	return Parse(data)
}

// MaxFileBytes bounds a configuration file: the default is about 15 KiB, and a file of tens of
// megabytes (a mistaken path, a log) would take seconds and hundreds of megabytes to decode.
const MaxFileBytes = 1 << 20

// readFile reads a configuration file of at most MaxFileBytes.
func readFile(file string) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("read config: %s is larger than %d bytes: is it the configuration file?", file, MaxFileBytes)
	}
	return data, nil
}

// Parse decodes strictly and validates. A returned error is Problems when the file was read
// but is wrong, so callers can print every problem.
func Parse(data []byte) (Config, error) {
	cfg, problems := parse(data)
	if len(problems) > 0 {
		return Config{}, problems
	}
	return cfg, nil
}

// parse returns the decoded configuration (defaults applied) and every problem found.
func parse(data []byte) (Config, Problems) {
	cfg, problems, parsed, origin := decode(data)
	cfg.applyDefaults()
	if parsed {
		// Unknown keys and type errors do not hide the semantic problems: report them all.
		problems = append(problems, origin.unshadowed(problems, cfg.Validate())...)
	}
	return cfg, problems
}

// decode reports unknown keys by path and type errors by line, all at once, at the file's
// key paths. The workflow section extends the embedded default's (merge.go); origin says
// where the merged workflow's values came from. parsed is false when the text is not YAML.
func decode(data []byte) (cfg Config, problems Problems, parsed bool, origin *workflowOrigin) {
	root, problems := parseDocument(data)
	if root == nil {
		return Config{}, problems, false, origin
	}
	// A file without an actors section gets the embedded default's, whole.
	if !hasKey(root.Content[0], "actors") {
		actors, err := defaultSection("actors")
		if err == nil {
			err = actors.Decode(&cfg.Actors)
		}
		if err != nil {
			return cfg, Problems{{Path: "actors", Message: err.Error()}}, true, origin
		}
	}
	problems, origin = decodeStrict(root, data, configShape(), &cfg, &cfg.Workflow)
	return cfg, problems, true, origin
}

// parseDocument parses a file's YAML text; a text that is not YAML, or holds no document, is
// the one problem and the root is nil.
func parseDocument(data []byte) (*yaml.Node, Problems) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, Problems{{Path: "(file)", Message: yamlMessage(err, data)}}
	}
	if len(root.Content) == 0 {
		return nil, Problems{{Path: "(file)", Message: "the file is empty"}}
	}
	return &root, nil
}

// decodeStrict decodes a parsed file into out, a pointer to a value of type shape whose
// workflow section is *workflow. Unknown keys and type errors are reported by key path, all
// at once; the workflow section is merged into the default's first (merge.go), and origin
// says where the merged workflow's values came from.
func decodeStrict(root *yaml.Node, data []byte, shape reflect.Type, out any, workflow *policy.Spec) (Problems, *workflowOrigin) {
	doc := root.Content[0]
	// workflow.extends steers the merge and is no key of policy.Spec: it leaves the tree first.
	section, extends, extendsProblems := takeExtends(doc)
	problems := unknownKeys(doc, shape, "")
	problems = append(problems, extendsProblems...)
	lines := map[int]string{}
	typed := typeProblems(doc, shape, "", lines)
	problems = append(problems, typed...)
	// The workflow is decoded from the merge of the file's section into the default's, which
	// keeps the file's nodes, and so its lines, for every value the file gave.
	wf, origin, err := effectiveWorkflow(section, extends)
	if err != nil {
		return append(problems, Problem{Path: "workflow", Message: err.Error()}), origin
	}
	problems = append(problems, origin.duplicates...)
	if doc.Kind == yaml.MappingNode {
		setValue(doc, "workflow", wf)
	} else if err := wf.Decode(workflow); err != nil { // the file is refused as it is
		problems = append(problems, Problem{Path: "workflow", Message: err.Error()})
	}
	if err := root.Decode(out); err != nil {
		var te *yaml.TypeError
		if errors.As(err, &te) {
			problems = append(problems, placeDecodeErrors(te.Errors, typed, lines)...)
		} else {
			problems = append(problems, Problem{Path: "(file)", Message: yamlMessage(err, data)})
		}
	}
	return problems, origin
}

// yamlMessage words a YAML syntax error. yaml.v3 counts the line of a parser error (a key
// indented less than its siblings, an item where none may be, a flow collection left open)
// from 0 while it counts those of scanner errors (a quote left open, a tab) from 1, so a
// parser error on line 16 said line 15, and one on line 1 no line at all: the line of a
// parser error is counted from 1 here.
func yamlMessage(err error, data []byte) string {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line, problem := 0, msg
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		problem = msg[len(m[0]):]
	}
	if !parserProblems[problem] {
		return msg
	}
	// The line is the 0-based line of the construct being parsed, or of the problem when
	// that construct starts on the first line; at the end of the text it may be the line
	// after the last.
	line++
	if last := textLines(data); line > last {
		line = max(last, 1)
	}
	return fmt.Sprintf("line %d: %s", line, problem)
}

// parserProblems are the problems yaml.v3's parser (parserc.go) reports; every other syntax
// error comes from its scanner or reader.
var parserProblems = map[string]bool{
	"did not find expected <stream-start>":   true,
	"did not find expected <document start>": true,
	"did not find expected node content":     true,
	"did not find expected '-' indicator":    true,
	"did not find expected key":              true,
	"did not find expected ',' or ']'":       true,
	"did not find expected ',' or '}'":       true,
	"found undefined tag handle":             true,
	"found duplicate %YAML directive":        true,
	"found incompatible YAML document":       true,
	"found duplicate %TAG directive":         true,
}

// textLines counts the lines of a text (a last line without a newline counts).
func textLines(data []byte) int {
	n := bytes.Count(data, []byte("\n"))
	if len(data) > 0 && data[len(data)-1] != '\n' {
		n++
	}
	return n
}

// Validate reports every semantic problem with its key path.
func (c Config) Validate() Problems {
	problems := c.validateService()
	problems = append(problems, c.validateMCP()...)
	problems = append(problems, c.validateUI()...)
	problems = append(problems, c.validatePolicy()...)
	problems = append(problems, c.validateOrganizations()...)
	problems = append(problems, c.PolicyActors("").Validate()...)
	seen := map[string]bool{}
	for i, login := range c.Actors.Bypass {
		p := fmt.Sprintf("actors.bypass[%d]", i)
		switch key := strings.ToLower(login); {
		case strings.ContainsAny(login, "*?"):
			problems = append(problems, Problem{Path: p, Message: fmt.Sprintf("bypass takes exact logins, not patterns (%q)", login)})
		case seen[key]:
			problems = append(problems, Problem{Path: p, Message: fmt.Sprintf("duplicate login %q", login)})
		default:
			seen[key] = true
		}
	}
	m, ps := policy.Compile(c.Workflow)
	if len(ps) > 0 {
		return append(problems, suggestStates(ps, c.stateNames())...)
	}
	roles, ps := policy.CompileRoles(m, c.Actors.Roles)
	problems = append(problems, ps...)
	for i, a := range c.MCP.Agents {
		if a.Role != "" && !roles.Has(a.Role) {
			problems = append(problems, Problem{Path: fmt.Sprintf("mcp.agents[%d].role", i),
				Message: fmt.Sprintf("unknown role %q (roles: %s)", a.Role, strings.Join(orNone(roles.Names()), ", "))})
		}
	}
	return problems
}

func orNone(names []string) []string {
	if len(names) == 0 {
		return []string{"none configured under actors.roles"}
	}
	return names
}

// stateNames are the names of the workflow's states, as configured.
func (c Config) stateNames() []string {
	names := make([]string, 0, len(c.Workflow.States))
	for _, s := range c.Workflow.States {
		names = append(names, s.Name)
	}
	return names
}

// Machine compiles the workflow with its worker roles; the config must have been validated.
func (c Config) Machine() (*policy.Machine, error) {
	m, ps := policy.Compile(c.Workflow)
	if len(ps) > 0 {
		return nil, Problems(ps)
	}
	roles, ps := policy.CompileRoles(m, c.Actors.Roles)
	if len(ps) > 0 {
		return nil, Problems(ps)
	}
	return m.WithRoles(roles), nil
}

// PolicyActors turns the actor lists into the classifier policy uses; appLogin is the app's
// own "<slug>[bot]" login (empty when unknown, e.g. in the policy CLI). A role's agents are
// agents, whether actors.agents lists them or not.
func (c Config) PolicyActors(appLogin string) policy.Actors {
	agents := slices.Clone(c.Actors.Agents)
	for _, name := range slices.Sorted(maps.Keys(c.Actors.Roles)) {
		agents = append(agents, c.Actors.Roles[name].Agents...)
	}
	return policy.Actors{App: appLogin, Agents: agents, Bypass: c.Actors.Bypass}
}

func hasKey(n *yaml.Node, key string) bool {
	if n.Kind != yaml.MappingNode {
		return false
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return true
		}
	}
	return false
}
