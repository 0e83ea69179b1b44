package app

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/google/go-github/v89/github"
	"github.com/rs/zerolog"

	"github.com/ralph-gate/ralph-gate/app/config"
	"github.com/ralph-gate/ralph-gate/payload"
	"github.com/ralph-gate/ralph-gate/policy"
	"github.com/ralph-gate/ralph-gate/store"
)

// Who may change an organization's policy, and in which order its changes are taken in
// (docs/CONFIGURATION.md "Who may change an organization's policy", docs/SECURITY.md).
//
// A push's file is put in force when it is valid, its pusher may change the policy, and its
// commit is newer than the policy in force's: pushes are ordered by their commits (GitHub's
// compare), not by when their webhooks arrive, so a late push never replaces a newer policy,
// and a push that did not touch the file hides none that did. Every push taken in is recorded
// with its pusher and outcome (ralph-gate audit --policy).

// taken is what a policy put in force changed that needs work after it: the projects that came
// into force (reconciled at once).
type taken struct{ added []config.Project }

// policyDecision is what became of a push of the policy file.
type policyDecision struct {
	file     policyFile
	outcome  string          // store.PolicyInForce, …
	problems config.Problems // the file's
	// refusedWhy says why the pusher may not change the policy ("" they may), whoMay who may.
	refusedWhy, whoMay string
	// newerSHA is the commit of the policy in force when the push's is older (not_newer).
	newerSHA string
	// changes lists what the file changes against the policy in force.
	changes []string
	// backtest is what the change would decide differently (Markdown), when it was computed.
	backtest string
}

// metricOutcome is the decision's outcome as the policy changes metric counts it.
func (d policyDecision) metricOutcome() string {
	switch {
	case d.outcome != store.PolicyRefused:
		return d.outcome
	case d.refusedWhy != "":
		return "refused_pusher"
	}
	return "refused_invalid"
}

// reason is why, in one line per problem, as the store keeps it.
func (d policyDecision) reason() string {
	var parts []string
	if d.refusedWhy != "" {
		parts = append(parts, d.refusedWhy+"; only "+d.whoMay+" may change it")
	}
	if len(d.problems) > 0 {
		parts = append(parts, problemLines(d.problems))
	}
	if d.newerSHA != "" {
		parts = append(parts, "older than the policy in force ("+short(d.newerSHA)+")")
	}
	return capText(strings.Join(parts, "\n"), maxRefusedText)
}

// check validates a file for an organization and builds its policy: the file's problems, and
// an agent another organization's policy in force already names (an agent works for one).
func (a *App) check(f policyFile, at time.Time) (orgPolicy, config.Problems) {
	switch {
	case !f.found:
		return orgPolicy{}, config.Problems{{Path: "(file)", Message: fmt.Sprintf("%s/%s has no %s: the organization's last valid policy stays in force (with none, none of its projects is enforced)", f.owner, f.repo, f.path)}}
	case f.size > 0:
		return orgPolicy{}, config.Problems{{Path: "(file)", Message: fmt.Sprintf("the file is %d bytes, larger than a configuration file may be (%d)", f.size, config.MaxFileBytes)}}
	}
	op, problems := a.orgs.compile(f.owner, f.installation, f.sha, f.text, at)
	if len(problems) > 0 {
		return op, problems
	}
	for i, ag := range op.cfg.MCP.Agents {
		for _, other := range a.orgs.all() {
			if strings.EqualFold(other.owner, f.owner) {
				continue
			}
			if _, ok := other.cfg.MCPAgentNamed(ag.Name); ok {
				problems = append(problems, config.Problem{Path: fmt.Sprintf("mcp.agents[%d].name", i),
					Message: fmt.Sprintf("agent %q already works for %s (its policy names it): an agent works for one organization; name only your own agents, or ask the operator for one", ag.Name, other.owner)})
			}
		}
	}
	return op, problems
}

// takeFirst takes in an organization's first policy: the file at the head of its default
// branch, read when nothing of the organization was ever recorded and no policy admins are
// named (installed). No push is checked: the person who installs the App vouches for the file
// there.
func (a *App) takeFirst(ctx context.Context, f policyFile) (taken, error) {
	logger := zerolog.Ctx(ctx).With().Str("org", f.owner).Str("commit", f.sha).Logger()
	if !f.found {
		logger.Info().Str("repo", f.repo).Str("path", f.path).Msg("the organization has no policy file yet: none of its projects is enforced until one is pushed")
		return taken{}, nil
	}
	op, problems := a.check(f, time.Now())
	d := policyDecision{file: f, problems: problems, outcome: store.PolicyRefused}
	if len(problems) == 0 {
		d.outcome, d.changes = store.PolicyInForce, changeSummary(orgPolicy{}, false, op)
	}
	return a.conclude(ctx, d, op, store.OrgPolicy{}, "the first policy: the file at the default branch's head when the organization was first read")
}

// takePush takes in a push of the policy file: older than the policy in force, the policy in
// force again, put in force, or refused; recorded, counted and reported as a check run on its
// commit. Pushes are ordered first (by their commits), then judged.
func (a *App) takePush(ctx context.Context, ev payload.PushEvent) (taken, error) {
	f, err := a.readPolicyFile(ctx, ev.InstallationID, ev.Owner, ev.After)
	if err != nil {
		return taken{}, err
	}
	f.pusher, f.pusherType = ev.Sender, ev.SenderType
	kept, _, err := a.store.GetOrgPolicy(ctx, f.owner)
	if err != nil {
		return taken{}, err
	}
	cur, hasCur := a.orgs.get(f.owner)
	op, problems := a.check(f, time.Now())
	d := policyDecision{file: f, problems: problems, whoMay: a.whoMayChange(f.owner)}
	newer, err := a.newerThan(ctx, f, kept.SHA, ev.Branch())
	switch {
	case err != nil:
		return taken{}, err
	case !newer:
		d.outcome, d.newerSHA = store.PolicyNotNewer, kept.SHA
	case len(problems) == 0 && kept.SHA != "" && string(f.text) == kept.Text:
		d.outcome = store.PolicyUnchanged // (its commit is the newest of the policy in force)
	default:
		if d.refusedWhy, err = a.mayChangePolicy(ctx, f, cur, hasCur); err != nil {
			return taken{}, err
		}
		d.outcome = store.PolicyInForce
		if d.refusedWhy != "" || len(problems) > 0 {
			d.outcome = store.PolicyRefused
		}
		if len(problems) == 0 {
			d.changes = changeSummary(cur, hasCur, op)
			d.backtest = a.backtestChange(ctx, f.owner, cur, hasCur, op, ev.Private)
		}
	}
	res, err := a.conclude(ctx, d, op, kept, "")
	if err != nil {
		return res, err
	}
	a.reportPolicyCheck(ctx, d)
	return res, nil
}

// conclude records a decision in one transaction with what it does to the policy in force
// (only while kept is still the policy in force: another replica's newer one is never
// replaced), then holds the policy in force in memory and counts the decision. A policy put in
// force holds from now: the time is taken last, after every read.
func (a *App) conclude(ctx context.Context, d policyDecision, op orgPolicy, kept store.OrgPolicy, note string) (taken, error) {
	f := d.file
	logger := zerolog.Ctx(ctx).With().Str("org", f.owner).Str("commit", f.sha).Str("pusher", f.pusher).Logger()
	now := time.Now().UTC().Truncate(time.Microsecond) // (as the store keeps it: replicas compare)
	reason := d.reason()
	if note != "" {
		reason = strings.TrimSpace(note + "\n" + reason)
	}
	change := store.PolicyChange{Owner: f.owner, SHA: f.sha, Pusher: f.pusher, At: now, Outcome: d.outcome, Reason: reason,
		Summary: capText(strings.Join(d.changes, "\n"), maxRefusedText)}
	var put *store.OrgPolicy
	switch d.outcome {
	case store.PolicyInForce:
		op.loadedAt = now
		put = &store.OrgPolicy{Owner: f.owner, InstallationID: f.installation, SHA: f.sha, Text: string(f.text), LoadedAt: now, Pusher: f.pusher}
	case store.PolicyUnchanged:
		// The same policy, from a newer commit: an older push taken in later compares with it.
		op.loadedAt = kept.LoadedAt
		put = &kept
		put.SHA, put.InstallationID = f.sha, f.installation
	}
	concluded, err := a.store.ConcludePolicyChange(ctx, change, put, kept.SHA, f.installation)
	if err != nil {
		return taken{}, err
	}
	if !concluded {
		return taken{}, fmt.Errorf("the policy of %s changed while %s was checked: taken in again", f.owner, short(f.sha))
	}
	var res taken
	switch d.outcome {
	case store.PolicyInForce:
		prev, hadPrev := a.orgs.get(f.owner)
		a.orgs.put(op)
		a.notifyReplicas(ctx, f.owner)
		for _, p := range op.cfg.Projects {
			if !hadPrev || !prev.cfg.Enforces(p.Owner, p.Number) {
				res.added = append(res.added, p)
			}
		}
		logger.Info().Int("projects", len(op.cfg.Projects)).Strs("changes", capLines(d.changes, 20)).Msg("the organization's policy is in force")
	case store.PolicyUnchanged:
		a.orgs.put(op)
		a.notifyReplicas(ctx, f.owner)
		logger.Info().Msg("the organization's policy file is the policy in force, from a newer commit")
	case store.PolicyRefused:
		logger.Warn().Int("problems", len(d.problems)).Str("refused", capText(d.reason(), 2000)).Strs("would_change", capLines(d.changes, 20)).
			Msg("a change of the organization's policy was refused: the policy in force stays")
	default:
		logger.Info().Str("outcome", d.outcome).Msg("the organization's policy file was checked, not put in force")
	}
	a.metrics.PolicyChanged(f.owner, d.metricOutcome())
	return res, nil
}

// capLines is at most n lines, the last one saying how many were left out.
func capLines(lines []string, n int) []string {
	if len(lines) <= n {
		return lines
	}
	return append(slices.Clone(lines[:n-1]), fmt.Sprintf("… and %d more", len(lines)-n+1))
}

// mayChangePolicy says why a push's pusher may not change the organization's policy ("" they
// may): a bot never; with policy admins named (config.yml's organizations), only they (a login,
// or a member of a team named); else a person who is neither an agent nor a bot by the
// policy in force.
func (a *App) mayChangePolicy(ctx context.Context, f policyFile, cur orgPolicy, hasCur bool) (string, error) {
	who := f.pusher
	switch {
	case who == "":
		return "the push names no pusher", nil
	case strings.EqualFold(f.pusherType, "Bot") || strings.HasSuffix(strings.ToLower(who), "[bot]"):
		return who + " is a bot", nil
	}
	if org, ok := a.cfg.OrganizationNamed(f.owner); ok && len(org.PolicyAdmins) > 0 {
		for _, admin := range org.Admins() {
			if admin.Login != "" && strings.EqualFold(admin.Login, who) {
				return "", nil
			}
		}
		var unread []string
		for _, admin := range org.Admins() {
			if admin.TeamSlug == "" {
				continue
			}
			member, why, err := teamMember(ctx, f.client, admin, who)
			switch {
			case err != nil:
				return "", err
			case member:
				return "", nil
			case why != "":
				unread = append(unread, why)
			}
		}
		if len(unread) > 0 {
			return fmt.Sprintf("%s is not a policy admin of %s by login, and %s", who, f.owner, strings.Join(unread, "; ")), nil
		}
		return fmt.Sprintf("%s is not a policy admin of %s", who, f.owner), nil
	}
	actors := a.orgs.base.PolicyActors(a.appLogin)
	if hasCur {
		actors = cur.actors
	}
	switch actors.Classify(who) {
	case policy.ActorAgent:
		return fmt.Sprintf("%s is an agent by the policy in force", who), nil
	case policy.ActorApp:
		return fmt.Sprintf("%s is this App", who), nil
	}
	return "", nil
}

// whoMayChange says who may change an organization's policy.
func (a *App) whoMayChange(owner string) string {
	if org, ok := a.cfg.OrganizationNamed(owner); ok && len(org.PolicyAdmins) > 0 {
		return fmt.Sprintf("a policy admin of %s (%s, in the deployment's config.yml)", owner, strings.Join(org.PolicyAdmins, ", "))
	}
	return "a person who is neither an agent nor a bot by the policy in force"
}

// teamMember reports whether a login is an active member of a team of the organization
// (GitHub's "Get team membership for a user": the installation needs Members: read). A
// membership GitHub will not tell (403, or another refusal that asking again cannot change) is
// why the login is not taken for a member: the push is refused, saying so. Only what may pass
// (a server error, a rate limit, the network) is an error, and the push is taken in again.
func teamMember(ctx context.Context, client *github.Client, team config.PolicyAdmin, login string) (bool, string, error) {
	m, resp, err := client.Teams.GetTeamMembershipBySlug(ctx, team.TeamOrg, team.TeamSlug, login)
	switch {
	case notFound(resp):
		return false, "", nil
	case err == nil:
		return m.GetState() == "active", "", nil
	case resp != nil && resp.StatusCode == http.StatusForbidden && !isRateLimited(err):
		return false, fmt.Sprintf("whether they are on %s could not be read: the installation lacks the Members permission (read)", team), nil
	case resp != nil && resp.StatusCode >= 400 && resp.StatusCode < 500 && resp.StatusCode != http.StatusTooManyRequests && !isRateLimited(err):
		return false, fmt.Sprintf("whether they are on %s could not be read (GitHub answered %d)", team, resp.StatusCode), nil
	}
	return false, "", fmt.Errorf("read the members of %s: %w", team, err)
}

// newerThan reports whether a push's commit is newer than the policy in force's (sha; ""
// none), as GitHub compares them: a commit ahead of it is; one behind it or the same is not.
// One that has diverged from it (a force-push rewrote the branch), or compared with a commit
// GitHub no longer has, is newer only when the branch still holds it (the branch's head is it
// or ahead of it): a late push of a commit the force-push dropped never comes back in force.
func (a *App) newerThan(ctx context.Context, f policyFile, sha, branch string) (bool, error) {
	if sha == "" {
		return true, nil
	}
	if sha == f.sha {
		return false, nil
	}
	status, err := compareCommits(ctx, f, sha, f.sha)
	if err != nil {
		return false, err
	}
	switch status {
	case "ahead":
		return true, nil
	case "behind", "identical":
		return false, nil
	}
	onBranch, err := compareCommits(ctx, f, f.sha, branch)
	if err != nil {
		return false, err
	}
	return onBranch == "ahead" || onBranch == "identical", nil
}

// compareCommits is GitHub's status of head against base: ahead, behind, identical, diverged,
// or "" when GitHub has no such commit.
func compareCommits(ctx context.Context, f policyFile, base, head string) (string, error) {
	cmp, resp, err := f.client.Repositories.CompareCommits(ctx, f.owner, f.repo, base, head, &github.ListOptions{PerPage: 1})
	if notFound(resp) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("compare %s with %s: %w", short(head), short(base), err)
	}
	return cmp.GetStatus(), nil
}

// changeSummary lists what a policy changes against the one in force (none: every project
// comes into force): projects and their modes, bypass, agents, roles, the façade's agents and
// the workflow. Each line starts with + (added), - (removed) or ~ (changed).
func changeSummary(cur orgPolicy, hasCur bool, next orgPolicy) []string {
	var out []string
	var curProjects []config.Project
	var curCfg config.Config
	if hasCur {
		curCfg, curProjects = cur.cfg, cur.cfg.Projects
	}
	for _, p := range next.cfg.Projects {
		switch {
		case !hasCur || !curCfg.Enforces(p.Owner, p.Number):
			out = append(out, fmt.Sprintf("+ project %s/%d enforced (%s)", p.Owner, p.Number, next.cfg.ModeOf(p.Owner, p.Number)))
		case curCfg.ModeOf(p.Owner, p.Number) != next.cfg.ModeOf(p.Owner, p.Number):
			out = append(out, fmt.Sprintf("~ project %s/%d mode: %s → %s", p.Owner, p.Number, curCfg.ModeOf(p.Owner, p.Number), next.cfg.ModeOf(p.Owner, p.Number)))
		}
	}
	for _, p := range curProjects {
		if !next.cfg.Enforces(p.Owner, p.Number) {
			out = append(out, fmt.Sprintf("- project %s/%d no longer enforced", p.Owner, p.Number))
		}
	}
	if !hasCur {
		return out
	}
	out = append(out, listDiff("actors.bypass", curCfg.Actors.Bypass, next.cfg.Actors.Bypass)...)
	out = append(out, listDiff("actors.agents", curCfg.Actors.Agents, next.cfg.Actors.Agents)...)
	var curRoles, nextRoles []string
	for name := range curCfg.Actors.Roles {
		curRoles = append(curRoles, name)
	}
	for name := range next.cfg.Actors.Roles {
		nextRoles = append(nextRoles, name)
		if old, ok := curCfg.Actors.Roles[name]; ok && !reflect.DeepEqual(old, next.cfg.Actors.Roles[name]) {
			out = append(out, "~ actors.roles."+name+" changed")
		}
	}
	out = append(out, listDiff("actors.roles", curRoles, nextRoles)...)
	var curAgents, nextAgents []string
	for _, ag := range curCfg.MCP.Agents {
		curAgents = append(curAgents, ag.Name)
	}
	for _, ag := range next.cfg.MCP.Agents {
		nextAgents = append(nextAgents, ag.Name)
		if old, ok := curCfg.MCPAgentNamed(ag.Name); ok && (!slices.Equal(old.Commands, ag.Commands) || old.Role != ag.Role) {
			out = append(out, "~ mcp.agents "+ag.Name+" changed (commands or role)")
		}
	}
	out = append(out, listDiff("mcp.agents", curAgents, nextAgents)...)
	if !reflect.DeepEqual(curCfg.Workflow, next.cfg.Workflow) {
		out = append(out, fmt.Sprintf("~ workflow changed (%d states, was %d)", len(next.machine.States()), len(cur.machine.States())))
	}
	return out
}

// listDiff is what was added to and removed from a list of names (case-insensitive).
func listDiff(what string, was, now []string) []string {
	var out []string
	has := func(list []string, s string) bool {
		return slices.ContainsFunc(list, func(x string) bool { return strings.EqualFold(x, s) })
	}
	for _, s := range slices.Sorted(slices.Values(now)) {
		if !has(was, s) {
			out = append(out, fmt.Sprintf("+ %s: %s", what, s))
		}
	}
	for _, s := range slices.Sorted(slices.Values(was)) {
		if !has(now, s) {
			out = append(out, fmt.Sprintf("- %s: %s", what, s))
		}
	}
	return out
}

// reconcileNew reconciles at once the projects a policy brought into force: their boards are
// known (and their illegal states found) without waiting for the periodic pass.
func (a *App) reconcileNew(ctx context.Context, res taken) {
	if len(res.added) == 0 {
		return
	}
	if _, err := a.reconcileProjects(ctx, res.added); err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Msg("the projects the policy brought into force were not all reconciled; the periodic pass will")
	}
}
