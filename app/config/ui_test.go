package config

import (
	"slices"
	"strings"
	"testing"
)

const goodSessionKey = "8f3c1e9a7b2d4f6e0a1c3e5b7d9f2a4c6e8b0d2f4a6c8e1b3d5f7a9c2e4b6d8f"

// serve asks for the sign-in's settings only when the pages are on, each by its key path;
// what is given is checked whatever the mode.
func TestUIPreflight(t *testing.T) {
	key := testKeyPEM(t)
	base := map[string]string{EnvIntegrationID: "42", EnvWebhookSecret: "Zq4v8tN1xK7mR2pW9cL5", EnvPrivateKey: key}
	with := func(kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range base {
			out[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	const projects = "projects: [{owner: acme, number: 1}]\n"
	const on = projects + "ui: {enabled: true}\nserver: {public_url: \"https://ralph-gate.example.com\"}\n"
	tests := []struct {
		name  string
		file  string
		mode  Mode
		env   map[string]string
		paths []string
	}{
		{"off: nothing asked", projects, ForServe, base, nil},
		{"on, with everything", on, ForServe, with(EnvOAuthClientID, "Iv1.abc", EnvOAuthClientSecret, "shh", EnvSessionKey, goodSessionKey), nil},
		{"on, with nothing", projects + "ui: {enabled: true}\n", ForServe, base,
			[]string{"server.public_url", "github.oauth.client_id", "github.oauth.client_secret", "env " + EnvSessionKey}},
		{"on, the client in the file", on + "github: {oauth: {client_id: Iv1.abc, client_secret: shh}}\n", ForServe, with(EnvSessionKey, goodSessionKey), nil},
		{"on, a short key", on, ForServe, with(EnvOAuthClientID, "Iv1.abc", EnvOAuthClientSecret, "shh", EnvSessionKey, "0123456789abcdef"), []string{"env " + EnvSessionKey}},
		{"on, for mcp: nothing asked", on, ForMCP, base, nil},
		{"a weak key is refused even off", projects, ForFile, map[string]string{EnvSessionKey: strings.Repeat("ab", 20)}, []string{"env " + EnvSessionKey}},
		{"a bad public URL is refused even off", projects + "server: {public_url: \"ralph-gate.example.com\"}\n", ForFile, nil, []string{"server.public_url"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, problems, err := Preflight(writeFile(t, tt.file), tt.mode, envOf(tt.env))
			if err != nil {
				t.Fatal(err)
			}
			if got := paths(problems); !slices.Equal(got, tt.paths) {
				t.Fatalf("problems at %q, want %q:\n%v", got, tt.paths, problems)
			}
			for _, secret := range []string{"shh", goodSessionKey, "0123456789abcdef", "abab"} {
				if strings.Contains(problems.Error(), secret) {
					t.Errorf("a problem echoes a secret: %v", problems)
				}
			}
			if tt.name == "on, with everything" && (cfg.GitHub.OAuth.ClientID != "Iv1.abc" || cfg.GitHub.OAuth.ClientSecret != "shh" ||
				cfg.UI.SessionKey != goodSessionKey || cfg.CallbackURL() != "https://ralph-gate.example.com/ui/oauth/callback") {
				t.Errorf("environment not applied: %+v %+v, callback %s", cfg.GitHub.OAuth, cfg.UI.Enabled, cfg.CallbackURL())
			}
		})
	}
}

func TestPublicURL(t *testing.T) {
	for raw, ok := range map[string]bool{
		"":                                     true,
		"https://ralph-gate.example.com":       true,
		"https://ralph-gate.example.com/":      true,
		"http://127.0.0.1:8080":                true,
		"ralph-gate.example.com":               false,
		"ftp://ralph-gate.example.com":         false,
		"https://":                             false,
		"https://user:pw@ralph-gate.example":   false,
		"https://ralph-gate.example.com/gate":  false,
		"https://ralph-gate.example.com/?x=1":  false,
		"https://ralph-gate.example.com/#frag": false,
	} {
		if got := publicURLProblem(raw) == ""; got != ok {
			t.Errorf("%q: accepted %v, want %v (%s)", raw, got, ok, publicURLProblem(raw))
		}
		if strings.Contains(publicURLProblem(raw), "pw@") {
			t.Errorf("%q: the problem echoes credentials", raw)
		}
	}
}

func TestSessionKeyStrength(t *testing.T) {
	for key, ok := range map[string]bool{
		goodSessionKey:              true,
		goodSessionKey[:32]:         true,
		goodSessionKey[:31]:         false,
		strings.Repeat("a", 64):     false,
		strings.Repeat("secret", 8): false,
	} {
		if got := sessionKeyProblem(key) == ""; got != ok {
			t.Errorf("key of %d bytes: accepted %v, want %v", len(key), got, ok)
		}
	}
}
