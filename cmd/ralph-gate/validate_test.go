package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// validate refuses what serve would refuse: a store DSN that does not suit the driver (from
// the file or from RALPH_GATE_STORE_DSN) and a short webhook secret, each by key path, all at
// once, echoing neither a password nor the secret, and creating no file.
func TestValidateRefusesUnsafeStoreAndSecret(t *testing.T) {
	clearAppEnv(t)
	const password, secret = "hunter2-Pw", "tiny-s3cret"
	dir := t.TempDir()
	// Everything else serve needs is there: the App from the environment, a project.
	t.Setenv("GITHUB_APP_INTEGRATION_ID", "1001")
	t.Setenv("GITHUB_APP_PRIVATE_KEY_FILE", writeKeyFile(t, dir))
	t.Chdir(dir)
	write := func(name, text string) string {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte("projects: [{owner: acme, number: 1}]\n"+text), 0o600); err != nil {
			t.Fatal(err)
		}
		return name
	}
	pgURL := write("pg-url.yml", "store:\n  dsn: postgres://ralph:"+password+"@db:5432/ralph\n")
	libpq := write("libpq.yml", "store:\n  driver: sqlite\n  dsn: host=db user=ralph password="+password+" dbname=ralph\n")
	pgFile := write("pg-file.yml", "store:\n  driver: postgres\n  dsn: ralph-gate.db\n")
	both := write("both.yml", "github:\n  app:\n    webhook_secret: "+secret+"\nstore:\n  dsn: postgresql://ralph:"+password+"@db/ralph\n")
	plain := write("plain.yml", "store:\n  dsn: ralph-gate.db\n")
	const sound = "Zq4v8tN1xK7mR2pW9cL5"

	tests := []struct {
		name     string
		file     string
		env      map[string]string
		code     int
		contains []string
	}{
		{"postgres URL with the default driver", pgURL, map[string]string{"GITHUB_APP_WEBHOOK_SECRET": sound}, exitError, []string{"store.dsn: ", "store.driver", "postgres://xxxxx@db:5432/ralph", "1 problem(s)"}},
		{"libpq settings with sqlite", libpq, map[string]string{"GITHUB_APP_WEBHOOK_SECRET": sound}, exitError, []string{"store.dsn: ", "store.driver", "password=…"}},
		{"file path with postgres", pgFile, map[string]string{"GITHUB_APP_WEBHOOK_SECRET": sound}, exitError, []string{"store.dsn: ", "store.driver is postgres"}},
		{"every problem at once", both, nil, exitError, []string{"github.app.webhook_secret: ", "at least 16", "store.dsn: ", "2 problem(s)"}},
		{"postgres URL from the environment", plain, map[string]string{"RALPH_GATE_STORE_DSN": "postgres://ralph:" + password + "@db/ralph", "GITHUB_APP_WEBHOOK_SECRET": sound}, exitError,
			[]string{"store.dsn: ", "store.driver"}},
		{"short secret from the environment", plain, map[string]string{"GITHUB_APP_WEBHOOK_SECRET": secret}, exitError,
			[]string{"github.app.webhook_secret: ", "at least 16"}},
		{"sound file", plain, map[string]string{"GITHUB_APP_WEBHOOK_SECRET": sound}, exitOK, []string{"is valid for serve"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			code, out, errOut := runCLI(t, "", "validate", "--config", tt.file)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, out, errOut)
			}
			for _, want := range tt.contains {
				if !strings.Contains(out, want) {
					t.Errorf("stdout lacks %q:\n%s", want, out)
				}
			}
			if strings.Contains(out+errOut, password) || strings.Contains(out+errOut, secret) {
				t.Errorf("output echoes a secret:\n%s%s", out, errOut)
			}
		})
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".yml") && e.Name() != "app.pem" {
			t.Errorf("validate created %q", e.Name())
		}
	}
}
