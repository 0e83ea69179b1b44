package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/google/go-github/v89/github"
	"github.com/rs/zerolog"

	"github.com/ralph-gate/ralph-gate/app/config"
	"github.com/ralph-gate/ralph-gate/handlers"
	"github.com/ralph-gate/ralph-gate/payload"
	"github.com/ralph-gate/ralph-gate/store"
)

// PolicyCheckName is the check run a push of an organization's policy file gets.
const PolicyCheckName = "ralph-gate policy"

// maxListedCommits: a push payload lists at most this many commits, so a push listing as many
// may change the file in a commit it leaves out: its file is read whatever it lists (as a
// force-push's, a new branch's, or one that lists none).
const maxListedCommits = 20

// maxAnnotations is how many annotations GitHub takes in one check run request.
const maxAnnotations = 50

// maxCheckText bounds a check run's text (GitHub refuses more than 65,535 characters), and
// maxRefusedText what the store keeps of a refused file's problems (doctor, the health report).
const (
	maxCheckText   = 60000
	maxRefusedText = 8000
)

// capText is text cut to at most n bytes, on a line, saying how many lines were left out.
func capText(text string, n int) string {
	if len(text) <= n {
		return text
	}
	cut := strings.LastIndexByte(text[:n-100], '\n')
	if cut < 0 {
		cut = n - 100
	}
	return fmt.Sprintf("%s\n… and %d more line(s)", text[:cut], strings.Count(text[cut:], "\n"))
}

// policyFile is an organization's policy file as read at a commit.
type policyFile struct {
	owner, repo, path, sha string
	installation           int64
	text                   []byte
	found                  bool
	size                   int // when larger than a configuration file may be (not read)
	// head is the branch's head when it is not sha (a push delivered late, or again): the
	// file is checked and reported, never put in force over the newer commit's.
	head string
	// client is the installation's client the file was read with: the branch's head and the
	// check run go through it too (one token for the whole push).
	client *github.Client
}

// readAllOrgPolicies reads the policy of every organization the App is installed on.
func (a *App) readAllOrgPolicies(ctx context.Context) error {
	client, err := a.github.NewAppClient()
	if err != nil {
		return fmt.Errorf("github app client: %w", err)
	}
	opts := &github.ListOptions{PerPage: 100}
	var first error
	for {
		insts, resp, err := client.Apps.ListInstallations(ctx, opts)
		if err != nil {
			return fmt.Errorf("list the App's installations: %w", err)
		}
		for _, inst := range insts {
			if !strings.EqualFold(inst.GetAccount().GetType(), "Organization") && inst.GetAccount().GetType() != "" {
				continue // projects enforced are organizations'
			}
			ev := payload.InstallationEvent{Action: "created", InstallationID: inst.GetID(), Account: inst.GetAccount().GetLogin()}
			if err := a.Installed(ctx, ev); err != nil && first == nil {
				first = err
			}
		}
		if resp.NextPage == 0 {
			return first
		}
		opts.Page = resp.NextPage
	}
}

// Installed reads an organization's policy at its repository's default branch
// (handlers.PolicySource).
func (a *App) Installed(ctx context.Context, ev payload.InstallationEvent) error {
	if !a.cfg.OrgPolicies() {
		return nil
	}
	a.policyMu.Lock()
	defer a.policyMu.Unlock()
	f, err := a.readPolicyFile(ctx, ev.InstallationID, ev.Account, "")
	if err != nil {
		return err
	}
	_, err = a.takePolicy(ctx, f)
	return err
}

// Uninstalled forgets an organization's policy (handlers.PolicySource): its projects are
// no longer enforced, and what its queue holds finds them so.
func (a *App) Uninstalled(ctx context.Context, ev payload.InstallationEvent) error {
	if !a.cfg.OrgPolicies() {
		return nil
	}
	a.orgs.forget(ev.Account)
	if err := a.store.ForgetOrgPolicy(ctx, ev.Account); err != nil {
		return err
	}
	a.notifyReplicas(ctx, ev.Account)
	zerolog.Ctx(ctx).Info().Str("org", ev.Account).Msg("the App was uninstalled: the organization's policy is forgotten")
	return nil
}

// Pushed validates the policy file of a push that changed it on the policy repository's
// default branch, reports the outcome as a check run on the commit, and puts a valid file in
// force (handlers.PolicySource).
func (a *App) Pushed(ctx context.Context, ev payload.PushEvent) error {
	logger := zerolog.Ctx(ctx)
	pc := a.cfg.Policy
	switch {
	case !a.cfg.OrgPolicies():
		return nil
	case !strings.EqualFold(ev.Repo, pc.Repository) || ev.Deleted:
		logger.Debug().Msg("push ignored: not to the policy repository")
		return nil
	case ev.Branch() == "" || (ev.DefaultBranch != "" && ev.Branch() != ev.DefaultBranch):
		logger.Debug().Msg("push ignored: not to the default branch")
		return nil
	case !slices.Contains(ev.Files, pc.Path) && !ev.Forced && !ev.Created && ev.Commits > 0 && ev.Commits < maxListedCommits:
		logger.Debug().Msg("push ignored: the policy file did not change")
		return nil
	}
	a.policyMu.Lock() // one policy taken at a time: a late push never lands over a newer one
	defer a.policyMu.Unlock()
	f, err := a.readPolicyFile(ctx, ev.InstallationID, ev.Owner, ev.After)
	if err != nil {
		return err
	}
	if f.head, err = a.branchHead(ctx, f, ev.Branch()); err != nil {
		return err
	}
	if f.head == f.sha {
		f.head = ""
	}
	problems, err := a.takePolicy(ctx, f)
	if err != nil {
		return err
	}
	a.reportPolicyCheck(ctx, f, problems)
	return nil
}

// takePolicy validates a file and puts it in force, or records it refused (the policy in
// force stays); it returns the file's problems.
func (a *App) takePolicy(ctx context.Context, f policyFile) (config.Problems, error) {
	logger := zerolog.Ctx(ctx).With().Str("org", f.owner).Str("commit", f.sha).Logger()
	now := time.Now().UTC().Truncate(time.Microsecond) // (as the store keeps it: replicas compare)
	kept, _, err := a.store.GetOrgPolicy(ctx, f.owner)
	if err != nil {
		return nil, err
	}
	if f.sha != "" && f.sha == kept.SHA && f.found {
		// Read again (a restart, an install event): in force since it was first put.
		a.takeKept(ctx, kept)
		return nil, nil
	}
	var problems config.Problems
	switch {
	case !f.found:
		problems = config.Problems{{Path: "(file)", Message: fmt.Sprintf("%s/%s has no %s: the organization's last valid policy stays in force (with none, none of its projects is enforced)", f.owner, f.repo, f.path)}}
	case f.size > 0:
		problems = config.Problems{{Path: "(file)", Message: fmt.Sprintf("the file is %d bytes, larger than a configuration file may be (%d)", f.size, config.MaxFileBytes)}}
	}
	var op orgPolicy
	if len(problems) == 0 {
		op, problems = a.orgs.compile(f.owner, f.installation, f.sha, f.text, now)
	}
	if f.head != "" {
		logger.Info().Str("head", f.head).Int("problems", len(problems)).
			Msg("the organization's policy file at an older commit than the branch's head was checked, not put in force")
		return problems, nil
	}
	if len(problems) > 0 {
		if err := a.store.RefuseOrgPolicy(ctx, f.owner, f.installation, f.sha, capText(problemLines(problems), maxRefusedText), now); err != nil {
			return problems, err
		}
		logger.Warn().Int("problems", len(problems)).Str("problems_text", problemLines(problems)).
			Msg("the organization's policy file was refused: its last valid policy stays in force")
		return problems, nil
	}
	if err := a.store.PutOrgPolicy(ctx, store.OrgPolicy{Owner: f.owner, InstallationID: f.installation, SHA: f.sha, Text: string(f.text), LoadedAt: now}); err != nil {
		return nil, err
	}
	a.orgs.put(op)
	a.notifyReplicas(ctx, f.owner)
	logger.Info().Int("projects", len(op.cfg.Projects)).Msg("the organization's policy is in force")
	return nil, nil
}

// readPolicyFile reads an organization's policy file at a commit ("": the head of its
// repository's default branch).
func (a *App) readPolicyFile(ctx context.Context, installation int64, owner, sha string) (policyFile, error) {
	pc := a.cfg.Policy
	f := policyFile{owner: owner, repo: pc.Repository, path: pc.Path, sha: sha, installation: installation}
	if installation == 0 {
		return f, fmt.Errorf("read the policy of %s: no installation", owner)
	}
	client, err := a.github.NewInstallationClient(installation)
	if err != nil {
		return f, fmt.Errorf("installation %d client: %w", installation, err)
	}
	f.client = client
	if f.sha == "" {
		repo, resp, err := client.Repositories.Get(ctx, owner, pc.Repository)
		if notFound(resp) {
			return f, nil // no policy repository: no policy
		}
		if err != nil {
			return f, fmt.Errorf("read %s/%s: %w", owner, pc.Repository, err)
		}
		if f.sha, _, err = client.Repositories.GetCommitSHA1(ctx, owner, pc.Repository, repo.GetDefaultBranch(), ""); err != nil {
			return f, fmt.Errorf("read the head of %s/%s: %w", owner, pc.Repository, err)
		}
	}
	fc, _, resp, err := client.Repositories.GetContents(ctx, owner, pc.Repository, pc.Path, &github.RepositoryContentGetOptions{Ref: f.sha})
	if notFound(resp) {
		return f, nil
	}
	if err != nil {
		return f, fmt.Errorf("read %s/%s/%s at %s: %w", owner, pc.Repository, pc.Path, f.sha, err)
	}
	if fc.GetSize() > config.MaxFileBytes {
		f.found, f.size = true, fc.GetSize()
		return f, nil
	}
	text, err := fc.GetContent()
	if err != nil {
		return f, fmt.Errorf("decode %s/%s/%s: %w", owner, pc.Repository, pc.Path, err)
	}
	f.found, f.text = true, []byte(text)
	return f, nil
}

// branchHead is the commit at the head of a branch of the policy repository.
func (a *App) branchHead(ctx context.Context, f policyFile, branch string) (string, error) {
	sha, _, err := f.client.Repositories.GetCommitSHA1(ctx, f.owner, f.repo, branch, "")
	if err != nil {
		return "", fmt.Errorf("read the head of %s/%s: %w", f.owner, f.repo, err)
	}
	return sha, nil
}

func notFound(resp *github.Response) bool {
	return resp != nil && resp.StatusCode == http.StatusNotFound
}

// reportPolicyCheck creates the push's check run: valid, or every problem by key path and
// line. A check run that cannot be created is logged: the outcome stands either way (doctor
// names a missing Checks permission).
func (a *App) reportPolicyCheck(ctx context.Context, f policyFile, problems config.Problems) {
	logger := zerolog.Ctx(ctx)
	out := policyCheckOutput(f, problems)
	conclusion := "success"
	if len(problems) > 0 {
		conclusion = "failure"
	}
	now := github.Timestamp{Time: time.Now()}
	_, _, err := f.client.Checks.CreateCheckRun(ctx, f.owner, f.repo, github.CreateCheckRunOptions{
		Name: PolicyCheckName, HeadSHA: f.sha, Status: github.Ptr("completed"), Conclusion: github.Ptr(conclusion),
		CompletedAt: &now, Output: out,
	})
	if err != nil {
		var ge *github.ErrorResponse
		if errors.As(err, &ge) && ge.Response != nil && ge.Response.StatusCode == http.StatusForbidden {
			logger.Warn().Err(err).Msg("policy check run not created: the installation lacks the Checks permission (write); the policy's outcome stands")
			return
		}
		logger.Warn().Err(err).Msg("policy check run not created; the policy's outcome stands")
	}
}

// policyCheckOutput is the check run's text: what is in force, or every problem.
func policyCheckOutput(f policyFile, problems config.Problems) *github.CheckRunOutput {
	if len(problems) == 0 && f.head != "" {
		return &github.CheckRunOutput{Title: github.Ptr("The policy is valid; a newer commit's is in force"),
			Summary: github.Ptr(fmt.Sprintf("%s at %s is valid. It is not put in force: %s, a newer commit, is the branch's head, and the policy in force is read from it.", f.path, short(f.sha), short(f.head)))}
	}
	if len(problems) == 0 {
		return &github.CheckRunOutput{Title: github.Ptr("The policy is valid and in force"),
			Summary: github.Ptr(fmt.Sprintf("%s at %s is in force for %s's projects.", f.path, short(f.sha), f.owner))}
	}
	out := &github.CheckRunOutput{
		Title: github.Ptr(fmt.Sprintf("%d problem(s): the previous policy stays in force", len(problems))),
		Summary: github.Ptr(fmt.Sprintf("%s at %s was refused: the organization's last valid policy stays in force until a valid file is pushed. "+
			"`ralph-gate validate` gives the same problems for the same sections.", f.path, short(f.sha))),
		Text: github.Ptr(capText(problemLines(problems), maxCheckText)),
	}
	for _, pr := range problems {
		if len(out.Annotations) == maxAnnotations {
			break
		}
		line := max(pr.Line, 1)
		out.Annotations = append(out.Annotations, &github.CheckRunAnnotation{Path: github.Ptr(f.path), StartLine: github.Ptr(line), EndLine: github.Ptr(line),
			AnnotationLevel: github.Ptr("failure"), Title: github.Ptr(pr.Path), Message: github.Ptr(pr.Path + ": " + pr.Message)})
	}
	return out
}

// short is a commit's short form.
func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

var _ handlers.PolicySource = (*App)(nil)
