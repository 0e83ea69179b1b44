package ghsim

import (
	"cmp"
	"fmt"
	"maps"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// seedEpoch is the creation time of everything in the seed, so that two worlds built from one seed
// are identical; objects created later take the server's clock.
var seedEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type actor struct {
	login    string
	id       int64
	nodeID   string
	typ      string // "User" or "Bot": the GraphQL type and the REST "type"
	token    string
	userKind string // informational, from the seed
}

func (a *actor) gqlType() string { return a.typ }

type repo struct {
	id        int64
	nodeID    string
	owner     *organization
	name      string
	createdAt time.Time
	// commits is the default branch's linear history, oldest first (repo_files.go).
	commits   []*commit
	checkRuns []*checkRun // oldest first (rest_checks.go)
}

func (r *repo) fullName() string { return r.owner.login + "/" + r.name }

func (r *repo) gqlType() string { return "Repository" }

type project struct {
	id        int64
	nodeID    string
	owner     *organization
	number    int
	title     string
	fields    []*field
	items     []*item
	createdAt time.Time
	updatedAt time.Time
}

func (p *project) gqlType() string { return "ProjectV2" }

func (p *project) fieldByName(name string) *field {
	for _, f := range p.fields {
		if f.name == name {
			return f
		}
	}
	return nil
}

type field struct {
	id        int64
	nodeID    string
	name      string
	dataType  string // FieldSingleSelect, FieldText or FieldNumber
	project   *project
	options   []*option
	createdAt time.Time
}

func (f *field) gqlType() string {
	if f.dataType == FieldSingleSelect {
		return "ProjectV2SingleSelectField"
	}
	return "ProjectV2Field"
}

func (f *field) option(id string) *option {
	for _, o := range f.options {
		if o.id == id {
			return o
		}
	}
	return nil
}

func (f *field) optionByName(name string) *option {
	for _, o := range f.options {
		if o.name == name {
			return o
		}
	}
	return nil
}

type option struct {
	id          string
	name        string
	color       string
	description string
}

type item struct {
	id         int64
	nodeID     string
	project    *project
	content    any // *issue, *pullRequest or *draft
	values     map[*field]*fieldValue
	archived   bool
	archivedAt *time.Time
	createdAt  time.Time
	updatedAt  time.Time
	creator    *actor
}

func (it *item) gqlType() string { return "ProjectV2Item" }

// An item's archived state, as GitHub's ProjectV2ItemArchivedState names it.
const (
	archivedYes = "ARCHIVED"
	archivedNot = "NOT_ARCHIVED"
)

// archivedState is the item's ProjectV2ItemArchivedState. Archived items keep their values and
// stay readable by id; the project's items connection lists them only when asked
// (archivedStates), an issue's or pull request's projectItems unless asked not to
// (includeArchived: false).
func (it *item) archivedState() string {
	if it.archived {
		return archivedYes
	}
	return archivedNot
}

func (it *item) contentType() string {
	switch it.content.(type) {
	case *issue:
		return "Issue"
	case *pullRequest:
		return "PullRequest"
	default:
		return "DraftIssue"
	}
}

func (it *item) contentNodeID() string {
	switch c := it.content.(type) {
	case *issue:
		return c.nodeID
	case *pullRequest:
		return c.nodeID
	case *draft:
		return c.nodeID
	}
	return ""
}

// fieldValue is an item's value of one field: opt for a single-select field, text or number
// for a text or number field.
type fieldValue struct {
	nodeID    string
	item      *item
	field     *field
	opt       *option
	text      string
	number    float64
	createdAt time.Time
	updatedAt time.Time
	creator   *actor
}

func (v *fieldValue) gqlType() string {
	switch v.field.dataType {
	case FieldText:
		return "ProjectV2ItemFieldTextValue"
	case FieldNumber:
		return "ProjectV2ItemFieldNumberValue"
	}
	return "ProjectV2ItemFieldSingleSelectValue"
}

// same reports whether two values of one field are equal (GitHub sends nothing for a write
// that changes nothing).
func (v *fieldValue) same(o *fieldValue) bool {
	return v.opt == o.opt && v.text == o.text && v.number == o.number
}

// display is the value as /_sim/state shows it: the option's name, the text, the number.
func (v *fieldValue) display() string {
	switch v.field.dataType {
	case FieldText:
		return v.text
	case FieldNumber:
		return strconv.FormatFloat(v.number, 'f', -1, 64)
	}
	return v.opt.name
}

type issue struct {
	id          int64
	nodeID      string
	repo        *repo
	number      int
	title       string
	body        string
	state       string // open, closed
	stateReason string // "", completed, not_planned, duplicate, reopened
	author      *actor
	assignees   []*actor
	parent      *issue
	subIssues   []*issue
	blockedBy   []*issue
	blocking    []*issue
	comments    []*comment
	items       []*item
	closedBy    []*pullRequest
	createdAt   time.Time
	updatedAt   time.Time
	closedAt    *time.Time
	timeline    []*issueEvent // closes and reopens, oldest first
}

func (i *issue) gqlType() string { return "Issue" }

// issueEvent is an entry of an issue's timeline: a close or a reopen (the only kinds ghsim
// keeps; timelineItems asks for them by itemTypes).
type issueEvent struct {
	nodeID    string
	kind      string // CLOSED_EVENT or REOPENED_EVENT (IssueTimelineItemsItemType)
	actor     *actor
	createdAt time.Time
	reason    string // the state reason set
}

func (e *issueEvent) gqlType() string {
	if e.kind == "CLOSED_EVENT" {
		return "ClosedEvent"
	}
	return "ReopenedEvent"
}

type pullRequest struct {
	id        int64
	nodeID    string
	repo      *repo
	number    int
	title     string
	body      string
	state     string // open, closed
	merged    bool
	mergedAt  *time.Time
	mergedBy  *actor
	closes    []*issue
	author    *actor
	items     []*item
	createdAt time.Time
	updatedAt time.Time
	closedAt  *time.Time
}

func (p *pullRequest) gqlType() string { return "PullRequest" }

type comment struct {
	id        int64
	nodeID    string
	issue     *issue
	author    *actor
	body      string
	createdAt time.Time
	updatedAt time.Time
}

func (c *comment) gqlType() string { return "IssueComment" }

type draft struct {
	id        int64
	nodeID    string
	title     string
	body      string
	creator   *actor
	items     []*item
	createdAt time.Time
	updatedAt time.Time
}

func (d *draft) gqlType() string { return "DraftIssue" }

type organization struct {
	login    string
	id       int64
	nodeID   string
	projects []*project
	repos    []*repo
	inst     *installation
	// members are the seeded users who belong to it, by login: their role (OrgRoleMember or
	// OrgRoleAdmin).
	members map[string]string
	teams   []*team
}

func (o *organization) gqlType() string { return "Organization" }

func (o *organization) projectByNumber(n int) *project {
	for _, p := range o.projects {
		if p.number == n {
			return p
		}
	}
	return nil
}

// installation is the App's installation on one organization. A deleted one stays (installed
// false) so that its tokens are refused and it can be installed again.
type installation struct {
	id          int64
	org         *organization
	permissions map[string]string
	// repos are the repositories the installation may see; nil: all (repository_selection all).
	repos     map[string]bool
	installed bool
	used      bool // installed at some time: a new install gets a new id
	epoch     int  // incremented by each install: tokens of an earlier one are refused
	createdAt time.Time
}

// sees reports whether the installation may see the repository.
func (in *installation) sees(r *repo) bool {
	return in.installed && r.owner == in.org && (in.repos == nil || in.repos[r.name])
}

func (in *installation) selection() string {
	if in.repos == nil {
		return "all"
	}
	return "selected"
}

// can reports whether the installation holds permission name at level (read or write) or more.
func (in *installation) can(name, level string) bool {
	got := in.permissions[name]
	return got == "write" || got == "admin" || (level == "read" && got == "read")
}

type appInfo struct {
	id          int64
	slug        string
	name        string
	bot         *actor
	permissions map[string]string
	events      []string
}

type issueKey struct {
	org    string
	repo   string
	number int
}

// event is one webhook, its body rendered when the change happened.
type event struct {
	name           string
	action         string
	body           []byte
	installationID int64
	repositoryID   *int64
}

// world is the simulated GitHub state. Every access holds mu; mutations append the webhooks they
// cause to pending, which the server hands to the dispatcher in order.
type world struct {
	mu sync.RWMutex

	now     func() time.Time
	baseURL string
	ids     *idAlloc
	tick    int

	org        *organization // the seed's top-level organization
	orgs       []*organization
	orgByLogin map[string]*organization // by lower-case login
	installs   []*installation
	app        appInfo
	users      []*actor
	byLogin    map[string]*actor
	byToken    map[string]*actor
	repos      []*repo
	repoByName map[string]*repo // by lower-case "owner/name"
	projects   []*project
	checkRuns  map[int64]*checkRun
	suites     map[string]int64 // check suite id by "owner/repo@sha"
	issues     []*issue
	issueByKey map[issueKey]*issue
	prs        []*pullRequest
	prByKey    map[issueKey]*pullRequest
	nodes      map[string]any
	comments   map[int64]*comment
	pending    []event
}

func newWorld(seed Seed, now func() time.Time) (*world, error) {
	w := &world{now: now}
	if err := w.load(seed); err != nil {
		return nil, err
	}
	return w, nil
}

func (w *world) seedTime() time.Time {
	w.tick++
	return seedEpoch.Add(time.Duration(w.tick) * time.Second)
}

func (w *world) clock() time.Time { return w.now().UTC().Truncate(time.Second) }

// load (re)builds the world from the seed. Callers hold mu or own w exclusively.
func (w *world) load(seed Seed) error {
	if err := seed.Validate(); err != nil {
		return err
	}
	w.ids = newIDAlloc()
	w.tick = 0
	w.nodes = map[string]any{}
	w.comments = map[int64]*comment{}
	w.byLogin = map[string]*actor{}
	w.byToken = map[string]*actor{}
	w.repoByName = map[string]*repo{}
	w.issueByKey = map[issueKey]*issue{}
	w.prByKey = map[issueKey]*pullRequest{}
	w.users, w.repos, w.projects, w.issues, w.prs, w.pending = nil, nil, nil, nil, nil, nil
	w.orgs, w.installs = nil, nil
	w.orgByLogin = map[string]*organization{}
	w.checkRuns = map[int64]*checkRun{}
	w.suites = map[string]int64{}

	orgSeeds := seed.allOrgs()
	for _, so := range orgSeeds {
		oid := w.ids.take("org")
		o := &organization{login: so.Login, id: oid, nodeID: nodeID("O", oid), members: map[string]string{}}
		w.orgs = append(w.orgs, o)
		w.orgByLogin[strings.ToLower(o.login)] = o
		w.nodes[o.nodeID] = o
	}
	w.org = w.orgs[0]

	botID := w.ids.take("bot")
	bot := &actor{login: seed.App.Slug + "[bot]", id: botID, nodeID: nodeID("BOT", botID), typ: "Bot"}
	w.app = appInfo{id: seed.App.ID, slug: seed.App.Slug, name: seed.App.Name, bot: bot, permissions: seed.App.Permissions, events: seed.App.Events}
	if w.app.name == "" {
		w.app.name = seed.App.Slug
	}
	if w.app.permissions == nil {
		w.app.permissions = defaultPermissions()
	}
	if w.app.events == nil {
		w.app.events = defaultEvents()
	}
	w.byLogin[bot.login] = bot
	w.nodes[bot.nodeID] = bot

	for _, su := range seed.Users {
		id := w.ids.take("user")
		u := &actor{login: su.Login, id: id, nodeID: nodeID("U", id), typ: "User", token: su.Token, userKind: su.Kind}
		w.users = append(w.users, u)
		w.byLogin[u.login] = u
		if u.token != "" {
			w.byToken[u.token] = u
		}
		w.nodes[u.nodeID] = u
	}
	for i, so := range orgSeeds {
		o := w.orgs[i]
		switch {
		case i == 0:
			for _, su := range seed.Users {
				if su.OrgRole != OrgRoleNone {
					o.members[su.Login] = cmp.Or(su.OrgRole, OrgRoleMember)
				}
			}
		case so.Members != nil:
			for _, m := range so.Members {
				o.members[m] = OrgRoleMember
			}
		default:
			maps.Copy(o.members, w.orgs[0].members)
		}
		in := &installation{id: so.InstallationID, org: o, permissions: so.Permissions, installed: so.Installed == nil || *so.Installed, createdAt: seedEpoch}
		in.used = in.installed
		if in.permissions == nil {
			in.permissions = w.app.permissions
		}
		if len(so.Repositories) > 0 {
			in.repos = map[string]bool{}
			for _, r := range so.Repositories {
				in.repos[r] = true
			}
		}
		o.inst = in
		w.installs = append(w.installs, in)
		w.loadOrg(o, so)
		w.loadTeams(o, so.Teams)
	}
	return nil
}

// defaultPermissions are the App's permissions unless the seed names them: what ralph-gate needs
// (members: read only for the board pages and for policy admins named by team: a seed adds it).
func defaultPermissions() map[string]string {
	return map[string]string{"organization_projects": "write", "issues": "write", "pull_requests": "read", "metadata": "read",
		"contents": "read", "checks": "write"}
}

// defaultEvents are the App's webhook events unless the seed names them.
func defaultEvents() []string {
	return []string{"projects_v2_item", "issues", "pull_request", "push", "installation", "installation_repositories"}
}

// loadOrg builds one organization's repositories, projects, issues, pull requests and items.
func (w *world) loadOrg(o *organization, so SeedOrg) {
	for _, sr := range so.Repos {
		id := w.ids.take("repo")
		r := &repo{id: id, nodeID: nodeID("R", id), owner: o, name: sr.Name, createdAt: w.seedTime()}
		r.commits = []*commit{w.newCommit(r, nil, "Initial commit", w.users[0], r.createdAt, sr.Files)}
		w.repos = append(w.repos, r)
		o.repos = append(o.repos, r)
		w.repoByName[repoKey(o.login, sr.Name)] = r
		w.nodes[r.nodeID] = r
	}
	for _, sp := range so.Projects {
		id := w.ids.take("project")
		p := &project{id: id, nodeID: nodeID("PVT", id), owner: o, number: sp.Number, title: sp.Title, createdAt: w.seedTime()}
		p.updatedAt = p.createdAt
		for _, sf := range sp.Fields {
			fid := w.ids.take("field")
			f := &field{id: fid, nodeID: nodeID("PVTSSF", fid), name: sf.Name, dataType: FieldSingleSelect, project: p, createdAt: p.createdAt}
			if sf.Type == FieldText || sf.Type == FieldNumber {
				// GitHub's node ids: PVTSSF_ for single-select fields, PVTF_ for the others.
				f.nodeID, f.dataType = nodeID("PVTF", fid), sf.Type
			}
			for i, so := range sf.Options {
				color := so.Color
				if color == "" {
					color = optionColors[i%len(optionColors)]
				}
				f.options = append(f.options, &option{id: optionID(sp.Number, sf.Name, so.Name), name: so.Name, color: color, description: so.Description})
			}
			p.fields = append(p.fields, f)
			w.nodes[f.nodeID] = f
		}
		w.projects = append(w.projects, p)
		o.projects = append(o.projects, p)
		w.nodes[p.nodeID] = p
	}
	defaultAuthor := w.users[0]
	userOr := func(login string) *actor {
		if a := w.byLogin[login]; a != nil {
			return a
		}
		return defaultAuthor
	}
	key := func(repoName string, n int) issueKey { return issueKey{strings.ToLower(o.login), repoName, n} }
	for _, si := range so.Issues {
		id := w.ids.take("issue")
		t := w.seedTime()
		is := &issue{id: id, nodeID: nodeID("I", id), repo: w.repo(o.login, si.Repo), number: si.Number, title: si.Title,
			body: si.Body, state: "open", author: userOr(si.Author), createdAt: t, updatedAt: t}
		if si.State == "closed" {
			is.state = "closed"
			is.stateReason = si.StateReason
			if is.stateReason == "" {
				is.stateReason = "completed"
			}
			ct := t
			is.closedAt = &ct
		} else if si.StateReason == "reopened" {
			is.stateReason = "reopened"
		}
		for _, a := range si.Assignees {
			is.assignees = append(is.assignees, w.byLogin[a])
		}
		w.issues = append(w.issues, is)
		w.issueByKey[key(si.Repo, si.Number)] = is
		w.nodes[is.nodeID] = is
	}
	for _, si := range so.Issues {
		is := w.issueByKey[key(si.Repo, si.Number)]
		if si.Parent != 0 {
			p := w.issueByKey[key(si.Repo, si.Parent)]
			is.parent = p
			p.subIssues = append(p.subIssues, is)
		}
		for _, b := range si.BlockedBy {
			bi := w.issueByKey[key(si.Repo, b)]
			is.blockedBy = append(is.blockedBy, bi)
			bi.blocking = append(bi.blocking, is)
		}
		for _, sc := range si.Comments {
			w.newComment(is, userOr(sc.Author), sc.Body, w.seedTime())
		}
	}
	for _, sp := range so.PullRequests {
		id := w.ids.take("pr")
		t := w.seedTime()
		pr := &pullRequest{id: id, nodeID: nodeID("PR", id), repo: w.repo(o.login, sp.Repo), number: sp.Number, title: sp.Title,
			body: sp.Body, state: "open", author: userOr(sp.Author), createdAt: t, updatedAt: t}
		for _, c := range sp.Closes {
			is := w.issueByKey[key(sp.Repo, c)]
			pr.closes = append(pr.closes, is)
			is.closedBy = append(is.closedBy, pr)
		}
		w.prs = append(w.prs, pr)
		w.prByKey[key(sp.Repo, sp.Number)] = pr
		w.nodes[pr.nodeID] = pr
	}
	// Items: issues, then pull requests, then drafts, each in seed order.
	for _, si := range so.Issues {
		if pn := issueProject(so.Projects, si.Project, si.Fields); pn != 0 {
			w.seedItem(o.projectByNumber(pn), w.issueByKey[key(si.Repo, si.Number)], si.Fields, defaultAuthor)
		}
	}
	for _, sp := range so.PullRequests {
		if pn := issueProject(so.Projects, sp.Project, sp.Fields); pn != 0 {
			w.seedItem(o.projectByNumber(pn), w.prByKey[key(sp.Repo, sp.Number)], sp.Fields, defaultAuthor)
		}
	}
	for _, sd := range so.DraftItems {
		id := w.ids.take("draft")
		t := w.seedTime()
		d := &draft{id: id, nodeID: nodeID("DI", id), title: sd.Title, body: sd.Body, creator: defaultAuthor, createdAt: t, updatedAt: t}
		w.nodes[d.nodeID] = d
		w.seedItem(o.projectByNumber(sd.Project), d, sd.Fields, defaultAuthor)
	}
}

func repoKey(owner, name string) string { return strings.ToLower(owner + "/" + name) }

// repo finds a repository by owner and name (case-insensitively, as GitHub does).
func (w *world) repo(owner, name string) *repo { return w.repoByName[repoKey(owner, name)] }

// orgByName finds an organization by login (case-insensitively).
func (w *world) orgNamed(login string) *organization { return w.orgByLogin[strings.ToLower(login)] }

// installation finds an installation by id (deleted ones too).
func (w *world) installation(id int64) *installation {
	for _, in := range w.installs {
		if in.id == id {
			return in
		}
	}
	return nil
}

func (w *world) seedItem(p *project, content any, values map[string]string, creator *actor) {
	t := w.seedTime()
	it := w.newItem(p, content, creator, t)
	names := make([]string, 0, len(values))
	for n := range values {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		f := p.fieldByName(n)
		v := &fieldValue{nodeID: fieldValueNodeID(it, f), item: it, field: f, createdAt: t, updatedAt: t, creator: creator}
		switch f.dataType {
		case FieldText:
			v.text = values[n]
		case FieldNumber:
			v.number, _ = strconv.ParseFloat(values[n], 64) // checked by Seed.Validate
		default:
			v.opt = f.optionByName(values[n])
		}
		it.values[f] = v
	}
}

func fieldValueNodeID(it *item, f *field) string {
	return nodeID("PVTFSV", it.id*1000+f.id%1000)
}

func (w *world) newItem(p *project, content any, creator *actor, t time.Time) *item {
	id := w.ids.take("item")
	it := &item{id: id, nodeID: nodeID("PVTI", id), project: p, content: content, values: map[*field]*fieldValue{},
		createdAt: t, updatedAt: t, creator: creator}
	p.items = append(p.items, it)
	switch c := content.(type) {
	case *issue:
		c.items = append(c.items, it)
	case *pullRequest:
		c.items = append(c.items, it)
	case *draft:
		c.items = append(c.items, it)
	}
	w.nodes[it.nodeID] = it
	return it
}

func (w *world) newComment(is *issue, author *actor, body string, t time.Time) *comment {
	id := w.ids.take("comment")
	c := &comment{id: id, nodeID: nodeID("IC", id), issue: is, author: author, body: body, createdAt: t, updatedAt: t}
	is.comments = append(is.comments, c)
	w.nodes[c.nodeID] = c
	w.comments[id] = c
	return c
}

func (w *world) issue(owner, repoName string, number int) *issue {
	return w.issueByKey[issueKey{strings.ToLower(owner), repoName, number}]
}

func (w *world) pr(owner, repoName string, number int) *pullRequest {
	return w.prByKey[issueKey{strings.ToLower(owner), repoName, number}]
}

func (w *world) comment(id int64) *comment { return w.comments[id] }

// subscribed reports whether the App receives eventName: the events it subscribes to, and the
// installation events GitHub sends every App.
func (w *world) subscribed(eventName string) bool {
	if eventName == "installation" || eventName == "installation_repositories" {
		return true
	}
	for _, e := range w.app.events {
		if e == eventName {
			return true
		}
	}
	return false
}

// errNotFound and errInvalid are the two kinds of refusal every API maps to its own shape.
type notFoundError struct{ what string }

func (e notFoundError) Error() string { return e.what }

type invalidError struct{ msg string }

func (e invalidError) Error() string { return e.msg }

func errNotFound(format string, a ...any) error { return notFoundError{fmt.Sprintf(format, a...)} }
func errInvalid(format string, a ...any) error  { return invalidError{fmt.Sprintf(format, a...)} }
