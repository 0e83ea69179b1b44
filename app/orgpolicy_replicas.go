package app

import (
	"context"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/ralph-gate/ralph-gate/store"
)

// Replicas share the organizations' policies through the store: the one that reads a file
// keeps it there and notifies the others (PostgreSQL NOTIFY), which put the same policy in
// force from the same time; a replica that starts, or whose listening resumes, reads them all.

// restoreOrgPolicies puts in force the policies the store kept (before GitHub is read):
// a restart enforces each organization's last valid policy at once.
func (a *App) restoreOrgPolicies(ctx context.Context) error { return a.refreshOrgPolicies(ctx) }

// notifyReplicas tells the other replicas (PostgreSQL) that an organization's policy changed:
// each puts the store's in force, from the time it was put in force here. A notification that
// fails is logged: the replicas read every policy again when their listening resumes.
func (a *App) notifyReplicas(ctx context.Context, owner string) {
	if err := a.store.NotifyOrgPolicy(ctx, owner); err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Str("org", owner).Msg("the other replicas were not told of the organization's policy")
	}
}

// listenOrgPolicies keeps this replica's policies as the store has them, woken by the others'
// notifications (PostgreSQL), until ctx ends. Each time it starts listening it reads every
// policy (a change made before is not missed); when the connection fails it listens anew,
// backing off from a second to a minute.
func (a *App) listenOrgPolicies(ctx context.Context) {
	logger := zerolog.Ctx(ctx)
	wait := time.Second
	for {
		listened := false
		err := a.store.ListenOrgPolicies(ctx, func() {
			listened = true
			if err := a.refreshOrgPolicies(ctx); err != nil {
				logger.Warn().Err(err).Msg("reading the organizations' policies")
			}
		}, func(owner string) { a.refreshOrgPolicy(ctx, owner) })
		if ctx.Err() != nil {
			return
		}
		if listened {
			wait = time.Second
		}
		logger.Warn().Err(err).Dur("retry_in", wait).Msg("listening for the organizations' policies failed; listening again")
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Minute)
	}
}

// refreshOrgPolicies puts in force every policy the store has that this replica does not, and
// forgets the organizations the store no longer has (uninstalled meanwhile).
func (a *App) refreshOrgPolicies(ctx context.Context) error {
	kept, err := a.store.OrgPolicies(ctx)
	if err != nil {
		return err
	}
	known := map[string]bool{}
	for _, k := range kept {
		known[strings.ToLower(k.Owner)] = true
		a.takeKept(ctx, k)
	}
	for _, op := range a.orgs.all() {
		if !known[strings.ToLower(op.owner)] {
			a.orgs.forget(op.owner)
		}
	}
	return nil
}

// refreshOrgPolicy puts in force the store's policy of an organization another replica
// changed, or forgets it (uninstalled).
func (a *App) refreshOrgPolicy(ctx context.Context, owner string) {
	k, found, err := a.store.GetOrgPolicy(ctx, owner)
	switch {
	case err != nil:
		zerolog.Ctx(ctx).Warn().Err(err).Str("org", owner).Msg("reading the organization's policy another replica changed")
	case !found:
		a.orgs.forget(owner)
	default:
		a.takeKept(ctx, k)
	}
}

// takeKept puts a policy the store keeps in force, from the time it was put in force, unless
// this replica has it already.
func (a *App) takeKept(ctx context.Context, k store.OrgPolicy) {
	if k.SHA == "" {
		return // only refused pushes so far
	}
	if cur, ok := a.orgs.get(k.Owner); ok && cur.sha == k.SHA && cur.loadedAt.Equal(k.LoadedAt) {
		return
	}
	op, problems := a.orgs.compile(k.Owner, k.InstallationID, k.SHA, []byte(k.Text), k.LoadedAt)
	if len(problems) > 0 {
		// The deployment's configuration changed under it (an agent's token gone): the
		// organization's projects wait for its next valid file.
		zerolog.Ctx(ctx).Error().Str("org", k.Owner).Str("commit", k.SHA).Str("problems", problemLines(problems)).
			Msg("the organization's kept policy no longer validates against this deployment's configuration: its projects are not enforced until its file is fixed")
		return
	}
	a.orgs.put(op)
}

// PolicyCommit is the commit of the organization's policy this replica has in force ("" none).
func (a *App) PolicyCommit(owner string) string {
	if a.orgs == nil {
		return ""
	}
	op, _ := a.orgs.get(owner)
	return op.sha
}
