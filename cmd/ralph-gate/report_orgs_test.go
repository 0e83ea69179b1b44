package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/health"
	"github.com/ralph-gate/ralph-gate/store"
)

// orgsReportStore is reportStore's store with config.yml listing no projects (the policies in
// the organizations' repositories) and, when policy is set, acme's policy kept in force; globex
// has only a refused push, and so nothing in force.
func orgsReportStore(t *testing.T, policy string) (dsn, cfgFile string) {
	t.Helper()
	dsn, _ = reportStore(t)
	ctx := context.Background()
	st, err := store.Open(ctx, store.DriverSQLite, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	at := time.Date(2026, 11, 27, 9, 30, 0, 0, time.UTC)
	if policy != "" {
		if err := st.PutOrgPolicy(ctx, store.OrgPolicy{Owner: "acme", InstallationID: 2002, SHA: "0123456789abcdef0123456789abcdef01234567", Text: policy, LoadedAt: at}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.RefuseOrgPolicy(ctx, "globex", 3003, "fedcba9876543210fedcba9876543210fedcba98", "projects[0].mode (line 3): unknown mode", at); err != nil {
		t.Fatal(err)
	}
	cfgFile = filepath.Join(filepath.Dir(dsn), "org-mode.yml")
	if err := os.WriteFile(cfgFile, []byte("store: {driver: sqlite, dsn: "+dsn+"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return dsn, cfgFile
}

// With the policies in the organizations' repositories (config.yml lists no projects), report
// reports the projects of every organization whose policy is in force, from the store, each
// with its mode — the evaluate phase docs/INSTALL.md prescribes — and --project picks one of
// them. Only when no organization's policy is in force does it say there is nothing to report.
func TestReportOfTheOrganizationsPolicies(t *testing.T) {
	_, cfgFile := orgsReportStore(t, "projects:\n  - number: 1\n  - {number: 2, mode: evaluate}\n")
	tests := []struct {
		name     string
		args     []string
		code     int
		contains []string
		absent   []string
	}{
		{name: "every project in force", args: []string{"--config", cfgFile}, code: exitOK, contains: []string{
			"acme/1: 5 items; board read", "Locks (1, oldest first):",
			"acme/2: 0 items; no reconciliation has completed yet", "Mode: evaluate (nothing is reverted, commented or automated)",
			"Policy of acme: commit 0123456789ab in force since 2026-11-27T09:30:00Z",
			"Policy of globex: none in force (none of its projects is enforced); push fedcba987654 refused",
		}},
		{name: "one of them", args: []string{"--config", cfgFile, "--project", "acme/2"}, code: exitOK,
			contains: []string{"acme/2: 0 items", "Mode: evaluate", "Policy of acme: commit 0123456789ab"}, absent: []string{"acme/1", "globex"}},
		{name: "one in any case", args: []string{"--config", cfgFile, "--project", "ACME/1"}, code: exitOK,
			contains: []string{"acme/1: 5 items"}, absent: []string{"acme/2"}},
		{name: "a project no policy in force lists", args: []string{"--config", cfgFile, "--project", "acme/3"}, code: exitUsage,
			contains: []string{"ralph-gate report: --project acme/3 is not one of the projects of the organizations' policies in force; give one of acme/1, acme/2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, "", append([]string{"report"}, tt.args...)...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, out, errOut)
			}
			for _, want := range tt.contains {
				if !strings.Contains(out+errOut, want) {
					t.Errorf("output lacks %q:\n%s%s", want, out, errOut)
				}
			}
			for _, not := range tt.absent {
				if strings.Contains(out, not) {
					t.Errorf("output has %q:\n%s", not, out)
				}
			}
		})
	}
	t.Run("json", func(t *testing.T) {
		code, out, errOut := runCLI(t, "", "report", "--config", cfgFile, "--json")
		var rep health.Report
		if code != exitOK || json.Unmarshal([]byte(out), &rep) != nil || len(rep.Projects) != 2 || rep.Projects[1].Mode != "evaluate" || len(rep.Orgs) != 2 {
			t.Fatalf("exit %d: %s%s", code, out, errOut)
		}
	})
	t.Run("a policy that does not fit this configuration", func(t *testing.T) {
		_, cfgFile := orgsReportStore(t, "projects:\n  - number: 1\nmcp:\n  agents:\n    - {name: builder-1}\n")
		code, out, errOut := runCLI(t, "", "report", "--config", cfgFile)
		if code != exitError || out != "" || !strings.Contains(errOut, "ralph-gate report: the configuration names no project, and the organizations' policies in force do not validate against it: acme's (mcp.agents[0].name") ||
			!strings.Contains(errOut, "; give --config with the file the service runs with") {
			t.Errorf("exit %d\n%s%s", code, out, errOut)
		}
	})
	t.Run("no policy in force", func(t *testing.T) {
		dsn, cfgFile := orgsReportStore(t, "")
		for _, args := range [][]string{{"--config", cfgFile}, {"--dsn", dsn}, {"--config", cfgFile, "--project", "acme/1"}} {
			code, out, errOut := runCLI(t, "", append([]string{"report"}, args...)...)
			if code != exitError || out != "" || !strings.Contains(errOut,
				"ralph-gate report: the configuration names no project, and no organization's policy is in force yet: nothing is enforced to report on") {
				t.Errorf("%v: exit %d\n%s%s", args, code, out, errOut)
			}
		}
	})
}
