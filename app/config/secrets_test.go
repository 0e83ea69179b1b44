package config

import (
	"errors"
	dsninfo "github.com/ralph-gate/ralph-gate/internal/dsn"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// problemsOf parses text and returns its problems (nil when it is valid).
func problemsOf(t *testing.T, text string) Problems {
	t.Helper()
	_, err := Parse([]byte(text))
	if err == nil {
		return nil
	}
	var ps Problems
	if !errors.As(err, &ps) {
		t.Fatalf("Parse: want Problems, got %v", err)
	}
	return ps
}

// at returns the problems at path.
func at(ps Problems, path string) Problems {
	var out Problems
	for _, p := range ps {
		if p.Path == path {
			out = append(out, p)
		}
	}
	return out
}

// A DSN that does not suit the driver is refused by key path, naming both keys and never
// echoing a password: with sqlite (the default) a postgres URL would have become the name of
// a new file, password included.
func TestStoreDSNMustSuitTheDriver(t *testing.T) {
	const password = "hunter2-Pw"
	tests := []struct {
		name   string
		store  string
		wantOK bool
		want   []string // substrings of the store.dsn problem
	}{
		{"postgres URL, driver unset", "store: {dsn: 'postgres://ralph:" + password + "@db:5432/ralph'}", false,
			[]string{"store.driver", "postgres", "xxxxx@db:5432/ralph"}},
		{"postgresql URL, driver sqlite", "store: {driver: sqlite, dsn: 'postgresql://ralph:" + password + "@db/ralph?sslmode=require&password=" + password + "'}", false,
			[]string{"store.driver", "postgresql://xxxxx@db/ralph?…"}},
		{"postgres URL without slashes", "store: {dsn: 'postgres:ralph:" + password + "@db/ralph'}", false, []string{"store.driver"}},
		{"libpq key=value, driver unset", "store: {dsn: 'host=db user=ralph password=" + password + " dbname=ralph'}", false,
			[]string{"store.driver", "host=…", "password=…", "dbname=…"}},
		{"libpq with spaces around =", "store: {dsn: 'host = db password = " + password + "'}", false, []string{"store.driver"}},
		{"other URL scheme", "store: {dsn: 'mysql://ralph:" + password + "@db/ralph'}", false, []string{"store.driver", "mysql"}},
		{"password with slash and at", "store: {dsn: 'postgres://ralph:a/" + password + "@x@db/ralph'}", false, []string{"xxxxx@db/ralph"}},
		{"sqlite file path", "store: {dsn: data/ralph-gate.db}", true, nil},
		{"sqlite absolute path", "store: {driver: sqlite, dsn: /var/lib/ralph-gate/ralph-gate.db}", true, nil},
		{"sqlite file URI", "store: {dsn: 'file:ralph-gate.db?_pragma=busy_timeout(50)'}", true, nil},
		{"sqlite file:// URI", "store: {dsn: 'file:///var/lib/ralph-gate.db'}", true, nil},
		{"sqlite path with = but no libpq key", "store: {dsn: 'data/a=b.db'}", true, nil},
		{"postgres URL", "store: {driver: postgres, dsn: 'postgres://ralph:" + password + "@db:5432/ralph'}", true, nil},
		{"postgresql URL", "store: {driver: postgres, dsn: 'postgresql://db/ralph'}", true, nil},
		{"postgres key=value", "store: {driver: postgres, dsn: 'host=db dbname=ralph search_path=x'}", true, nil},
		{"postgres with a file path", "store: {driver: postgres, dsn: ralph-gate.db}", false, []string{"store.driver is postgres", "file path"}},
		{"postgres with a file URI", "store: {driver: postgres, dsn: 'file:ralph-gate.db'}", false, []string{"store.driver"}},
		{"postgres with another scheme", "store: {driver: postgres, dsn: 'mysql://db/ralph'}", false, []string{"store.driver", "mysql"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ps := at(problemsOf(t, tt.store+"\n"), "store.dsn")
			if tt.wantOK {
				if len(ps) > 0 {
					t.Fatalf("want no store.dsn problem, got %v", ps)
				}
				return
			}
			if len(ps) != 1 {
				t.Fatalf("want one store.dsn problem, got %v", ps)
			}
			msg := ps[0].String()
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("problem lacks %q: %s", w, msg)
				}
			}
			if strings.Contains(msg, password) {
				t.Errorf("problem echoes the password: %s", msg)
			}
		})
	}
}

// The DSN given through the environment is checked as well, and serve refuses it.
func TestStoreDSNFromEnvironmentMustSuitTheDriver(t *testing.T) {
	file := filepath.Join(t.TempDir(), "c.yml")
	if err := os.WriteFile(file, []byte("projects: [{owner: acme, number: 1}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := func(k string) (string, bool) {
		if k == EnvStoreDSN {
			return "postgres://ralph:hunter2-Pw@db:5432/ralph", true
		}
		return "", false
	}
	_, err := LoadFor(file, ForFile, env)
	if err == nil || !strings.Contains(err.Error(), "store.dsn: ") || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("want a redacted store.dsn problem, got %v", err)
	}
	clearKeyEnv(t)
	t.Setenv(EnvStoreDSN, "postgres://ralph:hunter2-Pw@db:5432/ralph")
	t.Setenv(EnvIntegrationID, "42")
	t.Setenv(EnvWebhookSecret, "Zq4v8tN1xK7mR2pW9cL5")
	t.Setenv(EnvPrivateKey, testKeyPEM(t))
	_, err = LoadFor(file, ForServe, os.LookupEnv)
	var ps Problems
	if !errors.As(err, &ps) || len(ps) != 1 || ps[0].Path != "store.dsn" {
		t.Fatalf("serve: want exactly the store.dsn problem, got %v", err)
	}
}

func TestRedactDSN(t *testing.T) {
	for dsn, want := range map[string]string{
		"postgres://u:p@host/db":                    "postgres://xxxxx@host/db",
		"postgres://host/db":                        "postgres://host/db",
		"postgres://u:p/w@x@host:5432/db?sslmode=1": "postgres://xxxxx@host:5432/db?…",
		"postgres://host/db?password=p":             "postgres://host/db?…",
		"POSTGRESQL://u@host/db#frag":               "POSTGRESQL://xxxxx@host/db?…",
		"postgres:u:p@host/db":                      "postgres:xxxxx@host/db",
	} {
		if got := dsninfo.RedactURL(dsn); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", dsn, got, want)
		}
	}
}

// A webhook secret shorter than 16 characters is refused by key path, wherever it comes from,
// without echoing it.
func TestWebhookSecretMinimumLength(t *testing.T) {
	const short = "tiny-s3cret" // 11 characters
	ps := at(problemsOf(t, "github: {app: {webhook_secret: "+short+"}}\n"), "github.app.webhook_secret")
	if len(ps) != 1 || !strings.Contains(ps[0].Message, "at least 16") || strings.Contains(ps[0].String(), short) {
		t.Fatalf("want one problem naming the minimum and not the secret, got %v", ps)
	}
	for secret, wantProblem := range map[string]bool{
		"x":                         true,
		"0123456789abcde":           true,  // 15
		"   0123456789abcd   ":      true,  // 14 once trimmed
		"0123456789abcdef":          false, // 16
		"Zq4v8tN1xK7mR2pW9cL5aB3dE": false,
	} {
		got := webhookSecretProblems(secret, true)
		if (len(got) > 0) != wantProblem {
			t.Errorf("secret of %d characters: problems %v, want a problem: %v", len(secret), got, wantProblem)
		}
	}
	// Unset is fine for validate, required for serve.
	if ps := problemsOf(t, "github: {app: {webhook_secret: ''}}\n"); len(at(ps, "github.app.webhook_secret")) > 0 {
		t.Errorf("an empty secret is serve's concern, not validate's: %v", ps)
	}
	cfg, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	if ps := at(cfg.ValidateServe(), "github.app.webhook_secret"); len(ps) != 1 || !strings.Contains(ps[0].Message, "is required") {
		t.Errorf("ValidateServe without a secret: %v", ps)
	}
	cfg.GitHub.App.WebhookSecret = short
	if ps := at(cfg.ValidateServe(), "github.app.webhook_secret"); len(ps) != 1 || strings.Contains(ps[0].String(), short) {
		t.Errorf("ValidateServe with a short secret: %v", ps)
	}

	// Through the environment, serve reports it once (Validate and ValidateServe both check).
	file := filepath.Join(t.TempDir(), "c.yml")
	if err := os.WriteFile(file, []byte("projects: [{owner: acme, number: 1}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	clearKeyEnv(t)
	t.Setenv(EnvIntegrationID, "42")
	t.Setenv(EnvWebhookSecret, short)
	t.Setenv(EnvPrivateKey, testKeyPEM(t))
	_, err = LoadFor(file, ForServe, os.LookupEnv)
	var all Problems
	if !errors.As(err, &all) || len(all) != 1 || all[0].Path != "github.app.webhook_secret" || strings.Contains(all.Error(), short) {
		t.Fatalf("serve: want exactly one github.app.webhook_secret problem, got %v", err)
	}
}

// Every problem is reported at once: a bad DSN does not hide a short secret or a bad port.
func TestSecurityProblemsAreAllReported(t *testing.T) {
	ps := problemsOf(t, "server: {port: 70000}\ngithub: {app: {webhook_secret: short}}\nstore: {dsn: 'postgres://u:pw@db/x'}\n")
	for _, path := range []string{"server.port", "github.app.webhook_secret", "store.dsn"} {
		if len(at(ps, path)) != 1 {
			t.Errorf("want one %s problem, got %v", path, ps)
		}
	}
}
