package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ralph-gate/ralph-gate/app"
	"github.com/ralph-gate/ralph-gate/app/config"
	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/health"
	"github.com/ralph-gate/ralph-gate/store"
)

// runReport prints the health of the enforced projects from the store alone (no GitHub call):
// the same report the board_health MCP tool answers. When config.yml lists no projects, the
// enforced projects are those of each organization whose own policy is in force, as the store
// keeps it (reportOrgs).
func runReport(ctx context.Context, args []string, s streams) int {
	fs := newFlags("report", s)
	file := fs.String("config", "", "configuration file naming the projects, the store and the health thresholds (default: the embedded config.yml, which names no project: the projects are those of the organizations' policies in force; RALPH_GATE_STORE_DSN counts as for serve)")
	project := fs.String("project", "", "only this project, as owner/number (default: every enforced project)")
	asJSON := fs.Bool("json", false, "print the report as JSON (the board_health tool's answer)")
	facade := fs.Bool("facade", false, "print what agents did through the MCP façade over the last hour and day, per tool and per agent, instead of the projects' health (with --json: the answer's facade part)")
	driver := fs.String("driver", "", "store driver, overriding the config: sqlite or postgres (default with --dsn: postgres for a postgres:// URL, else sqlite)")
	dsn := fs.String("dsn", "", "store DSN, overriding the config: an existing SQLite file or a postgres:// URL")
	if code, ok := parseFlags(fs, args, s); !ok {
		return code
	}
	cfg, err := config.LoadFor(*file, config.ForFile, os.LookupEnv)
	if err != nil {
		var problems config.Problems
		if errors.As(err, &problems) {
			printProblems(s, "report", err, *file)
			return exitError
		}
		return fail(s, "report", exitError, "cannot read the configuration: "+err.Error(), "check --config")
	}
	if *facade && *project != "" {
		return fail(s, "report", exitUsage, "--facade covers every agent's calls, not one project's", "leave --project out, or --facade")
	}
	var only *enforce.ProjectRef
	if *project != "" {
		var names []string
		for _, q := range cfg.Projects {
			names = append(names, fmt.Sprintf("%s/%d", q.Owner, q.Number))
		}
		hint := "give one of " + strings.Join(names, ", ") + ", or leave --project out for all"
		if cfg.OrgPolicies() {
			hint = "give one as owner/number, or leave --project out for all" // (the store knows which)
		}
		p, err := health.ParseProject(*project)
		if err != nil {
			return fail(s, "report", exitUsage, "--project: "+err.Error(), hint)
		}
		only = &p
		if !cfg.OrgPolicies() {
			keep := slices.DeleteFunc(slices.Clone(cfg.Projects), func(q config.Project) bool {
				return !strings.EqualFold(q.Owner, p.Owner) || q.Number != p.Number
			})
			if len(keep) == 0 {
				return fail(s, "report", exitUsage, fmt.Sprintf("--project %s is not one of the configured projects", *project), hint)
			}
			cfg.Projects = keep
		}
	}
	setStore(&cfg, *driver, *dsn)
	st, err := store.OpenReadOnly(ctx, cfg.Store.Driver, cfg.Store.DSN)
	if err != nil {
		return fail(s, "report", exitError, storeProblem(err), storeHint(err, cfg.Store.Driver, cfg.Store.DSN, *dsn != ""))
	}
	defer st.Close()
	var behind *store.SchemaBehindError
	if errors.As(st.CheckSchema(ctx), &behind) {
		return fail(s, "report", exitError, fmt.Sprintf("the store's schema is at version %d, older than this ralph-gate's %d: it has no snapshot of the boards yet", behind.Applied, behind.Known),
			"upgrade the service first (it migrates the store when it starts), or run the report of the version it runs")
	}
	reader := app.HealthReader(cfg, st)
	var org *health.Org // the organization of --project, in org mode
	if cfg.OrgPolicies() && !*facade {
		orgs, err := reportOrgs(ctx, cfg, st)
		if err != nil {
			return fail(s, "report", exitError, "cannot read the organizations' policies: "+storeProblem(err), "check that the store is reachable and is the one the service writes")
		}
		if code, ok := orgs.check(s, only, *project); !ok {
			return code
		}
		if only != nil {
			o := orgs.of(*only)
			reader, org = app.HealthReader(o.cfg, st), &o.org
		}
	}
	rep, err := reader.Report(ctx, time.Now())
	if err != nil {
		return fail(s, "report", exitError, "cannot compute the report: "+storeProblem(err), "check that the store is reachable and is the one the service writes")
	}
	if org != nil {
		rep.Orgs = []health.Org{*org}
	}
	var out any = rep
	if *facade {
		out = rep.Facade
	}
	if *asJSON {
		enc := json.NewEncoder(s.out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return fail(s, "report", exitError, "cannot write the output: "+err.Error(), "")
		}
		return exitOK
	}
	if *facade {
		printFacade(s.out, rep.Facade)
		return exitOK
	}
	printReport(s.out, rep)
	return exitOK
}

// printFacade writes the façade's use for a person: over the last hour, then the last day,
// a table per tool and one per agent.
func printFacade(w io.Writer, f health.Facade) {
	for i, win := range []struct {
		name string
		w    health.FacadeWindow
	}{{"last hour", f.Hour}, {"last day", f.Day}} {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "Façade, %s (since %s): %d tool calls\n", win.name, win.w.Since.Format(time.RFC3339), win.w.Calls)
		if win.w.Calls == 0 {
			fmt.Fprintln(w, "  no agent called a tool")
			continue
		}
		for _, t := range []struct {
			head string
			rows []health.Usage
		}{{"TOOL", win.w.Tools}, {"AGENT", win.w.Agents}} {
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintf(tw, "  %s\tCALLS\tOK\tREFUSED\tERRORS\tRATE LIMITED\tGITHUB\tP50\tP99\tREFUSED BY RULE\n", t.head)
			for _, u := range t.rows {
				fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\n", u.Name, u.Calls, u.OK, u.Refused, u.Errors, u.RateLimited,
					u.GitHubRequests, health.QuantileText(u.P50Ms), health.QuantileText(u.P99Ms), byRule(u.RefusedBy))
			}
			tw.Flush()
		}
	}
}

// byRule is health.ByCount, "-" for none (a table's empty cell).
func byRule(m map[string]int) string { return cmp.Or(health.ByCount(m), "-") }

// setStore applies --driver and --dsn to the configuration, as audit does.
func setStore(cfg *config.Config, driver, dsn string) {
	if dsn != "" {
		cfg.Store.DSN = dsn
		if driver == "" {
			cfg.Store.Driver = store.DriverSQLite
			if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
				cfg.Store.Driver = store.DriverPostgres
			}
		}
	}
	if driver != "" {
		cfg.Store.Driver = driver
	}
}

// printReport writes a report for a person: which policy is in force for each organization
// whose policy comes from its own repository, then per project its states against their limits,
// locks, waits for a person, what to look at, and what the service reports of itself.
func printReport(w io.Writer, rep health.Report) {
	now := rep.GeneratedAt
	printOrgs(w, rep.Orgs)
	for i, p := range rep.Projects {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s/%d", p.Owner, p.Number)
		if p.SnapshotAt.IsZero() {
			fmt.Fprintf(w, ": %d items; no reconciliation has completed yet (titles, open and blockers unknown)\n", p.Items)
		} else {
			fmt.Fprintf(w, ": %d items; board read %s ago (%s)\n", p.Items, health.Age(now.Sub(p.SnapshotAt)), p.SnapshotAt.Format(time.RFC3339))
		}
		printMode(w, p)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  STATE\tKIND\tITEMS\tLIMIT")
		for _, st := range p.States {
			limit := ""
			if st.Limit > 0 {
				limit = fmt.Sprint(st.Limit)
				if st.Over {
					limit += "  OVER"
				}
			}
			fmt.Fprintf(tw, "  %s\t%s\t%d\t%s\n", st.Name, st.Kind, st.Count, limit)
		}
		if len(p.Unset) > 0 {
			fmt.Fprintf(tw, "  (no state)\t\t%d\t\n", len(p.Unset))
		}
		tw.Flush()
		if len(p.Locks) > 0 {
			fmt.Fprintf(w, "  Locks (%d, oldest first):\n", len(p.Locks))
			tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			for _, l := range p.Locks {
				mark := ""
				if l.Stale {
					mark = "STALE"
				}
				fmt.Fprintf(tw, "    %s\t%s\t%s\t%s\t%s\n", itemName(l.Item), l.Item.State, l.Holder, since(l.Since, l.Age), mark)
			}
			tw.Flush()
		}
		if len(p.HumanNeeded) > 0 {
			fmt.Fprintf(w, "  Waiting for a person (%d, longest first):\n", len(p.HumanNeeded))
			tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			for _, h := range p.HumanNeeded {
				mark := ""
				if h.Long {
					mark = "LONG"
				}
				fmt.Fprintf(tw, "    %s\t%s\t%s\t%s\n", itemName(h.Item), h.Item.State, since(h.Since, h.Age), mark)
			}
			tw.Flush()
		}
		if len(p.Hygiene) == 0 {
			fmt.Fprintln(w, "  Hygiene: nothing to look at")
		} else {
			fmt.Fprintf(w, "  Hygiene (%d, most pressing first):\n", len(p.Hygiene))
			for _, f := range p.Hygiene {
				fmt.Fprintf(w, "    %s: %s\n", f.Kind, f.Detail)
			}
		}
		fmt.Fprintf(w, "  Service: %s\n", runtimeLine(p.Runtime, now))
	}
}

// printMode says how a project is enforced and, under warn and evaluate, what enforce would
// have reverted: counts by rule and actor, and the newest moves.
func printMode(w io.Writer, p health.Project) {
	if p.Mode == "" || p.Mode == "enforce" {
		return
	}
	what := "nothing is reverted, commented or automated"
	if p.Mode == "warn" {
		what = "refused moves are explained, not reverted; nothing is automated"
	}
	fmt.Fprintf(w, "  Mode: %s (%s)\n", p.Mode, what)
	wr := p.WouldRevert
	if wr == nil {
		fmt.Fprintln(w, "  Enforce would have reverted: unknown until the first reconciliation")
		return
	}
	if wr.Count == 0 {
		fmt.Fprintf(w, "  Enforce would have reverted nothing since %s\n", wr.Since.Format(time.RFC3339))
		return
	}
	fmt.Fprintf(w, "  Enforce would have reverted %d moves since %s — by rule: %s; by actor: %s\n", wr.Count, wr.Since.Format(time.RFC3339),
		byRule(wr.ByRule), byRule(wr.ByActor))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, m := range wr.Moves[:min(len(wr.Moves), 10)] {
		fmt.Fprintf(tw, "    %s\t%s\t%s → %s\t%s\t%s\n", m.At.Format(time.RFC3339), itemName(m.Item), orNoState(m.From), orNoState(m.To), m.Actor, m.Rule)
	}
	tw.Flush()
	if len(wr.Moves) > 10 || wr.Count > len(wr.Moves) {
		fmt.Fprintf(w, "    … every one: ralph-gate audit --verdict would_revert\n")
	}
}

func orNoState(state string) string {
	if state == "" {
		return "(no state)"
	}
	return state
}

func itemName(it health.ItemRef) string {
	n := it.ItemID
	if it.Number > 0 {
		n = fmt.Sprintf("%s#%d", it.Repo, it.Number)
	}
	if it.Title != "" {
		n += fmt.Sprintf(" %q", it.Title)
	}
	return n
}

// since says how long ago something began ("for 5h10m"), or that nobody knows.
func since(t time.Time, age time.Duration) string {
	if t.IsZero() {
		return "since an unknown time"
	}
	return "for " + health.Age(age)
}

func ago(t, now time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return health.Age(now.Sub(t)) + " ago"
}

func runtimeLine(rt health.Runtime, now time.Time) string {
	queue := "queue unknown (no job table)"
	if rt.QueueDepth >= 0 {
		queue = fmt.Sprintf("%d jobs queued", rt.QueueDepth)
	}
	rate := "GitHub budget not reported yet"
	if rt.RateLimitKnown {
		rate = fmt.Sprintf("GitHub budget %d of %d left", rt.RateRemaining, rt.RateLimit)
		if !rt.RateReset.IsZero() {
			rate += fmt.Sprintf(" (resets %s)", rt.RateReset.Format(time.RFC3339))
		}
	}
	return fmt.Sprintf("%s; last reconciliation %s; last complete redelivery sweep %s; %s", queue, ago(rt.LastReconcile, now), ago(rt.LastSweep, now), rate)
}
