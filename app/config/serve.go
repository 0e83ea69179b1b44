package config

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Environment variables that override secrets (go-githubapp's names).
const (
	EnvIntegrationID = "GITHUB_APP_INTEGRATION_ID"
	EnvWebhookSecret = "GITHUB_APP_WEBHOOK_SECRET"
	EnvPrivateKey    = "GITHUB_APP_PRIVATE_KEY"
	// EnvPrivateKeyFile names a file holding the PEM private key (the chart mounts the key's
	// Secret as a file): the key then never sits in the process's environment.
	EnvPrivateKeyFile = "GITHUB_APP_PRIVATE_KEY_FILE"
	// EnvStoreDSN overrides store.dsn, so a Postgres password can come from a Secret.
	EnvStoreDSN = "RALPH_GATE_STORE_DSN"
)

// Webhook intake limits (config.yml's server section documents the reasoning).
const (
	// DefaultMaxBodyBytes is server.max_body_bytes's default: 1 MiB.
	DefaultMaxBodyBytes = 1 << 20
	// MaxWebhookPayloadBytes is the largest server.max_body_bytes accepted: GitHub caps
	// webhook payloads at 25 MB, read generously as 25 MiB.
	MaxWebhookPayloadBytes = 25 << 20
	// DefaultMaxConcurrentWebhooks is server.max_concurrent_webhooks's default.
	DefaultMaxConcurrentWebhooks = 16
	// MaxConcurrentWebhooksLimit is the largest server.max_concurrent_webhooks accepted.
	MaxConcurrentWebhooksLimit = 1024
)

// applyDefaults fills what the file left empty; it is the one place defaults live.
func (c *Config) applyDefaults() {
	c.mcpDefaults()
	c.policyDefaults()
	if c.Server.Address == "" {
		c.Server.Address = "0.0.0.0"
	}
	if c.Server.Port == 0 {
		c.Server.Port = 8080
	}
	if c.Server.MaxBodyBytes == 0 {
		c.Server.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.Server.MaxConcurrentWebhooks == 0 {
		c.Server.MaxConcurrentWebhooks = DefaultMaxConcurrentWebhooks
	}
	if c.GitHub.WebURL == "" {
		c.GitHub.WebURL = "https://github.com"
	}
	if c.GitHub.V3APIURL == "" {
		c.GitHub.V3APIURL = "https://api.github.com/"
	}
	if c.GitHub.V4APIURL == "" {
		c.GitHub.V4APIURL = "https://api.github.com/graphql"
	}
	if c.Store.Driver == "" {
		c.Store.Driver = "sqlite"
	}
	if c.Store.DSN == "" && c.Store.Driver == "sqlite" {
		c.Store.DSN = "ralph-gate.db"
	}
	if c.Enforcement.ReorderWindow == 0 {
		c.Enforcement.ReorderWindow = 5 * time.Second
	}
	if c.Enforcement.Mode == "" {
		c.Enforcement.Mode = "enforce"
	}
	if c.Enforcement.GapHold == 0 {
		c.Enforcement.GapHold = 2 * time.Minute
	}
	if c.Enforcement.CoalesceWindow == 0 {
		c.Enforcement.CoalesceWindow = 10 * time.Minute
	}
	if c.Enforcement.Workers == 0 {
		c.Enforcement.Workers = 8
	}
	c.reconcileDefaults()
	c.healthDefaults()
	if c.Logging.Level == "" {
		c.Logging.Level = "info"
	}
	if c.Logging.Format == "" {
		c.Logging.Format = "json"
	}
}

// ApplyEnv overrides secrets from the environment (lookup is os.LookupEnv in production).
func (c *Config) ApplyEnv(lookup func(string) (string, bool)) Problems {
	var problems Problems
	if v, ok := lookup(EnvIntegrationID); ok {
		id, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			problems = append(problems, Problem{Path: "env " + EnvIntegrationID, Message: "not an integer"})
		} else {
			c.GitHub.App.IntegrationID = id
		}
	}
	if v, ok := lookup(EnvWebhookSecret); ok {
		c.GitHub.App.WebhookSecret = v
	}
	pemText, pemSet := lookup(EnvPrivateKey)
	if file, ok := lookup(EnvPrivateKeyFile); ok && strings.TrimSpace(file) != "" {
		c.GitHub.App.keyFile = strings.TrimSpace(file)
		if pemSet && strings.TrimSpace(pemText) != "" {
			problems = append(problems, Problem{Path: "env " + EnvPrivateKeyFile,
				Message: "and " + EnvPrivateKey + " are both set: give the private key one way (unset " + EnvPrivateKey + ")"})
		} else if key, p := readPrivateKeyFile(c.GitHub.App.keyFile); p != nil {
			problems = append(problems, *p)
		} else {
			c.GitHub.App.PrivateKey = key
		}
	} else if pemSet {
		c.GitHub.App.PrivateKey = pemText
	}
	if v, ok := lookup(EnvStoreDSN); ok && strings.TrimSpace(v) != "" {
		c.Store.DSN = strings.TrimSpace(v)
	}
	c.applyUIEnv(lookup)
	return problems
}

// validateService checks the service sections (always, whether or not serving).
// modeProblem says why a mode is not one, naming the valid ones and the nearest.
func modeProblem(mode string) string {
	msg := fmt.Sprintf("unknown mode %q: want evaluate, warn or enforce", mode)
	if near, ok := Nearest(mode, EnforcementModes()); ok {
		msg += fmt.Sprintf(" (did you mean %q?)", near)
	}
	return msg
}

func (c Config) validateService() Problems {
	var problems Problems
	add := func(path, format string, args ...any) {
		problems = append(problems, Problem{Path: path, Message: fmt.Sprintf(format, args...)})
	}
	if c.Server.Port < 0 || c.Server.Port > 65535 {
		add("server.port", "must be between 0 and 65535, got %d", c.Server.Port)
	}
	if c.Server.MaxBodyBytes < 1024 || c.Server.MaxBodyBytes > MaxWebhookPayloadBytes {
		add("server.max_body_bytes", "must be between 1024 and %d (GitHub sends no webhook payload over 25 MB), got %d", MaxWebhookPayloadBytes, c.Server.MaxBodyBytes)
	}
	if c.Server.MaxConcurrentWebhooks < 1 || c.Server.MaxConcurrentWebhooks > MaxConcurrentWebhooksLimit {
		add("server.max_concurrent_webhooks", "must be between 1 and %d, got %d", MaxConcurrentWebhooksLimit, c.Server.MaxConcurrentWebhooks)
	}
	for key, v := range map[string]string{"github.web_url": c.GitHub.WebURL, "github.v3_api_url": c.GitHub.V3APIURL, "github.v4_api_url": c.GitHub.V4APIURL} {
		if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			add(key, "must be an http(s) URL, got %q", v)
		}
	}
	switch c.Store.Driver {
	case "sqlite":
	case "postgres":
		if c.Store.DSN == "" {
			add("store.dsn", "is required with the postgres driver (or set "+EnvStoreDSN+")")
		}
	default:
		add("store.driver", "must be sqlite or postgres, got %q", c.Store.Driver)
	}
	problems = append(problems, storeDSNProblems(c.Store.Driver, c.Store.DSN)...)
	// An empty secret is serve's concern (ValidateServe); a weak one is refused everywhere.
	problems = append(problems, webhookSecretProblems(c.GitHub.App.WebhookSecret, false)...)
	// So is a private key that is given but unusable (a file's is checked as it is read).
	if c.GitHub.App.keyFile == "" && strings.TrimSpace(c.GitHub.App.PrivateKey) != "" {
		problems = append(problems, privateKeyProblems(c.GitHub.App.PrivateKey)...)
	}
	seen := map[string]bool{}
	for i, p := range c.Projects {
		at := fmt.Sprintf("projects[%d]", i)
		if strings.TrimSpace(p.Owner) == "" {
			add(at+".owner", "is required (the organization login)")
		}
		if p.Number <= 0 {
			add(at+".number", "must be a positive project number, got %d", p.Number)
		}
		if p.Mode != "" && !slices.Contains(EnforcementModes(), p.Mode) {
			add(at+".mode", "%s", modeProblem(p.Mode))
		}
		key := strings.ToLower(p.Owner) + "/" + strconv.Itoa(p.Number)
		if seen[key] {
			add(at, "duplicate project %s/%d", p.Owner, p.Number)
		}
		seen[key] = true
	}
	if !slices.Contains(EnforcementModes(), c.Enforcement.Mode) {
		add("enforcement.mode", "%s", modeProblem(c.Enforcement.Mode))
	}
	if c.Enforcement.ReorderWindow < 0 || c.Enforcement.ReorderWindow > time.Minute {
		add("enforcement.reorder_window", "must be between 0s and 1m, got %s", c.Enforcement.ReorderWindow)
	}
	if c.Enforcement.GapHold < 0 || c.Enforcement.GapHold > time.Hour {
		add("enforcement.gap_hold", "must be between 0s and 1h, got %s", c.Enforcement.GapHold)
	}
	if c.Enforcement.CoalesceWindow < 0 {
		add("enforcement.coalesce_window", "must not be negative")
	}
	if c.Enforcement.Workers < 1 || c.Enforcement.Workers > 256 {
		add("enforcement.workers", "must be between 1 and 256, got %d", c.Enforcement.Workers)
	}
	problems = append(problems, c.validateReconcile()...)
	problems = append(problems, c.validateHealth()...)
	switch c.Logging.Level {
	case "debug", "info", "warn", "error":
	default:
		add("logging.level", "must be debug, info, warn or error, got %q", c.Logging.Level)
	}
	switch c.Logging.Format {
	case "json", "console":
	default:
		add("logging.format", "must be json or console, got %q", c.Logging.Format)
	}
	return problems
}

// ValidateServe checks what only serving needs: the App's identity and secrets. Secrets are
// never echoed. Check(ForServe) runs it, with the agents' tokens. It asks for no project:
// without projects, serve reads each organization's policy from its repository (OrgPolicies).
func (c Config) ValidateServe() Problems {
	problems := c.validateApp()
	problems = append(problems, webhookSecretProblems(c.GitHub.App.WebhookSecret, true)...)
	return append(problems, c.validateUIServe()...)
}

// validateApp checks what acting as the App needs (serve and `mcp --stdio`): its id and its
// private key. The key is never echoed.
func (c Config) validateApp() Problems {
	var problems Problems
	if c.GitHub.App.IntegrationID <= 0 {
		problems = append(problems, Problem{Path: "github.app.integration_id", Message: "is required (or set " + EnvIntegrationID + ")"})
	}
	switch {
	case c.GitHub.App.keyFile != "":
		// The environment gave a file: ApplyEnv reported what is wrong with it, by its variable.
	case strings.TrimSpace(c.GitHub.App.PrivateKey) == "":
		problems = append(problems, Problem{Path: "github.app.private_key", Message: "is required as a PEM private key (or set " +
			EnvPrivateKeyFile + " to the .pem file GitHub generated, or " + EnvPrivateKey + " to its text)"})
	default:
		problems = append(problems, privateKeyProblems(c.GitHub.App.PrivateKey)...)
	}
	return problems
}

// validateProjectsListed is `mcp --stdio`'s own need: it reads no organization's policy file,
// so the projects it acts on are listed in config.yml.
func (c Config) validateProjectsListed() Problems {
	if len(c.Projects) > 0 {
		return nil
	}
	return Problems{{Path: "projects", Message: "list at least one organization project to enforce ({owner, number}): " +
		"mcp --stdio reads no organization's policy file"}}
}

// Enforces reports whether an organization project is configured for enforcement.
func (c Config) Enforces(owner string, number int) bool {
	for _, p := range c.Projects {
		if strings.EqualFold(p.Owner, owner) && p.Number == number {
			return true
		}
	}
	return false
}
