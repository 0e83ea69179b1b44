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
		s = strings.Replace(s, "repos: [app]", "repos:\n  - app\n  - {name: .github, files: {ralph-gate.yml: \"projects: [{number: 1}]\\n\"}}", 1)
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
		"warn  policy of globex: no policy file yet: globex has no repository .github, so none of globex's projects is enforced",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s\n%s", want, out, errOut)
		}
	}
}

// An organization with no policy file has had no push refused: doctor says there is no file
// yet, and which repository and file to create — whether the organization has no .github
// repository, or one without the file (which serve records, at start or install, as a read
// of its head that found nothing). "Refused" is only for a push whose file was refused.
func TestDoctorSaysWhenThereIsNoPolicyFileYet(t *testing.T) {
	clearAppEnv(t)
	file := startSim(t, func(s string) string {
		s = strings.Replace(s, "repos: [app]", "repos:\n  - app\n  - {name: .github, files: {profile/README.md: \"Acme\\n\"}}", 1)
		return s + "orgs:\n  - {login: globex, installation_id: 3003, repos: [web]}\n"
	}, nil)
	dsn := filepath.Join(t.TempDir(), "ralph-gate.db")
	st, err := store.Open(context.Background(), store.DriverSQLite, dsn)
	if err != nil {
		t.Fatal(err)
	}
	// What serve keeps of acme's read at its head: the file is missing.
	if err := st.RefuseOrgPolicy(context.Background(), "acme", 2002, "0123456789abcdef0123456789abcdef01234567",
		"(file): acme/.github has no ralph-gate.yml: the organization's last valid policy stays in force (with none, none of its projects is enforced)",
		time.Date(2026, 11, 27, 9, 30, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	st.Close()
	editConfig(t, file, func(c map[string]any) {
		delete(c, "projects")
		c["store"] = map[string]any{"driver": "sqlite", "dsn": dsn}
	})
	_, out, errOut := runCLI(t, "", "doctor", "--config", file)
	for _, want := range []string{
		"warn  policy of acme: no policy file yet: acme/.github has no ralph-gate.yml, so none of acme's projects is enforced",
		"fix: create ralph-gate.yml in the repository acme/.github, on its default branch, listing the projects to enforce",
		"warn  policy of globex: no policy file yet: globex has no repository .github, so none of globex's projects is enforced",
		"fix: create the repository globex/.github, and in it ralph-gate.yml listing the projects to enforce",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s\n%s", want, out, errOut)
		}
	}
	for _, not := range []string{"refused", "no valid policy has been read"} {
		if strings.Contains(out, not) {
			t.Errorf("output has %q, though no push was made:\n%s", not, out)
		}
	}
}

// A refused push is named only as what it did: with no policy in force, nothing is enforced
// (not "the policy above stays"); a policy in force whose file was removed since stays in
// force, and doctor says the file is gone rather than that a push was refused.
func TestDoctorSaysWhatARefusalLeaves(t *testing.T) {
	clearAppEnv(t)
	at := time.Date(2026, 11, 27, 9, 30, 0, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		files string // acme/.github's
		setup func(*store.Store) error
		want  []string
		not   []string
	}{
		{"a refused push, nothing in force", `{ralph-gate.yml: "projects: [{number: 1, mode: evaluat}]\\n"}`,
			func(st *store.Store) error {
				return st.RefuseOrgPolicy(context.Background(), "acme", 2002, "fedcba9876543210fedcba9876543210fedcba98", "projects[0].mode (line 1): unknown mode", at)
			},
			[]string{"warn  policy of acme: no valid policy has been read: none of acme's projects is enforced",
				"warn  policy of acme: the push of acme/.github/ralph-gate.yml at fedcba987654 was refused (projects[0].mode (line 1): unknown mode): none of acme's projects is enforced"},
			[]string{"the policy above stays in force", "no policy file yet"}},
		{"a file not read yet", `{ralph-gate.yml: "projects: [{number: 1}]\\n"}`, func(*store.Store) error { return nil },
			[]string{"warn  policy of acme: acme/.github/ralph-gate.yml exists, but serve has not read it yet: none of acme's projects is enforced"},
			[]string{"refused", "no policy file yet"}},
		{"in force, the file removed since", `{profile/README.md: "Acme\\n"}`,
			func(st *store.Store) error {
				if err := st.PutOrgPolicy(context.Background(), store.OrgPolicy{Owner: "acme", InstallationID: 2002, SHA: "0123456789abcdef0123456789abcdef01234567",
					Text: "projects: [{number: 1}]\n", LoadedAt: at}); err != nil {
					return err
				}
				return st.RefuseOrgPolicy(context.Background(), "acme", 2002, "fedcba9876543210fedcba9876543210fedcba98",
					"(file): acme/.github has no ralph-gate.yml: the organization's last valid policy stays in force (with none, none of its projects is enforced)", at)
			},
			[]string{"ok    policy of acme: acme/.github/ralph-gate.yml at 0123456789ab in force since 2026-11-27T09:30:00Z",
				"warn  policy of acme: acme/.github/ralph-gate.yml is gone from the default branch: the policy above stays in force"},
			[]string{"refused", "no policy file yet"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := startSim(t, func(s string) string {
				return strings.Replace(s, "repos: [app]", "repos:\n  - app\n  - {name: .github, files: "+tc.files+"}", 1)
			}, nil)
			dsn := filepath.Join(t.TempDir(), "ralph-gate.db")
			st, err := store.Open(context.Background(), store.DriverSQLite, dsn)
			if err != nil {
				t.Fatal(err)
			}
			if err := tc.setup(st); err != nil {
				t.Fatal(err)
			}
			st.Close()
			editConfig(t, file, func(c map[string]any) {
				delete(c, "projects")
				c["store"] = map[string]any{"driver": "sqlite", "dsn": dsn}
			})
			_, out, errOut := runCLI(t, "", "doctor", "--config", file)
			for _, want := range tc.want {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s\n%s", want, out, errOut)
				}
			}
			for _, not := range tc.not {
				if strings.Contains(out, not) {
					t.Errorf("output has %q:\n%s", not, out)
				}
			}
		})
	}
}

// doctor says which organizations are served: with no organizations listed, a warning when the
// App is installed beyond its owner (it is public); with a list, an installation it does not
// name is ignored (its policy not checked), and a team of policy admins needs the Members
// permission.
func TestDoctorSaysWhichOrganizationsAreServed(t *testing.T) {
	clearAppEnv(t)
	tests := []struct {
		name      string
		orgs      []any
		want, not []string
	}{
		{"no list, a public App", nil,
			[]string{"warn  organizations: the App is installed on globex besides its owner acme (it is public), and config.yml lists no organizations",
				"fix: list the organizations this deployment serves in config.yml's organizations"},
			nil},
		{"a list", []any{map[string]any{"login": "acme", "policy_admins": []any{"@acme/platform"}}},
			[]string{"installed on globex, which config.yml's organizations does not list: serve ignores it",
				"installation on acme: permission members is \"none\", ralph-gate needs read for the board health pages' sign-in (ui.enabled) and the teams named as policy admins"},
			[]string{"policy of globex", "(it is public)"}},
		{"a list naming an organization without the App", []any{map[string]any{"login": "acme"}, map[string]any{"login": "initech"}},
			[]string{"warn  organizations: initech is listed in config.yml's organizations, but the App is not installed there"},
			nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := startSim(t, func(s string) string {
				s = strings.Replace(s, "repos: [app]", "repos:\n  - app\n  - {name: .github, files: {ralph-gate.yml: \"projects: [{number: 1}]\\n\"}}", 1)
				return s + "orgs:\n  - {login: globex, installation_id: 3003, repos: [web]}\n"
			}, nil)
			dsn := filepath.Join(t.TempDir(), "ralph-gate.db")
			st, err := store.Open(context.Background(), store.DriverSQLite, dsn)
			if err != nil {
				t.Fatal(err)
			}
			st.Close()
			editConfig(t, file, func(c map[string]any) {
				delete(c, "projects")
				c["store"] = map[string]any{"driver": "sqlite", "dsn": dsn}
				if tt.orgs != nil {
					c["organizations"] = tt.orgs
				}
			})
			_, out, errOut := runCLI(t, "", "doctor", "--config", file)
			for _, want := range tt.want {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s\n%s", want, out, errOut)
				}
			}
			for _, not := range tt.not {
				if strings.Contains(out, not) {
					t.Errorf("output has %q:\n%s", not, out)
				}
			}
		})
	}
}
