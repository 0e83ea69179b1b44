package sandbox

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/ralph-gate/ralph-gate/app/config"
)

// TestChartUI: ui.enabled puts /ui/ on the Ingress, the OAuth client secret and the session
// key in the pod from a Secret, and server.public_url, ui.enabled and github.oauth.client_id
// in config.yml, which then loads for serve with the Deployment's environment.
func TestChartUI(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM := string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}))
	realKey := filepath.Join(t.TempDir(), "key-values.yaml")
	b, _ := yaml.Marshal(map[string]any{"github": map[string]any{"privateKey": keyPEM}})
	if err := os.WriteFile(realKey, b, 0o600); err != nil {
		t.Fatal(err)
	}
	const sessionKey = "9c1f7a3e5b2d8f4a6c0e1b3d5f7a9c2e4b6d8f0a1c3e5b7d9f2a4c6e8b0d2f4a"
	tests := []struct {
		name      string
		args      []string
		ui        bool
		routed    bool   // /ui/ on the Ingress
		secret    string // the Secret the sign-in's variables come from
		publicURL string
		secrets   map[string]map[string]string // Secrets made outside the chart
	}{
		{name: "ui-values: inline secrets, https from the Ingress's TLS", args: []string{"-f", chartDir + "/ci/ui-values.yaml", "-f", realKey},
			ui: true, routed: true, secret: "ralph-gate", publicURL: "https://ralph-gate.example.com"},
		{name: "ui-values with a public URL of its own", args: []string{"-f", chartDir + "/ci/ui-values.yaml", "-f", realKey, "--set", "ui.publicUrl=https://gate.example.org/"},
			ui: true, routed: true, secret: "ralph-gate", publicURL: "https://gate.example.org"},
		{name: "secrets from github.existingSecret", args: []string{"-f", chartDir + "/ci/default-values.yaml", "--set", "github.existingSecret=ralph-gate-github",
			"--set", "ui.enabled=true", "--set", "ui.oauthClientId=Iv1.0123456789abcdef", "--set", "ui.publicUrl=http://127.0.0.1:8080"},
			ui: true, secret: "ralph-gate-github", publicURL: "http://127.0.0.1:8080",
			secrets: map[string]map[string]string{"ralph-gate-github": {"app-id": "1001", "webhook-secret": "ui-chart-webhook-secret-01",
				"private-key": keyPEM, "client-secret": "from-the-existing-secret", "session-key": sessionKey}}},
		{name: "default-values: off", args: []string{"-f", chartDir + "/ci/default-values.yaml", "-f", realKey}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := mustTemplate(t, tt.args...)
			var uiPath *ingressPath
			if m.count("Ingress") > 0 {
				for _, p := range m.ingressPaths(t) {
					if p.Path == "/ui/" {
						uiPath = &p
					}
				}
			}
			if (uiPath != nil) != tt.routed || (uiPath != nil && uiPath.PathType != "Prefix") {
				t.Errorf("the Ingress's /ui/ path: %+v, want routed %v (Prefix)", uiPath, tt.routed)
			}
			secrets := map[string]map[string]string{}
			for k, v := range tt.secrets {
				secrets[k] = v
			}
			for _, o := range m.objects {
				if o.Kind == "Secret" {
					secrets[o.Metadata.Name] = o.StringData
				}
			}
			pod := mountPod(t, m, secrets)
			for _, name := range []string{config.EnvOAuthClientSecret, config.EnvSessionKey} {
				got, ok := pod.from[name]
				switch {
				case tt.ui && got != tt.secret+"/"+map[string]string{config.EnvOAuthClientSecret: "client-secret", config.EnvSessionKey: "session-key"}[name]:
					t.Errorf("%s comes from %q, want Secret %s", name, got, tt.secret)
				case !tt.ui && ok:
					t.Errorf("%s is set with ui off", name)
				}
			}
			for _, name := range []string{"GITHUB_APP_INTEGRATION_ID", "GITHUB_APP_WEBHOOK_SECRET", "GITHUB_APP_PRIVATE_KEY", "GITHUB_APP_PRIVATE_KEY_FILE",
				"RALPH_GATE_STORE_DSN", config.EnvOAuthClientID, config.EnvOAuthClientSecret, config.EnvSessionKey} {
				t.Setenv(name, "")
				os.Unsetenv(name)
			}
			for name, value := range pod.env {
				t.Setenv(name, value)
			}
			cfg, err := config.LoadFor(pod.path(t, pod.args[2]), config.ForServe, os.LookupEnv)
			if err != nil {
				t.Fatalf("the rendered config.yml does not load for serve: %v", err)
			}
			if cfg.UI.Enabled != tt.ui || cfg.PublicBase() != tt.publicURL {
				t.Fatalf("ui.enabled %v, server.public_url %q; want %v, %q", cfg.UI.Enabled, cfg.PublicBase(), tt.ui, tt.publicURL)
			}
			if tt.ui && (cfg.GitHub.OAuth.ClientID != "Iv1.0123456789abcdef" || cfg.GitHub.OAuth.ClientSecret == "" || len(cfg.UI.SessionKey) < 32) {
				t.Fatalf("the sign-in's settings did not reach serve: client %q", cfg.GitHub.OAuth.ClientID)
			}
			if cm := m.one(t, "ConfigMap").Data["config.yml"]; strings.Contains(cm, sessionKey) || strings.Contains(cm, "ci-placeholder-oauth-client-secret") {
				t.Error("a secret sits in the ConfigMap")
			}
		})
	}
}

func TestChartRefusesUIValuesThatCannotWork(t *testing.T) {
	t.Parallel()
	on := []string{"-f", chartDir + "/ci/ui-values.yaml"}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no client id", []string{"--set", "ui.oauthClientId="}, "ui.oauthClientId"},
		{"no public URL and no Ingress", []string{"--set", "ingress.enabled=false"}, "ui.publicUrl"},
		{"no client secret", []string{"--set", "ui.oauthClientSecret="}, "ui.oauthClientSecret"},
		{"no session key", []string{"--set", "ui.sessionKey="}, "ui.sessionKey"},
		{"a short session key", []string{"--set", "ui.sessionKey=short"}, "/ui/sessionKey"},
		{"a public URL with a path", []string{"--set", "ui.publicUrl=https://h.example.com/gate"}, "/ui/publicUrl"},
		{"config.ui by hand", []string{"--set", "config.ui.enabled=true"}, "config.ui: the chart renders this section itself"},
		{"config.github.oauth by hand", []string{"--set", "config.github.oauth.client_id=x"}, "config.github.oauth"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := helmTemplate(t, slices.Concat(on, tt.args)...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("helm template %v: %v, want a refusal naming %q", tt.args, err, tt.want)
			}
		})
	}
}
