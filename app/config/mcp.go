package config

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
)

// MCP configures the façade agents call (Streamable HTTP at /mcp, `ralph-gate mcp --stdio`).
type MCP struct {
	// DefaultRepo is the repository a tool call uses when it names none: a repository of the
	// enforced projects' organization, or owner/name.
	DefaultRepo string `yaml:"default_repo"`
	// Agents may call the façade, each with its own token.
	Agents []MCPAgent `yaml:"agents"`
	// Limits bound what an agent may make the façade spend.
	Limits MCPLimits `yaml:"limits"`
}

// MCPLimits bound what an agent may make the façade spend of the installation's GitHub budget
// (docs/SECURITY.md "Budgets"); zero values take the defaults.
type MCPLimits struct {
	// CallsPerMinute is each agent's sustained rate of tool calls, in bursts of up to Burst.
	CallsPerMinute int `yaml:"calls_per_minute"`
	Burst          int `yaml:"burst"`
	// MaxBatch is how many JSON-RPC messages one POST to /mcp may carry.
	MaxBatch int `yaml:"max_batch"`
	// GitHubReserve is the share of the installation's GitHub rate limit the façade leaves to
	// enforcement: below it, tool calls that would call GitHub wait for the limit's reset.
	GitHubReserve float64 `yaml:"github_reserve"`
}

// mcpDefaults fills the limits the file left empty.
func (c *Config) mcpDefaults() {
	l := &c.MCP.Limits
	if l.CallsPerMinute == 0 {
		l.CallsPerMinute = 60
	}
	if l.Burst == 0 {
		l.Burst = 20
	}
	if l.MaxBatch == 0 {
		l.MaxBatch = 10
	}
	if l.GitHubReserve == 0 {
		l.GitHubReserve = 0.5
	}
}

// MCPAgent is one agent: its name, exactly one way to know its token, and its commands.
type MCPAgent struct {
	Name string `yaml:"name"`
	// Token is the token itself (local testing only).
	Token string `yaml:"token"`
	// TokenEnv names an environment variable holding the token.
	TokenEnv string `yaml:"token_env"`
	// TokenSHA256 is the hex SHA-256 of the token.
	TokenSHA256 string `yaml:"token_sha256"`
	// Commands are the commands the agent may use; empty means all (or its role's).
	Commands []string `yaml:"commands"`
	// Role is the worker role the agent acts in (actors.roles); empty: the role its name
	// matches, if any.
	Role string `yaml:"role"`
	// Org is the organization the agent works for when the policies come from the
	// organizations' files (no projects listed): only that organization's file may name it.
	// Empty: the one organization whose file names it.
	Org string `yaml:"org"`
}

// MCPCredential is an agent as the façade authenticates it: the token is kept only as its
// SHA-256, so it never sits in memory in clear after start-up and cannot be logged.
type MCPCredential struct {
	Name     string
	Hash     [sha256.Size]byte
	Commands []string
}

// minTokenLength keeps guessable tokens out: 16 characters (a random 96-bit value in base64).
const minTokenLength = 16

var (
	agentNamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._\-\[\]]{0,99}$`)
	envNamePattern   = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	hexSHA256        = regexp.MustCompile(`^[0-9a-fA-F]{64}$`)
	defaultRepo      = regexp.MustCompile(`^(?:[A-Za-z0-9][A-Za-z0-9-]{0,38}/)?[A-Za-z0-9._-]{1,100}$`)
)

// validateMCP checks the mcp section (always); whether token_env variables are set, and hold
// different tokens, is checked for serve (Check(ForServe) runs MCPCredentials).
func (c Config) validateMCP() Problems {
	var problems Problems
	add := func(path, format string, args ...any) {
		problems = append(problems, Problem{Path: path, Message: fmt.Sprintf(format, args...)})
	}
	if r := strings.TrimSpace(c.MCP.DefaultRepo); r != "" && !defaultRepo.MatchString(r) {
		add("mcp.default_repo", "must be a repository name or owner/name, got %q", r)
	}
	l := c.MCP.Limits
	if l.CallsPerMinute < 1 || l.CallsPerMinute > 100000 {
		add("mcp.limits.calls_per_minute", "must be from 1 to 100000, got %d", l.CallsPerMinute)
	}
	if l.Burst < 1 || l.Burst > 10000 {
		add("mcp.limits.burst", "must be from 1 to 10000, got %d", l.Burst)
	}
	if l.MaxBatch < 1 || l.MaxBatch > 100 {
		add("mcp.limits.max_batch", "must be from 1 to 100, got %d", l.MaxBatch)
	}
	if l.GitHubReserve <= 0 || l.GitHubReserve >= 1 {
		add("mcp.limits.github_reserve", "must be more than 0 and less than 1, got %g", l.GitHubReserve)
	}
	commands := map[string]bool{}
	var names []string
	for _, cmd := range c.Workflow.Commands {
		commands[strings.ToLower(cmd.Name)] = true
		names = append(names, cmd.Name)
	}
	seen := map[string]bool{}
	tokenOwner := map[string]string{} // what names a token (its hash, or its variable) → agent
	for i, a := range c.MCP.Agents {
		at := fmt.Sprintf("mcp.agents[%d]", i)
		if key := tokenKey(a); key != "" {
			// Tokens that are the same in the file alone; MCPCredentials finds the rest (two
			// variables holding one value) when the environment is known.
			if other, dup := tokenOwner[key]; dup {
				add(at, "shares its token with agent %q; give each agent its own", other)
			} else {
				tokenOwner[key] = a.Name
			}
		}
		switch key := strings.ToLower(a.Name); {
		case a.Name == "":
			add(at+".name", "is required (it names the agent in audits, comments and locks)")
		case !agentNamePattern.MatchString(a.Name):
			add(at+".name", "%q must be letters, digits, '.', '_', '-' or brackets (at most 100)", a.Name)
		case seen[key]:
			add(at+".name", "duplicate agent %q", a.Name)
		default:
			seen[key] = true
		}
		given := 0
		for _, v := range []string{a.Token, a.TokenEnv, a.TokenSHA256} {
			if v != "" {
				given++
			}
		}
		if given != 1 {
			add(at, "give exactly one of token, token_env and token_sha256 (got %d)", given)
		}
		if a.Token != "" && len(a.Token) < minTokenLength {
			add(at+".token", "is shorter than %d characters", minTokenLength) // never echo a secret
		}
		if a.TokenEnv != "" && !envNamePattern.MatchString(a.TokenEnv) {
			add(at+".token_env", "%q is not an environment variable name", a.TokenEnv)
		}
		if a.TokenSHA256 != "" && !hexSHA256.MatchString(a.TokenSHA256) {
			add(at+".token_sha256", "must be 64 hex digits (the SHA-256 of the token)")
		}
		dup := map[string]bool{}
		for j, cmd := range a.Commands {
			n := strings.TrimPrefix(strings.ToLower(strings.TrimSpace(cmd)), "ralph_")
			switch {
			case !commands[n]:
				add(fmt.Sprintf("%s.commands[%d]", at, j), "unknown command %q; workflow.commands has %s", cmd, strings.Join(names, ", "))
			case dup[n]:
				add(fmt.Sprintf("%s.commands[%d]", at, j), "duplicate command %q", cmd)
			}
			dup[n] = true
		}
	}
	return problems
}

// tokenKey names an agent's token as the file gives it: the SHA-256 of a token in clear (so
// it matches the same token given as token_sha256), or the variable that holds it; "" when
// the agent gives none or several ways.
func tokenKey(a MCPAgent) string {
	switch {
	case a.Token != "" && a.TokenEnv == "" && a.TokenSHA256 == "":
		sum := sha256.Sum256([]byte(a.Token))
		return "sha256:" + hex.EncodeToString(sum[:])
	case a.TokenSHA256 != "" && a.Token == "" && a.TokenEnv == "":
		return "sha256:" + strings.ToLower(a.TokenSHA256)
	case a.TokenEnv != "" && a.Token == "" && a.TokenSHA256 == "":
		return "env:" + a.TokenEnv
	}
	return ""
}

// MCPCredentials resolves every agent's token (token_env through lookup) to its hash. A
// variable that is unset or too short, and two agents sharing a token, are problems.
func (c Config) MCPCredentials(lookup func(string) (string, bool)) ([]MCPCredential, Problems) {
	var (
		out      []MCPCredential
		problems Problems
	)
	owner := map[[sha256.Size]byte]string{}
	for i, a := range c.MCP.Agents {
		at := fmt.Sprintf("mcp.agents[%d]", i)
		cred := MCPCredential{Name: a.Name, Commands: append([]string(nil), a.Commands...)}
		switch {
		case a.Token != "":
			cred.Hash = sha256.Sum256([]byte(a.Token))
		case a.TokenEnv != "":
			v, ok := lookup(a.TokenEnv)
			if !ok || len(v) < minTokenLength {
				problems = append(problems, Problem{Path: at + ".token_env",
					Message: fmt.Sprintf("environment variable %s is unset or shorter than %d characters", a.TokenEnv, minTokenLength)})
				continue
			}
			cred.Hash = sha256.Sum256([]byte(v))
		case a.TokenSHA256 != "":
			b, err := hex.DecodeString(a.TokenSHA256)
			if err != nil || len(b) != sha256.Size {
				problems = append(problems, Problem{Path: at + ".token_sha256", Message: "must be 64 hex digits"})
				continue
			}
			copy(cred.Hash[:], b)
		default:
			problems = append(problems, Problem{Path: at, Message: "has no token"})
			continue
		}
		if other, dup := owner[cred.Hash]; dup {
			problems = append(problems, Problem{Path: at, Message: fmt.Sprintf("shares its token with agent %q; give each agent its own", other)})
			continue
		}
		owner[cred.Hash] = a.Name
		out = append(out, cred)
	}
	return out, problems
}

// MCPAgentNamed returns the configured agent with that name (case-insensitive).
func (c Config) MCPAgentNamed(name string) (MCPAgent, bool) {
	for _, a := range c.MCP.Agents {
		if strings.EqualFold(a.Name, name) {
			return a, true
		}
	}
	return MCPAgent{}, false
}
