package app

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/go-github/v89/github"
	"github.com/rs/zerolog"

	"github.com/ralph-gate/ralph-gate/app/config"
	"github.com/ralph-gate/ralph-gate/handlers"
	"github.com/ralph-gate/ralph-gate/payload"
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
	// pusher is who pushed the commit ("" for the file found at the first read), pusherType
	// GitHub's type of that account (User, Bot).
	pusher, pusherType string
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

// serves reports whether this deployment serves an organization (config.yml's organizations),
// logging once an organization it does not serve.
func (a *App) serves(ctx context.Context, owner string) bool {
	if a.cfg.Serves(owner) {
		return true
	}
	if _, logged := a.strangers.LoadOrStore(strings.ToLower(owner), true); !logged {
		zerolog.Ctx(ctx).Warn().Str("org", owner).
			Msg("an organization this deployment does not serve (config.yml's organizations) installed the App or sent an event: ignored, its policy is not read")
	}
	return false
}

// orgLock is the lock that takes one organization's policy changes one at a time.
func (a *App) orgLock(owner string) *sync.Mutex {
	mu, _ := a.policyLocks.LoadOrStore(strings.ToLower(owner), &sync.Mutex{})
	return mu.(*sync.Mutex)
}

// Installed reads an organization's policy (handlers.PolicySource): the policy the store keeps
// is put in force again. Only an organization of which nothing was ever recorded, and whose
// policy admins config.yml does not name, takes the file at its default branch's head as its
// first policy (the person who installs the App vouches for it); every other change comes by
// a push (Pushed).
func (a *App) Installed(ctx context.Context, ev payload.InstallationEvent) error {
	if !a.cfg.OrgPolicies() || !a.serves(ctx, ev.Account) {
		return nil
	}
	a.metrics.PolicyOrganization(ev.Account)
	res, err := a.installed(ctx, ev)
	if err != nil {
		return err
	}
	a.reconcileNew(ctx, res)
	return nil
}

func (a *App) installed(ctx context.Context, ev payload.InstallationEvent) (taken, error) {
	logger := zerolog.Ctx(ctx).With().Str("org", ev.Account).Logger()
	mu := a.orgLock(ev.Account)
	mu.Lock()
	defer mu.Unlock()
	kept, _, err := a.store.GetOrgPolicy(ctx, ev.Account)
	if err != nil {
		return taken{}, err
	}
	if kept.SHA != "" {
		a.takeKept(ctx, kept)
		return taken{}, nil
	}
	recorded, err := a.store.HasPolicyRecord(ctx, ev.Account)
	if err != nil {
		return taken{}, err
	}
	if org, ok := a.cfg.OrganizationNamed(ev.Account); recorded || (ok && len(org.PolicyAdmins) > 0) {
		logger.Info().Msg("the organization has no policy in force: the next push to its policy repository by someone who may change the policy puts the file in force")
		return taken{}, nil
	}
	f, err := a.readPolicyFile(ctx, ev.InstallationID, ev.Account, "")
	if err != nil {
		return taken{}, err
	}
	f.pusher = ev.Sender
	return a.takeFirst(ctx, f)
}

// Uninstalled forgets an organization's policy (handlers.PolicySource): its projects are no
// longer enforced, and what its queue holds finds them so. A suspended installation keeps its
// policy in the store (put in force again when it is unsuspended); a deleted one is forgotten
// there too, but its record of changes stays: installed again, it takes no file by itself.
func (a *App) Uninstalled(ctx context.Context, ev payload.InstallationEvent) error {
	if !a.cfg.OrgPolicies() || !a.serves(ctx, ev.Account) {
		return nil
	}
	mu := a.orgLock(ev.Account)
	mu.Lock()
	defer mu.Unlock()
	a.orgs.forget(ev.Account)
	if ev.Action == "suspend" {
		zerolog.Ctx(ctx).Info().Str("org", ev.Account).Msg("the App was suspended: the organization's projects are not enforced until it is unsuspended")
		return nil
	}
	if err := a.store.ForgetOrgPolicy(ctx, ev.Account); err != nil {
		return err
	}
	a.notifyReplicas(ctx, ev.Account)
	zerolog.Ctx(ctx).Info().Str("org", ev.Account).Msg("the App was uninstalled: the organization's policy is forgotten")
	return nil
}

// Pushed takes in a push that may change an organization's policy file (handlers.PolicySource):
// one to the policy repository's default branch that touched the file, or may have (a
// force-push, a new branch, a push listing 20 commits), is queued as a job of the policy
// queue, and the webhook answered at once.
func (a *App) Pushed(ctx context.Context, deliveryID string, ev payload.PushEvent) error {
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
	case !a.serves(ctx, ev.Owner):
		return nil
	case !slices.Contains(ev.Files, pc.Path) && !ev.Forced && !ev.Created && ev.Commits > 0 && ev.Commits < maxListedCommits && a.hasPolicy(ev.Owner):
		// A later push that does not touch the file cannot hide one that did: that one's own
		// job puts its file in force (takePush orders the commits, not the arrivals). With no
		// policy in force every push is read: its pusher vouches for the file as it is.
		logger.Debug().Msg("push ignored: the policy file did not change")
		return nil
	}
	data, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("encode the push: %w", err)
	}
	return a.queue.EnqueuePolicyPush(ctx, deliveryID, data)
}

// processPolicyPush is the policy queue's job: the push, as Pushed encoded it.
func (a *App) processPolicyPush(ctx context.Context, data json.RawMessage) error {
	var ev payload.PushEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		zerolog.Ctx(ctx).Error().Err(err).Msg("a queued policy push cannot be decoded: dropped")
		return nil // retrying cannot help
	}
	logger := zerolog.Ctx(ctx).With().Str(handlers.LogKeyOrg, ev.Owner).Str(handlers.LogKeyActor, ev.Sender).Str("commit", ev.After).Logger()
	ctx = logger.WithContext(ctx)
	// One organization's pushes one at a time; a push that finds another of its organization
	// under way waits for it off the worker, so that the policy queue's workers go to the
	// other organizations meanwhile.
	mu := a.orgLock(ev.Owner)
	if !mu.TryLock() {
		return orgBusy{}
	}
	res, err := a.takePush(ctx, ev)
	mu.Unlock()
	if err != nil {
		return err
	}
	a.reconcileNew(ctx, res)
	return nil
}

// orgBusy is a push whose organization has another under way: it is taken in again shortly
// (jobs.RetryAfterError), without counting as a failure.
type orgBusy struct{}

func (orgBusy) Error() string { return "another push of the organization is being taken in" }

// RetryAfterDuration implements jobs.RetryAfterError.
func (orgBusy) RetryAfterDuration() time.Duration { return 200 * time.Millisecond }

// hasPolicy reports whether an organization has a policy in force.
func (a *App) hasPolicy(owner string) bool {
	_, ok := a.orgs.get(owner)
	return ok
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

func notFound(resp *github.Response) bool {
	return resp != nil && resp.StatusCode == http.StatusNotFound
}

// short is a commit's short form.
func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

var _ handlers.PolicySource = (*App)(nil)
