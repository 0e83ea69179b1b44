package main

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/ralph-gate/ralph-gate/enforce"
	"text/tabwriter"
	"time"

	"github.com/ralph-gate/ralph-gate/app/config"
	"github.com/ralph-gate/ralph-gate/store"
)

func runAudit(ctx context.Context, args []string, s streams) int {
	fs := newFlags("audit", s)
	file := fs.String("config", "", "configuration file naming the store (default: the embedded config.yml)")
	item := fs.Int("item", 0, "only this issue number")
	repo := fs.String("repo", "", "with --item: only this repository (owner/name)")
	since := fs.String("since", "", "only decisions at or after this time (RFC 3339, or a duration such as 1h meaning that long ago)")
	limit := fs.Int("limit", 100, "at most this many (the newest); 0 = all")
	asJSON := fs.Bool("json", false, "print JSON lines instead of a table")
	driver := fs.String("driver", "", "store driver, overriding the config (sqlite or postgres)")
	dsn := fs.String("dsn", "", "store DSN, overriding the config (an SQLite file or a postgres:// URL)")
	if code, ok := parseFlags(fs, args, s); !ok {
		return code
	}
	filter := store.AuditFilter{IssueNumber: *item, Repo: *repo, Limit: *limit}
	if *since != "" {
		t, err := parseSince(*since, time.Now())
		if err != nil {
			fmt.Fprintf(s.err, "audit: --since: %v\n", err)
			return exitUsage
		}
		filter.Since = t
	}
	cfg, err := config.Load(*file)
	if err != nil {
		printProblems(s, err, *file)
		return exitError
	}
	if *driver != "" {
		cfg.Store.Driver = *driver
	}
	if *dsn != "" {
		cfg.Store.DSN = *dsn
	}
	st, err := store.Open(ctx, cfg.Store.Driver, cfg.Store.DSN)
	if err != nil {
		fmt.Fprintf(s.err, "audit: %v\n", err)
		return exitError
	}
	defer st.Close()
	entries, err := st.QueryAudit(ctx, filter)
	if err != nil {
		fmt.Fprintf(s.err, "audit: %v\n", err)
		return exitError
	}
	if *asJSON {
		enc := json.NewEncoder(s.out)
		for _, e := range entries {
			if err := enc.Encode(auditJSON(e)); err != nil {
				return exitError
			}
		}
		return exitOK
	}
	printAudit(s, entries)
	return exitOK
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
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s (%s)\t%s\t%s\t%s\n", e.At.Format(time.RFC3339), e.Verdict, issue,
			e.Actor, e.ActorKind, orNone(e.FromState), orNone(e.ToState), e.Reason)
	}
	tw.Flush()
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
