package handlers

import (
	"context"

	"github.com/rs/zerolog"

	"github.com/ralph-gate/ralph-gate/payload"
)

// The events of an organization's policy (docs/CONFIGURATION.md "Policy in the
// organization's repository").
const (
	EventPush                       = "push"
	EventInstallation               = "installation"
	EventInstallationRepositories   = "installation_repositories"
	installationDeleted             = "deleted"
	installationCreated             = "created"
	installationNewPermissions      = "new_permissions_accepted"
	installationRepositoriesAdded   = "added"
	installationRepositoriesRemoved = "removed"
	installationUnsuspended         = "unsuspend"
	installationSuspended           = "suspend"
)

// PolicySource reads organizations' policies (the app's registry of them).
type PolicySource interface {
	// Pushed takes in a push that may change the policy file (on the policy repository's
	// default branch): it is queued, and its file checked, reported as a check run on its
	// commit and put in force when valid, newer and pushed by someone who may change it.
	Pushed(ctx context.Context, deliveryID string, ev payload.PushEvent) error
	// Installed reads an organization's policy: the App was installed on it, or can now see
	// more of it.
	Installed(ctx context.Context, ev payload.InstallationEvent) error
	// Uninstalled forgets an organization's policy: its projects are no longer enforced.
	Uninstalled(ctx context.Context, ev payload.InstallationEvent) error
}

// Push takes in pushes: one that changes an organization's policy file is queued.
type Push struct{ Policies PolicySource }

// Handles implements githubapp.EventHandler.
func (h *Push) Handles() []string { return []string{EventPush} }

// Handle implements githubapp.EventHandler. A failure is returned, so that GitHub records the
// delivery as failed and the redelivery sweeper delivers it again.
func (h *Push) Handle(ctx context.Context, _, deliveryID string, data []byte) error {
	ev, err := payload.Push(data)
	if err != nil {
		return err
	}
	logger := zerolog.Ctx(ctx).With().Str(LogKeyDelivery, deliveryID).Str(LogKeyOrg, ev.Owner).Str(LogKeyActor, ev.Sender).
		Str("repo", ev.Repo).Str("commit", ev.After).Logger()
	return h.Policies.Pushed(logger.WithContext(ctx), deliveryID, ev)
}

// Installation takes in installation and installation_repositories events: an organization
// that installs the App (or gives it its policy repository) is read, one that uninstalls it
// is forgotten.
type Installation struct{ Policies PolicySource }

// Handles implements githubapp.EventHandler.
func (h *Installation) Handles() []string {
	return []string{EventInstallation, EventInstallationRepositories}
}

// Handle implements githubapp.EventHandler.
func (h *Installation) Handle(ctx context.Context, _, deliveryID string, data []byte) error {
	ev, err := payload.Installation(data)
	if err != nil {
		return err
	}
	logger := zerolog.Ctx(ctx).With().Str(LogKeyDelivery, deliveryID).Str(LogKeyOrg, ev.Account).Str(LogKeyActor, ev.Sender).
		Int64("installation", ev.InstallationID).Str("action", ev.Action).Logger()
	ctx = logger.WithContext(ctx)
	switch ev.Action {
	case installationCreated, installationNewPermissions, installationUnsuspended, installationRepositoriesAdded, installationRepositoriesRemoved:
		return h.Policies.Installed(ctx, ev)
	case installationDeleted, installationSuspended:
		return h.Policies.Uninstalled(ctx, ev)
	}
	logger.Debug().Msg("ignored: the organization's policy is not concerned")
	return nil
}
