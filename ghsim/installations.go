package ghsim

// Installing and uninstalling the App, and changing the repositories of an installation, as an
// organization owner does on GitHub (POST /_sim/install, Server.Install): each sends the
// installation or installation_repositories webhook, which GitHub sends to every App.

// Install is a change of the App's installation on an organization.
type Install struct {
	// Org is the organization (empty: the seed's top-level one).
	Org string `json:"org"`
	// Action is "created" (install), "deleted" (uninstall: the installation's tokens are
	// refused from then on), "added" or "removed" (repositories of a selected installation).
	Action string `json:"action"`
	// By is the seeded user who does it (empty: the first).
	By string `json:"by"`
	// InstallationID is the id of a new installation (created; default: the seed's when the App
	// was never installed there, else a new one, as GitHub gives a reinstall a new id).
	InstallationID int64 `json:"installation_id"`
	// Repositories are the repositories added or removed (added, removed); with created, the
	// repositories selected (empty: all).
	Repositories []string `json:"repositories"`
}

// InstallResult is the installation after the change.
type InstallResult struct {
	ID                  int64    `json:"id"`
	Installed           bool     `json:"installed"`
	RepositorySelection string   `json:"repository_selection"`
	Repositories        []string `json:"repositories"`
}

// Install installs, uninstalls or changes the App's installation on an organization and sends
// the webhook, like POST /_sim/install.
func (s *Server) Install(in Install) (InstallResult, error) {
	s.w.mu.Lock()
	defer s.flushLocked()
	return s.w.install(in)
}

func (w *world) install(req Install) (InstallResult, error) {
	login := req.Org
	if login == "" {
		login = w.org.login
	}
	o := w.orgNamed(login)
	if o == nil {
		return InstallResult{}, errNotFound("no organization %q", login)
	}
	by := w.users[0]
	if req.By != "" {
		if by = w.byLogin[req.By]; by == nil || by.typ != "User" {
			return InstallResult{}, errNotFound("no user %q", req.By)
		}
	}
	var repos []*repo
	for _, name := range req.Repositories {
		r := w.repo(o.login, name)
		if r == nil {
			return InstallResult{}, errNotFound("no repository %s/%s", o.login, name)
		}
		repos = append(repos, r)
	}
	in := o.inst
	switch req.Action {
	case "created":
		if in.installed {
			return InstallResult{}, errInvalid("the App is already installed on %s", o.login)
		}
		id := req.InstallationID
		if id == 0 {
			id = in.id
			if in.used {
				id = w.newInstallationID()
			}
		}
		if other := w.installation(id); other != nil && other != in {
			return InstallResult{}, errInvalid("installation id %d is taken", id)
		}
		in.id, in.installed, in.used, in.createdAt = id, true, true, w.clock()
		in.epoch++
		in.repos = nil
		if len(repos) > 0 {
			in.repos = map[string]bool{}
			for _, r := range repos {
				in.repos[r.name] = true
			}
		}
		w.emitInstallation(in, "created", by)
	case "deleted":
		if !in.installed {
			return InstallResult{}, errInvalid("the App is not installed on %s", o.login)
		}
		w.emitInstallation(in, "deleted", by)
		in.installed = false
	case "added", "removed":
		if !in.installed {
			return InstallResult{}, errInvalid("the App is not installed on %s", o.login)
		}
		if len(repos) == 0 {
			return InstallResult{}, errInvalid("repositories: name at least one")
		}
		var changed []*repo
		if req.Action == "added" {
			if in.repos == nil {
				return InstallResult{}, errInvalid("the installation on %s already has every repository", o.login)
			}
			for _, r := range repos {
				if !in.repos[r.name] {
					in.repos[r.name] = true
					changed = append(changed, r)
				}
			}
		} else {
			if in.repos == nil {
				in.repos = map[string]bool{}
				for _, r := range o.repos {
					in.repos[r.name] = true
				}
			}
			for _, r := range repos {
				if in.repos[r.name] {
					delete(in.repos, r.name)
					changed = append(changed, r)
				}
			}
		}
		if len(changed) > 0 {
			w.emitInstallationRepos(in, req.Action, changed, by)
		}
	default:
		return InstallResult{}, errInvalid("action must be created, deleted, added or removed, not %q", req.Action)
	}
	res := InstallResult{ID: in.id, Installed: in.installed, RepositorySelection: in.selection(), Repositories: []string{}}
	for _, r := range o.repos {
		if in.repos == nil || in.repos[r.name] {
			res.Repositories = append(res.Repositories, r.name)
		}
	}
	return res, nil
}

// newInstallationID is one more than the largest installation id.
func (w *world) newInstallationID() int64 {
	var top int64
	for _, in := range w.installs {
		top = max(top, in.id)
	}
	return top + 1
}

// repoRefJSON is a repository as installation payloads list it.
func repoRefJSON(r *repo) map[string]any {
	return map[string]any{"id": r.id, "node_id": r.nodeID, "name": r.name, "full_name": r.fullName(), "private": false}
}

// emitInstallation sends installation.created or .deleted: the installation, the repositories it
// sees, the requester (null) and the sender. Installation payloads carry no organization.
func (w *world) emitInstallation(in *installation, action string, by *actor) {
	repos := []any{}
	for _, r := range in.org.repos {
		if in.repos == nil || in.repos[r.name] {
			repos = append(repos, repoRefJSON(r))
		}
	}
	w.queue(event{name: "installation", action: action, installationID: in.id}, map[string]any{
		"action": action, "installation": w.installationJSON(in), "repositories": repos, "requester": nil, "sender": w.userJSON(by),
	})
}

// emitInstallationRepos sends installation_repositories.added or .removed.
func (w *world) emitInstallationRepos(in *installation, action string, changed []*repo, by *actor) {
	list := []any{}
	for _, r := range changed {
		list = append(list, repoRefJSON(r))
	}
	added, removed := []any{}, []any{}
	if action == "added" {
		added = list
	} else {
		removed = list
	}
	w.queue(event{name: "installation_repositories", action: action, installationID: in.id}, map[string]any{
		"action": action, "installation": w.installationJSON(in), "repository_selection": in.selection(),
		"repositories_added": added, "repositories_removed": removed, "requester": nil, "sender": w.userJSON(by),
	})
}
