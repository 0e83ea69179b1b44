package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/store"
)

// With the policies in the organizations' repositories, doctor says which commit's policy is
// in force for each organization the App is installed on (from the store serve uses), that a
// newer push was refused, and that an organization with none enforces nothing; it checks the
// boards of the projects of each policy in force, as for config.yml's.
func TestDoctorSaysWhichPolicyIsInForce(t *testing.T) {
	clearAppEnv(t)
	file := startSim(t, func(s string) string {
		return s + "orgs:\n  - {login: globex, installation_id: 3003, repos: [web]}\n"
	}, nil)
	dsn := filepath.Join(t.TempDir(), "ralph-gate.db")
	st, err := store.Open(context.Background(), store.DriverSQLite, dsn)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 27, 9, 30, 0, 0, time.UTC)
	if err := st.PutOrgPolicy(context.Background(), store.OrgPolicy{Owner: "acme", InstallationID: 2002, SHA: "0123456789abcdef0123456789abcdef01234567", Text: "projects: [{number: 1}]\n", LoadedAt: at}); err != nil {
		t.Fatal(err)
	}
	if err := st.RefuseOrgPolicy(context.Background(), "acme", 2002, "fedcba9876543210fedcba9876543210fedcba98", "projects[0].mode (line 3): unknown mode\nworkflow: x", at.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	st.Close()
	editConfig(t, file, func(c map[string]any) {
		delete(c, "projects")
		c["store"] = map[string]any{"driver": "sqlite", "dsn": dsn}
	})
	_, out, errOut := runCLI(t, "", "doctor", "--config", file)
	for _, want := range []string{
		"ok    installation: 2002 on acme",
		"ok    policy of acme: acme/.github/ralph-gate.yml at 0123456789ab in force since 2026-11-27T09:30:00Z",
		"warn  policy of acme: the push of acme/.github/ralph-gate.yml at fedcba987654 was refused (projects[0].mode (line 3): unknown mode; and 1 more): the policy above stays in force",
		`ok    project acme/1: field "Workflow State" has exactly the workflow's 11 states`,
		"ok    installation: 3003 on globex",
		"warn  policy of globex: no valid policy has been read: none of globex's projects is enforced",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s\n%s", want, out, errOut)
		}
	}
}
