package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/ralph-gate/ralph-gate/app/config"
	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/store"
)

func runAudit(ctx context.Context, args []string, s streams) int {
	fs := newFlags("audit", s)
	file := fs.String("config", "", "configuration file naming the store (default: the embedded config.yml; RALPH_GATE_STORE_DSN counts as for serve)")
	item := fs.Int("item", 0, "only this issue number")
	repo := fs.String("repo", "", "with --item: only this repository (owner/name)")
	since := fs.String("since", "", "only decisions at or after this time (RFC 3339, or a duration such as 1h meaning that long ago)")
	limit := fs.Int("limit", 100, "at most this many (the newest); 0 = all")
	verdict := fs.String("verdict", "", "only decisions of this verdict: "+verdictList()+" (would_revert: the refused moves a project in warn or evaluate mode let stand)")
	asJSON := fs.Bool("json", false, "print JSON lines instead of a table")
	policyChanges := fs.Bool("policy", false, "list the changes of the organizations' policy files instead: each push taken in, who pushed it, its outcome (in_force, refused, not_newer, unchanged) and what it changed")
	org := fs.String("org", "", "with --policy: only this organization's")
	driver := fs.String("driver", "", "store driver, overriding the config: sqlite or postgres (default with --dsn: postgres for a postgres:// URL, else sqlite)")
	dsn := fs.String("dsn", "", "store DSN, overriding the config: an existing SQLite file or a postgres:// URL")
	if code, ok := parseFlags(fs, args, s); !ok {
		return code
	}
	if *limit < 0 {
		return fail(s, "audit", exitUsage, fmt.Sprintf("--limit %d is negative", *limit), "give 0 for every decision, or how many of the newest to print")
	}
	filter := store.AuditFilter{IssueNumber: *item, Repo: *repo, Limit: *limit, Verdict: enforce.Verdict(*verdict)}
	if *verdict != "" && !filter.Verdict.Recorded() {
		return fail(s, "audit", exitUsage, fmt.Sprintf("--verdict %q is not a verdict the audit log records", *verdict), "give one of "+verdictList())
	}
	if *since != "" {
		t, err := parseSince(*since, time.Now())
		if err != nil {
			return fail(s, "audit", exitUsage, "--since: "+err.Error(), "give a duration such as --since 1h, or a time such as --since 2026-11-01T12:00:00Z")
		}
		filter.Since = t
	}
	cfg, err := config.LoadFor(*file, config.ForFile, os.LookupEnv)
	if err != nil {
		var problems config.Problems
		if errors.As(err, &problems) {
			printProblems(s, "audit", err, *file) // every problem by its key path
			return exitError
		}
		return fail(s, "audit", exitError, "cannot read the configuration: "+err.Error(), "check --config, or leave it out to use the embedded config.yml with --dsn")
	}
	if *dsn != "" {
		cfg.Store.DSN = *dsn
		if *driver == "" {
			cfg.Store.Driver = store.DriverSQLite
			if strings.HasPrefix(*dsn, "postgres://") || strings.HasPrefix(*dsn, "postgresql://") {
				cfg.Store.Driver = store.DriverPostgres
			}
		}
	}
	if *driver != "" {
		cfg.Store.Driver = *driver
	}
	st, err := store.OpenReadOnly(ctx, cfg.Store.Driver, cfg.Store.DSN)
	if err != nil {
		return fail(s, "audit", exitError, storeProblem(err), storeHint(err, cfg.Store.Driver, cfg.Store.DSN, *dsn != ""))
	}
	defer st.Close()
	behind := st.CheckSchema(ctx)
	var sb *store.SchemaBehindError
	if errors.As(behind, &sb) {
		fail(s, "audit", exitOK, fmt.Sprintf("warning: the store's schema is at version %d, older than this ralph-gate's %d", sb.Applied, sb.Known),
			"the service writing it runs an older version or has not started since an upgrade; decisions are read as they are")
	}
	if *policyChanges {
		return printPolicyChanges(ctx, s, st, store.PolicyChangeFilter{Owner: *org, Since: filter.Since, Limit: *limit}, *asJSON)
	}
	if *org != "" {
		return fail(s, "audit", exitUsage, "--org selects the policy changes of an organization", "give it with --policy")
	}
	entries, err := st.QueryAudit(ctx, filter)
	// In the order ralph-gate recorded its decisions: an automated move is dated at the move
	// that caused it, which can be older than a decision recorded before it.
	slices.SortStableFunc(entries, func(a, b enforce.AuditEntry) int { return cmp.Compare(a.ID, b.ID) })
	if err != nil {
		hint := "check that the store is reachable and is the one the service writes"
		if sb != nil {
			hint = "the store's schema is older than this ralph-gate's: read it with the version the service runs, or upgrade the service first"
		}
		return fail(s, "audit", exitError, "cannot read the audit log: "+storeProblem(err), hint)
	}
	if *asJSON {
		enc := json.NewEncoder(s.out)
		for _, e := range entries {
			if err := enc.Encode(auditJSON(e)); err != nil {
				return fail(s, "audit", exitError, "cannot write the output: "+err.Error(), "")
			}
		}
		return exitOK
	}
	printAudit(s, entries)
	return exitOK
}

// storeProblem is a store error as the CLI says it (without the package's "store: " prefix).
// (pgx's connection errors span several lines: they are joined into one).
func storeProblem(err error) string {
	return strings.Join(strings.Fields(strings.TrimPrefix(err.Error(), "store: ")), " ")
}

// storeHint says what to do about a store that would not open for reading.
func storeHint(err error, driver, dsn string, fromFlag bool) string {
	where := "store.dsn in the configuration (--config) or RALPH_GATE_STORE_DSN"
	if fromFlag {
		where = "--dsn"
	}
	if !errors.Is(err, store.ErrNoStore) {
		return "check " + where + " (and --driver), and that the database is up and readable"
	}
	hint := "check " + where + ": it must name the store the service writes, which 'ralph-gate serve' creates on its first start"
	if driver != store.DriverPostgres && dsn != "" && !strings.HasPrefix(dsn, "file:") && !filepath.IsAbs(dsn) {
		if wd, werr := os.Getwd(); werr == nil {
			hint += fmt.Sprintf(" (the relative path %s is taken from the current directory, %s)", dsn, wd)
		}
	}
	return hint
}

func parseSince(v string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(v); err == nil {
		return now.Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is neither an RFC 3339 time nor a duration", v)
	}
	return t, nil
}

type auditLine struct {
	At         time.Time `json:"at"`
	Verdict    string    `json:"verdict"`
	Repo       string    `json:"repo,omitempty"`
	Issue      int       `json:"issue,omitempty"`
	Item       string    `json:"item"`
	Actor      string    `json:"actor"`
	ActorKind  string    `json:"actor_kind"`
	From       string    `json:"from"`
	To         string    `json:"to"`
	Rule       string    `json:"rule,omitempty"`
	Reason     string    `json:"reason"`
	Cause      string    `json:"cause,omitempty"`
	DeliveryID string    `json:"delivery_id,omitempty"`
}

func auditJSON(e enforce.AuditEntry) auditLine {
	return auditLine{At: e.At, Verdict: string(e.Verdict), Repo: e.Repo, Issue: e.IssueNumber, Item: e.ItemID,
		Actor: e.Actor, ActorKind: e.ActorKind, From: e.FromState, To: e.ToState, Rule: e.Rule,
		Reason: e.Reason, Cause: e.Cause, DeliveryID: e.DeliveryID}
}

func printAudit(s streams, entries []enforce.AuditEntry) {
	if len(entries) == 0 {
		fmt.Fprintln(s.out, "no decisions recorded")
		return
	}
	tw := tabwriter.NewWriter(s.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tVERDICT\tISSUE\tACTOR\tFROM\tTO\tREASON")
	for _, e := range entries {
		issue := "-"
		if e.IssueNumber > 0 {
			issue = fmt.Sprintf("%s#%d", e.Repo, e.IssueNumber)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.At.Format(time.RFC3339), e.Verdict, terminalText(issue),
			actorText(e), terminalText(orNone(e.FromState)), terminalText(orNone(e.ToState)), terminalText(e.Reason))
	}
	tw.Flush()
}

// actorText is who made an entry's move: "alice (human)"; "-" for a value adopted as found
// (nobody moved it: ralph-gate took it as legal on first sight), "(unknown author)" for a change
// no webhook reported.
func actorText(e enforce.AuditEntry) string {
	switch {
	case e.Verdict == enforce.VerdictAdopted:
		return "-"
	case e.Actor == enforce.DriftActor:
		return "(unknown author)"
	}
	return fmt.Sprintf("%s (%s)", terminalText(e.Actor), e.ActorKind)
}

// terminalText is text from outside (an agent's reason, a login, an option's name) as a
// terminal may show it on one line of a table: control characters (line breaks, tabs, escape
// sequences, BEL, NUL), invisible formatting characters (bidi overrides included) and line
// separators are written as Go escapes them (\n, \x1b, \u202e), and so is a backslash, so
// that no text can move the cursor, reorder what follows, or start a line of its own.
func terminalText(s string) string {
	if !strings.ContainsFunc(s, escapedInTerminal) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if !escapedInTerminal(r) {
			b.WriteRune(r)
			continue
		}
		q := strconv.QuoteRune(r) // '\n', '\x1b', '\u202e', '\\'
		b.WriteString(q[1 : len(q)-1])
	}
	return b.String()
}

func escapedInTerminal(r rune) bool {
	return r == '\\' || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029'
}

// verdictList names the verdicts the audit log records.
func verdictList() string {
	var vs []string
	for _, v := range enforce.AuditVerdicts() {
		vs = append(vs, string(v))
	}
	return strings.Join(vs, ", ")
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// policyChangeLine is a policy change as `audit --policy --json` prints it.
type policyChangeLine struct {
	At      time.Time `json:"at"`
	Org     string    `json:"org"`
	Commit  string    `json:"commit"`
	Pusher  string    `json:"pusher"`
	Outcome string    `json:"outcome"`
	Reason  string    `json:"reason,omitempty"`
	Changes []string  `json:"changes,omitempty"`
}

// printPolicyChanges lists the organizations' policy changes, oldest first.
func printPolicyChanges(ctx context.Context, s streams, st *store.Store, f store.PolicyChangeFilter, asJSON bool) int {
	changes, err := st.PolicyChanges(ctx, f)
	if err != nil {
		return fail(s, "audit", exitError, "cannot read the policy changes: "+storeProblem(err), "check that the store is reachable, and that the service writing it runs this version (schema 18 or later)")
	}
	if asJSON {
		enc := json.NewEncoder(s.out)
		for _, c := range changes {
			line := policyChangeLine{At: c.At, Org: c.Owner, Commit: c.SHA, Pusher: c.Pusher, Outcome: c.Outcome, Reason: c.Reason}
			if c.Summary != "" {
				line.Changes = strings.Split(c.Summary, "\n")
			}
			if err := enc.Encode(line); err != nil {
				return fail(s, "audit", exitError, "cannot write the output: "+err.Error(), "")
			}
		}
		return exitOK
	}
	if len(changes) == 0 {
		fmt.Fprintln(s.out, "no policy changes recorded")
		return exitOK
	}
	tw := tabwriter.NewWriter(s.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tORG\tCOMMIT\tPUSHER\tOUTCOME\tCHANGES\tREASON")
	for _, c := range changes {
		commit := c.SHA
		if len(commit) > 12 {
			commit = commit[:12]
		}
		pusher := c.Pusher
		if pusher == "" {
			pusher = "(first read)"
		}
		changes := strings.Join(strings.Split(c.Summary, "\n"), "; ")
		reason, _, _ := strings.Cut(c.Reason, "\n")
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.At.Format(time.RFC3339), terminalText(c.Owner), commit, terminalText(pusher),
			c.Outcome, terminalText(orNone(changes)), terminalText(orNone(reason)))
	}
	tw.Flush()
	return exitOK
}
