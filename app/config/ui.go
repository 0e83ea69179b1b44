package config

import (
	"fmt"
	"net/url"
	"strings"
)

// Environment variables of the board health pages' sign-in.
const (
	// EnvOAuthClientID and EnvOAuthClientSecret override github.oauth (go-githubapp's names).
	EnvOAuthClientID     = "GITHUB_OAUTH_CLIENT_ID"
	EnvOAuthClientSecret = "GITHUB_OAUTH_CLIENT_SECRET"
	// EnvSessionKey is the key that signs the pages' session cookies. It has no key in the
	// file: a signing key belongs in a Secret.
	EnvSessionKey = "RALPH_GATE_SESSION_KEY"
)

// MinSessionKeyBytes is the shortest session key serve accepts: HMAC-SHA256 wants a key as
// long as its output (`openssl rand -hex 32` gives 64 characters).
const MinSessionKeyBytes = 32

// minSessionKeyDistinct refuses keys such as "aaaa…" or a word repeated: 32 random hex
// characters have 14 or more distinct ones but with a vanishing chance.
const minSessionKeyDistinct = 10

// UI configures the board health pages at /ui/ and their GitHub sign-in.
type UI struct {
	// Enabled serves the pages; off by default.
	Enabled bool `yaml:"enabled"`
	// SessionKey signs the session cookies; only from RALPH_GATE_SESSION_KEY.
	SessionKey string `yaml:"-"`
}

// OAuth is the GitHub App's OAuth client (go-githubapp's github.oauth keys): the pages sign
// people in with it.
type OAuth struct {
	ClientID     string `yaml:"client_id"`
	ClientSecret string `yaml:"client_secret"`
}

// CallbackPath is where GitHub sends the browser back after sign-in, under server.public_url.
const CallbackPath = "/ui/oauth/callback"

// PublicBase is server.public_url without a trailing slash ("" when unset).
func (c Config) PublicBase() string {
	return strings.TrimSuffix(strings.TrimSpace(c.Server.PublicURL), "/")
}

// CallbackURL is the App's "Callback URL": {server.public_url}/ui/oauth/callback.
func (c Config) CallbackURL() string { return c.PublicBase() + CallbackPath }

// applyUIEnv reads the sign-in's secrets from the environment.
func (c *Config) applyUIEnv(lookup func(string) (string, bool)) {
	if v, ok := lookup(EnvOAuthClientID); ok && strings.TrimSpace(v) != "" {
		c.GitHub.OAuth.ClientID = strings.TrimSpace(v)
	}
	if v, ok := lookup(EnvOAuthClientSecret); ok && strings.TrimSpace(v) != "" {
		c.GitHub.OAuth.ClientSecret = strings.TrimSpace(v)
	}
	if v, ok := lookup(EnvSessionKey); ok {
		c.UI.SessionKey = v
	}
}

// validateUI checks what is given, whether or not the pages are served: a public URL that is
// not an absolute http(s) URL, a weak session key. Neither is echoed when it may be secret.
func (c Config) validateUI() Problems {
	var problems Problems
	if p := publicURLProblem(c.Server.PublicURL); p != "" {
		problems = append(problems, Problem{Path: "server.public_url", Message: p})
	}
	if c.UI.SessionKey != "" {
		if p := sessionKeyProblem(c.UI.SessionKey); p != "" {
			problems = append(problems, Problem{Path: "env " + EnvSessionKey, Message: p})
		}
	}
	return problems
}

// validateUIServe asks serve for what the pages need, only when they are enabled.
func (c Config) validateUIServe() Problems {
	if !c.UI.Enabled {
		return nil
	}
	var problems Problems
	if strings.TrimSpace(c.Server.PublicURL) == "" {
		problems = append(problems, Problem{Path: "server.public_url", Message: "is required with ui.enabled: the address people open, e.g. https://ralph-gate.example.com (the App's Callback URL is it + " + CallbackPath + ")"})
	}
	if c.GitHub.OAuth.ClientID == "" {
		problems = append(problems, Problem{Path: "github.oauth.client_id", Message: "is required with ui.enabled: the App's Client ID from its settings page (or set " + EnvOAuthClientID + ")"})
	}
	if c.GitHub.OAuth.ClientSecret == "" {
		problems = append(problems, Problem{Path: "github.oauth.client_secret", Message: "is required with ui.enabled: a client secret generated on the App's settings page (or set " + EnvOAuthClientSecret + ")"})
	}
	if c.UI.SessionKey == "" {
		problems = append(problems, Problem{Path: "env " + EnvSessionKey, Message: fmt.Sprintf("is required with ui.enabled: a random key of at least %d bytes that signs the session cookies (e.g. `openssl rand -hex 32`)", MinSessionKeyBytes)})
	}
	return problems
}

// publicURLProblem says what is wrong with server.public_url ("" when nothing, or unset).
func publicURLProblem(raw string) string {
	s := strings.TrimSpace(raw)
	if s == "" {
		return ""
	}
	u, err := url.Parse(s)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return fmt.Sprintf("must be an absolute http(s) URL such as https://ralph-gate.example.com, got %q", s)
	case u.User != nil:
		return "must not hold credentials"
	case u.RawQuery != "" || u.Fragment != "":
		return fmt.Sprintf("must have no query or fragment, got %q", s)
	case strings.Trim(u.Path, "/") != "":
		return fmt.Sprintf("must be the root of the service (the pages are at /ui/), without a path, got %q", s)
	}
	return ""
}

// sessionKeyProblem says what makes a session key weak ("" when nothing); never the key.
func sessionKeyProblem(key string) string {
	distinct := map[byte]bool{}
	for i := 0; i < len(key); i++ {
		distinct[key[i]] = true
	}
	switch {
	case len(key) < MinSessionKeyBytes:
		return fmt.Sprintf("is too short: use a random key of at least %d bytes (e.g. `openssl rand -hex 32`)", MinSessionKeyBytes)
	case len(distinct) < minSessionKeyDistinct:
		return "is too weak (too few distinct characters): use a random key (e.g. `openssl rand -hex 32`)"
	}
	return ""
}
