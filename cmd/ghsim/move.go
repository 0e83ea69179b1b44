package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/ralph-gate/ralph-gate/ghsim"
)

// mover is `ghsim move`: one Workflow State change on a running simulator, made as the user
// who holds the token, through the simulator's GraphQL API exactly as GitHub's web interface
// or an agent's client would (so the change is delivered as a webhook signed for the App),
// then, with --wait, what became of it.
type mover struct {
	sim    string // base URL of the running simulator
	token  string
	field  string
	client *http.Client
	out    io.Writer
}

const moveUsage = `usage: ghsim move [--sim URL] --token TOKEN [--field NAME] [--wait DURATION] ISSUE STATE

Sets ISSUE's single-select field (default "Workflow State") to STATE on a running simulator, as
the seeded user who holds TOKEN. ISSUE is 3, app#3 or acme/app#3. With --wait, watches the issue
for that long and prints what happens to the move: a revert, and the comment that explains it.
`

// runMove parses `ghsim move` and runs it: 0 once the move is made, 1 when it could not be,
// 2 on usage errors. Flags may come before or after ISSUE and STATE.
func runMove(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("ghsim move", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {}
	sim := fs.String("sim", "http://127.0.0.1:8090", "base URL of the running simulator (what 'ghsim serve' printed)")
	token := fs.String("token", "", "API token of the seeded user to act as (the seed's users[].token; required)")
	field := fs.String("field", "Workflow State", "the project's single-select field to set")
	wait := fs.Duration("wait", 0, "after the move, watch the issue this long and print reverts and new comments (e.g. 20s)")
	var pos []string
	for rest := args; ; {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprint(stdout, moveUsage+"\nFlags:\n")
				fs.SetOutput(stdout)
				fs.PrintDefaults()
				return 0
			}
			fmt.Fprintln(stderr, "ghsim move: run 'ghsim move --help' for its flags")
			return 2
		}
		if rest = fs.Args(); len(rest) == 0 {
			break
		}
		pos, rest = append(pos, rest[0]), rest[1:]
	}
	switch {
	case len(pos) != 2:
		fmt.Fprintf(stderr, "ghsim move: want ISSUE and STATE, got %d argument(s); e.g. ghsim move --token alice-token app#3 'Ready for Plan'\n", len(pos))
		return 2
	case *token == "":
		fmt.Fprintln(stderr, "ghsim move: --token is required; give the API token of a seeded user (the seed's users[].token)")
		return 2
	case *wait < 0:
		fmt.Fprintln(stderr, "ghsim move: --wait must not be negative; give a duration such as 20s")
		return 2
	}
	m := &mover{sim: strings.TrimRight(*sim, "/"), token: *token, field: *field, client: &http.Client{Timeout: 30 * time.Second}, out: stdout}
	if err := m.move(ctx, pos[0], pos[1], *wait); err != nil {
		fmt.Fprintf(stderr, "ghsim move: %v\n", err)
		return 1
	}
	return 0
}

func (m *mover) move(ctx context.Context, ref, state string, wait time.Duration) error {
	world, err := m.state(ctx)
	if err != nil {
		return err
	}
	is, err := findIssue(world, ref)
	if err != nil {
		return err
	}
	if owner, _, ok := strings.Cut(ref, "/"); ok {
		world, _ = world.OrgState(owner) // findIssue found the organization
	}
	var found struct {
		Viewer       struct{ Login string }
		Organization *struct {
			ProjectV2 *struct {
				ID    string
				Field *struct {
					Typename string `json:"__typename"`
					ID       string
					Options  []struct{ ID, Name string }
				}
			}
		}
	}
	if err := m.graphql(ctx, `query GhsimMoveField($owner: String!, $number: Int!, $field: String!) {
  viewer { login }
  organization(login: $owner) {
    projectV2(number: $number) {
      id
      field(name: $field) { __typename ... on ProjectV2SingleSelectField { id options { id name } } }
    }
  }
}`, map[string]any{"owner": world.Org, "number": is.ItemProject, "field": m.field}, &found); err != nil {
		return err
	}
	if found.Organization == nil || found.Organization.ProjectV2 == nil {
		return fmt.Errorf("%s's project %d is not visible to this token", world.Org, is.ItemProject)
	}
	p := found.Organization.ProjectV2
	if p.Field == nil || p.Field.Typename != "ProjectV2SingleSelectField" {
		return fmt.Errorf("project %d has no single-select field %q; give the field with --field", is.ItemProject, m.field)
	}
	option, names := "", []string{}
	for _, o := range p.Field.Options {
		names = append(names, strconv.Quote(o.Name))
		if o.Name == state || (option == "" && strings.EqualFold(o.Name, state)) {
			option, state = o.ID, o.Name
		}
	}
	if option == "" {
		return fmt.Errorf("%q is not an option of %q; the options are %s", state, m.field, strings.Join(names, ", "))
	}
	before := is.Fields[m.field]
	if err := m.graphql(ctx, `mutation GhsimMove($project: ID!, $item: ID!, $field: ID!, $option: String!) {
  updateProjectV2ItemFieldValue(input: {projectId: $project, itemId: $item, fieldId: $field, value: {singleSelectOptionId: $option}}) {
    projectV2Item { id }
  }
}`, map[string]any{"project": p.ID, "item": is.ItemID, "field": p.Field.ID, "option": option}, nil); err != nil {
		return err
	}
	name := fmt.Sprintf("%s/%s#%d", world.Org, is.Repo, is.Number)
	fmt.Fprintf(m.out, "%s moved %s %q from %s to %q\n", found.Viewer.Login, name, is.Title, describeValue(before), state)
	if wait > 0 {
		return m.watch(ctx, name, is, before, state, wait)
	}
	return nil
}

// watch polls the simulator's state until the issue leaves state (a revert, say) and its
// explanation arrives, or wait has passed, printing each change.
func (m *mover) watch(ctx context.Context, name string, is ghsim.IssueState, before, state string, wait time.Duration) error {
	fmt.Fprintf(m.out, "watching %s for %s…\n", name, wait)
	start := time.Now()
	deadline := start.Add(wait)
	current, seen := state, len(is.Comments)
	var movedAt time.Time
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		world, err := m.state(ctx)
		if err != nil {
			return err
		}
		now, err := findIssue(world, name)
		if err != nil {
			return err
		}
		after := time.Since(start).Round(100 * time.Millisecond)
		if v := now.Fields[m.field]; v != current {
			switch {
			case v == before:
				fmt.Fprintf(m.out, "→ after %s: back in %s — the move was reverted\n", after, describeValue(v))
			default:
				fmt.Fprintf(m.out, "→ after %s: now in %s\n", after, describeValue(v))
			}
			current, movedAt = v, time.Now()
		}
		for _, c := range now.Comments[min(seen, len(now.Comments)):] {
			fmt.Fprintf(m.out, "→ after %s: %s commented:\n", after, c.Author)
			for _, line := range strings.Split(visibleText(c.Body), "\n") {
				fmt.Fprintln(m.out, strings.TrimRight("   | "+line, " "))
			}
		}
		commented := len(now.Comments) > seen
		seen = len(now.Comments)
		switch {
		case !movedAt.IsZero() && commented:
			return nil
		case !movedAt.IsZero() && time.Since(movedAt) > 10*time.Second:
			return nil // a draft item is reverted without a comment
		case time.Now().After(deadline):
			if movedAt.IsZero() {
				fmt.Fprintf(m.out, "→ after %s: still in %q — nothing reverted the move\n", wait, state)
			}
			return nil
		}
	}
}

// visibleText is a comment as the web interface shows it: without its hidden <!-- … -->
// markers, and without the blank lines they leave at the top.
func visibleText(body string) string {
	return strings.Trim(regexp.MustCompile(`(?s)<!--.*?-->`).ReplaceAllString(body, ""), "\n\r\t ")
}

func describeValue(v string) string {
	if v == "" {
		return "(no value)"
	}
	return strconv.Quote(v)
}

// findIssue finds ISSUE (3, app#3, or acme/app#3 in any of the simulator's organizations) among
// the simulator's issues.
func findIssue(world ghsim.State, ref string) (ghsim.IssueState, error) {
	repo, num, ok := strings.Cut(ref, "#")
	if !ok {
		repo, num = "", ref
	}
	n, err := strconv.Atoi(num)
	if err != nil || n < 1 {
		return ghsim.IssueState{}, fmt.Errorf("%q is not an issue: give its number, REPO#NUMBER or OWNER/REPO#NUMBER", ref)
	}
	if owner, name, ok := strings.Cut(repo, "/"); ok {
		org, known := world.OrgState(owner)
		if !known {
			return ghsim.IssueState{}, fmt.Errorf("the simulator has no organization %s", owner)
		}
		world, repo = org, name
	}
	var matches []ghsim.IssueState
	for _, is := range world.Issues {
		if is.Number == n && (repo == "" || strings.EqualFold(is.Repo, repo)) {
			matches = append(matches, is)
		}
	}
	switch {
	case len(matches) == 0:
		return ghsim.IssueState{}, fmt.Errorf("the simulator has no issue %s", ref)
	case len(matches) > 1:
		var repos []string
		for _, is := range matches {
			repos = append(repos, fmt.Sprintf("%s/%s#%d", world.Org, is.Repo, is.Number))
		}
		return ghsim.IssueState{}, fmt.Errorf("several issues are numbered %d (%s); name one as REPO#%d", n, strings.Join(repos, ", "), n)
	case matches[0].ItemID == "":
		return ghsim.IssueState{}, fmt.Errorf("%s/%s#%d is on no project, so it has no field to set", world.Org, matches[0].Repo, n)
	}
	return matches[0], nil
}

// state reads the simulator's world from its /_sim/state inspection route.
func (m *mover) state(ctx context.Context) (ghsim.State, error) {
	var world ghsim.State
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.sim+"/_sim/state", nil)
	if err != nil {
		return world, fmt.Errorf("--sim %q: %w", m.sim, err)
	}
	resp, err := m.client.Do(req)
	if err != nil {
		return world, fmt.Errorf("no simulator answers at %s (%v); start one (ghsim serve, or ralph-gate demo --keep) or give its URL with --sim", m.sim, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return world, fmt.Errorf("%s/_sim/state answered %s; is --sim a ghsim simulator?", m.sim, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&world); err != nil {
		return world, fmt.Errorf("%s/_sim/state: %w", m.sim, err)
	}
	return world, nil
}

// graphql sends one document to the simulator's GraphQL API as the token's user and decodes
// its data into out (when not nil).
func (m *mover) graphql(ctx context.Context, query string, vars map[string]any, out any) error {
	body, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.sim+"/api/graphql", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "bearer "+m.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := m.client.Do(req)
	if err != nil {
		return fmt.Errorf("GraphQL request: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return fmt.Errorf("GraphQL response: %w", err)
	}
	if resp.StatusCode == http.StatusUnauthorized {
		return fmt.Errorf("the simulator refused the token (%s); give the token of a seeded user with --token", resp.Status)
	}
	var res struct {
		Data   json.RawMessage
		Errors []struct{ Message string }
	}
	if err := json.Unmarshal(data, &res); err != nil || resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GraphQL answered %s: %s", resp.Status, bytes.TrimSpace(data))
	}
	if len(res.Errors) > 0 {
		var msgs []string
		for _, e := range res.Errors {
			msgs = append(msgs, e.Message)
		}
		return fmt.Errorf("GraphQL refused: %s", strings.Join(msgs, "; "))
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(res.Data, out)
}
