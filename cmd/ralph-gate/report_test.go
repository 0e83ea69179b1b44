package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ralph-gate/ralph-gate/app"
	"github.com/ralph-gate/ralph-gate/app/config"
	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/ghboard"
	"github.com/ralph-gate/ralph-gate/ghsim"
	"github.com/ralph-gate/ralph-gate/health"
	"github.com/ralph-gate/ralph-gate/mcpserver"
	"github.com/ralph-gate/ralph-gate/mcpserver/toolspec"
	"github.com/ralph-gate/ralph-gate/policy"
	"github.com/ralph-gate/ralph-gate/store"
)

const reportSeed = `org: acme
app: {id: 1001, slug: ralph-gate, installation_id: 2002, webhook_secret: s3cret}
users:
  - {login: alice, token: alice-token}
repos: [app]
projects:
  - number: 1
    title: Ralph
    fields:
      Workflow State: [Backlog, Research Needed, Research in Progress, Ready for Plan, Plan in Progress, Plan in Review, In Progress, In Review, Human Needed, Done, Canceled]
issues:
  - {repo: app, number: 1, title: Closed blocker, state: closed, project: 1, fields: {Workflow State: Done}}
  - {repo: app, number: 2, title: Ready to plan, blocked_by: [1], project: 1, fields: {Workflow State: Ready for Plan}}
  - {repo: app, number: 3, title: Being built, project: 1, fields: {Workflow State: In Progress}}
  - {repo: app, number: 4, title: Needs a person, project: 1, fields: {Workflow State: Human Needed}}
  - {repo: app, number: 5, title: Untriaged, project: 1}
`

type basicAuth string

func (b basicAuth) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// reportStore is a store as the service leaves it after one reconciliation of a simulated
// board (records, the snapshot, the pass's status), with an agent's lock taken 5 hours ago, and
// a configuration file naming the project.
func reportStore(t *testing.T) (dsn, cfgFile string) {
	t.Helper()
	ctx := context.Background()
	seed, err := ghsim.ParseSeed([]byte(reportSeed))
	if err != nil {
		t.Fatal(err)
	}
	sim, err := ghsim.New(seed, ghsim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	simCtx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	url, err := sim.Start(simCtx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	board := ghboard.New(ghboard.NewClient(&http.Client{Transport: basicAuth("alice-token")}, url+"/api/graphql"), "Workflow State", ghboard.NewFieldCache())

	dir := t.TempDir()
	dsn = filepath.Join(dir, "ralph-gate.db")
	st, err := store.Open(ctx, store.DriverSQLite, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	m, problems := policy.Compile(policy.DefaultSpec())
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	svc := enforce.New(m, policy.Actors{Agents: []string{"agent-*"}}, st, nil, enforce.Options{AppLogin: "ralph-gate[bot]"})
	rep, err := svc.Reconciler.Reconcile(ctx, board, st, enforce.ProjectRef{Owner: "acme", Number: 1}, enforce.ReconcileOptions{})
	if err != nil || !rep.Complete || rep.Adopted != 5 {
		t.Fatalf("reconcile: %+v %v", rep, err)
	}
	page, err := board.ProjectItems(ctx, "acme", 1, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range page.Items {
		if it.Number == 3 {
			if ok, err := st.ClaimLock(ctx, it.ID, "agent-1", time.Now().Add(-5*time.Hour)); err != nil || !ok {
				t.Fatalf("claim: %v %v", ok, err)
			}
		}
	}
	cfgFile = filepath.Join(dir, "ralph-gate.yml")
	if err := os.WriteFile(cfgFile, []byte("projects: [{owner: acme, number: 1}]\nstore: {driver: sqlite, dsn: "+dsn+"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return dsn, cfgFile
}

// timeless blanks what depends on the moment a report is computed, which two reads of one
// store never share.
func timeless(r health.Report) health.Report {
	r.GeneratedAt = time.Time{}
	for i := range r.Projects {
		p := &r.Projects[i]
		for j := range p.Locks {
			p.Locks[j].Age = 0
		}
		for j := range p.HumanNeeded {
			p.HumanNeeded[j].Age = 0
		}
		for j := range p.Hygiene {
			p.Hygiene[j].Detail = ""
		}
	}
	return r
}

func TestReport(t *testing.T) {
	dsn, cfgFile := reportStore(t)
	tests := []struct {
		name     string
		args     []string
		code     int
		contains []string
	}{
		{name: "text", args: []string{"--config", cfgFile}, code: exitOK, contains: []string{
			"acme/1: 5 items; board read", "Ready for Plan", "In Progress", "Locks (1, oldest first):",
			`acme/app#3 "Being built"`, "agent-1", "STALE", "Waiting for a person (1, longest first):", `acme/app#4 "Needs a person"`,
			"stale_lock: ", "unblocked_waiting: acme/app#2", "unset_state: acme/app#5", "queue unknown (no job table)",
			"last complete redelivery sweep never"}},
		{name: "one project", args: []string{"--config", cfgFile, "--project", "ACME/1"}, code: exitOK, contains: []string{"acme/1: 5 items"}},
		{name: "the store by --dsn", args: []string{"--config", cfgFile, "--dsn", dsn, "--json"}, code: exitOK, contains: []string{`"owner": "acme"`, `"kind": "stale_lock"`}},
		{name: "a project not configured", args: []string{"--config", cfgFile, "--project", "acme/2"}, code: exitUsage,
			contains: []string{"ralph-gate report: --project acme/2 is not one of the configured projects; give one of acme/1"}},
		{name: "not a project", args: []string{"--config", cfgFile, "--project", "acme"}, code: exitUsage,
			contains: []string{`ralph-gate report: --project: "acme" is not a project: want owner/number`}},
		{name: "no project configured", args: []string{"--dsn", dsn}, code: exitError,
			contains: []string{"ralph-gate report: the configuration names no project, and no organization's policy is in force yet: nothing is enforced to report on; give --config"}},
		{name: "no store there", args: []string{"--config", cfgFile, "--dsn", filepath.Join(t.TempDir(), "missing.db")}, code: exitError,
			contains: []string{"no ralph-gate store", "the file does not exist"}},
		{name: "a positional argument", args: []string{"acme/1"}, code: exitUsage, contains: []string{`unexpected argument "acme/1"`}},
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
			if code != exitOK && (out != "" || strings.Count(errOut, "\n") != 1) {
				t.Errorf("an error is one line on stderr and nothing on stdout:\nstdout: %q\nstderr: %q", out, errOut)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(dsn), "missing.db")); !os.IsNotExist(err) {
		t.Errorf("report created a store: %v", err)
	}
}

// `ralph-gate report --json` and the board_health tool answer the same report for the same
// store: both are app.HealthReader over it.
func TestReportMatchesBoardHealth(t *testing.T) {
	dsn, cfgFile := reportStore(t)
	code, out, errOut := runCLI(t, "", "report", "--config", cfgFile, "--json")
	if code != exitOK {
		t.Fatalf("report: exit %d: %s", code, errOut)
	}
	var fromCLI health.Report
	if err := json.Unmarshal([]byte(out), &fromCLI); err != nil {
		t.Fatal(err)
	}

	ctx := context.Background()
	cfg, err := config.Load(cfgFile)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.OpenReadOnly(ctx, store.DriverSQLite, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	m, err := cfg.Machine()
	if err != nil {
		t.Fatal(err)
	}
	svc := enforce.New(m, cfg.PolicyActors(""), st, nil, enforce.Options{})
	srv := mcpserver.New(mcpserver.Options{Facade: svc.Facade, Projects: []enforce.ProjectRef{{Owner: "acme", Number: 1}},
		Agent: "agent-1", Health: app.HealthReader(cfg, st)})
	ct, stt := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, stt, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: toolspec.BoardHealth, Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("board_health: %v %+v", err, res)
	}
	data, _ := json.Marshal(res.StructuredContent)
	var fromMCP health.Report
	if err := json.Unmarshal(data, &fromMCP); err != nil {
		t.Fatal(err)
	}
	if len(fromCLI.Projects) != 1 || fromCLI.Projects[0].Items != 5 || len(fromCLI.Projects[0].Hygiene) == 0 {
		t.Fatalf("the report is thin: %+v", fromCLI)
	}
	if a, b := timeless(fromCLI), timeless(fromMCP); !reflect.DeepEqual(a, b) {
		ja, _ := json.MarshalIndent(a, "", " ")
		jb, _ := json.MarshalIndent(b, "", " ")
		t.Fatalf("report --json and board_health differ:\n%s\n---\n%s", ja, jb)
	}
}
