package ghsim

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Seed is the initial world of a simulator: an organization, its repositories (with files),
// users, the GitHub App installed on it, Projects V2 boards with single-select, text and number
// fields, issues and pull requests; optionally more organizations (Orgs), each with its own
// installation of the same App.
// It is decoded strictly from YAML (unknown keys are errors); tests may also build it in Go.
type Seed struct {
	Org          string        `yaml:"org"`
	App          SeedApp       `yaml:"app"`
	Users        []SeedUser    `yaml:"users"`
	Repos        []SeedRepo    `yaml:"repos"`
	Projects     []SeedProject `yaml:"projects"`
	Issues       []SeedIssue   `yaml:"issues"`
	PullRequests []SeedPR      `yaml:"pull_requests"`
	DraftItems   []SeedDraft   `yaml:"draft_items"`
	// Teams are the top-level organization's teams, answered by
	// GET /orgs/{org}/teams/{team_slug}/memberships/{username}.
	Teams []SeedTeam `yaml:"teams"`
	// Orgs are further organizations, each with its own installation of the App, its own
	// repositories, projects, issues, pull requests and draft items. The users are shared.
	Orgs []SeedOrg `yaml:"orgs"`
}

// SeedRepo is a repository: in YAML a plain name (`app`) or a mapping
// `{name: .github, files: {ralph-gate.yml: "..."}}`. The files (path → text) are the first
// commit of its default branch, main; a repository without files starts with an empty commit.
type SeedRepo struct {
	Name  string            `yaml:"name"`
	Files map[string]string `yaml:"files"`
}

// UnmarshalYAML decodes a repository's name or its {name, files} mapping (strictly).
func (r *SeedRepo) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		*r = SeedRepo{Name: n.Value}
		return nil
	case yaml.MappingNode:
		type plain SeedRepo
		var p plain
		if err := decodeStrict(n, &p); err != nil {
			return fmt.Errorf("repo: %w", err)
		}
		*r = SeedRepo(p)
		return nil
	}
	return fmt.Errorf("line %d: a repo is a name or {name, files}", n.Line)
}

// SeedOrg is one more organization with its own installation of the App.
type SeedOrg struct {
	Login          string `yaml:"login"`
	InstallationID int64  `yaml:"installation_id"`
	// Installed false leaves the App not installed there until POST /_sim/install created.
	Installed *bool `yaml:"installed"`
	// Permissions of this installation (default: the App's, app.permissions).
	Permissions map[string]string `yaml:"permissions"`
	// Repositories, when set, installs the App on these repositories of the organization only.
	Repositories []string `yaml:"repositories"`
	// Members are the seeded users who are members of this organization (default: the users
	// whose org_role is not none).
	Members      []string      `yaml:"members"`
	Repos        []SeedRepo    `yaml:"repos"`
	Projects     []SeedProject `yaml:"projects"`
	Issues       []SeedIssue   `yaml:"issues"`
	PullRequests []SeedPR      `yaml:"pull_requests"`
	DraftItems   []SeedDraft   `yaml:"draft_items"`
	// Teams are this organization's teams.
	Teams []SeedTeam `yaml:"teams"`
}

// SeedTeam is a team of an organization. Its members must be members of the organization;
// each has the role "member", or "maintainer" when listed in Maintainers (an organization
// admin on the team is always a maintainer, as GitHub reports organization owners).
type SeedTeam struct {
	// Slug names the team in URLs (GitHub derives it from the team's name): lower-case
	// letters, digits, "-" and "_".
	Slug string `yaml:"slug"`
	// Members are seeded users on the team as "member" (unless admins of the organization).
	Members []string `yaml:"members"`
	// Maintainers are seeded users on the team as "maintainer".
	Maintainers []string `yaml:"maintainers"`
}

// RepoNames are the names of repos, in order.
func RepoNames(repos []SeedRepo) []string {
	out := make([]string, 0, len(repos))
	for _, r := range repos {
		out = append(out, r.Name)
	}
	return out
}

// allOrgs is every organization of the seed, the top-level one first (Members nil: by
// users' org_role), as SeedOrg values.
func (s *Seed) allOrgs() []SeedOrg {
	main := SeedOrg{Login: s.Org, InstallationID: s.App.InstallationID, Permissions: s.App.Permissions,
		Repositories: s.App.Repositories, Repos: s.Repos, Projects: s.Projects, Issues: s.Issues,
		PullRequests: s.PullRequests, DraftItems: s.DraftItems, Teams: s.Teams}
	return append([]SeedOrg{main}, s.Orgs...)
}

// SeedApp describes the GitHub App and its single installation on the organization.
type SeedApp struct {
	ID             int64  `yaml:"id"`
	Slug           string `yaml:"slug"`
	Name           string `yaml:"name"`
	InstallationID int64  `yaml:"installation_id"`
	// PrivateKeyFile is read when it exists and created (RSA-2048 PEM) when it does not, so the
	// app under test and ghsim share one key. Relative paths resolve against the seed file.
	PrivateKeyFile string `yaml:"private_key_file"`
	// PrivateKeyPEM is an inline alternative to PrivateKeyFile (handy in tests).
	PrivateKeyPEM string `yaml:"private_key_pem"`
	WebhookURL    string `yaml:"webhook_url"`
	WebhookSecret string `yaml:"webhook_secret"`
	// Permissions and Events override what GET /app reports (defaults: what ralph-gate needs).
	Permissions map[string]string `yaml:"permissions"`
	Events      []string          `yaml:"events"`
	// Repositories, when set, installs the app on these repositories only (GitHub's
	// repository_selection "selected"): with its installation token it may not see the issues
	// and pull requests of the others (GraphQL answers FORBIDDEN, "Resource not accessible by
	// integration", with the rest of the data). Empty: every repository.
	Repositories []string `yaml:"repositories"`
	// ClientID and ClientSecret are the App's OAuth client (user access tokens, oauth.go);
	// empty: derived from the App id, as the manifest conversion answers them.
	ClientID     string `yaml:"client_id"`
	ClientSecret string `yaml:"client_secret"`
	// CallbackURLs are the App's registered callback URLs; empty: any redirect_uri.
	CallbackURLs []string `yaml:"callback_urls"`
}

// SeedUser is a person or agent that calls the API with Token.
type SeedUser struct {
	Login string `yaml:"login"`
	Token string `yaml:"token"`
	Kind  string `yaml:"kind"` // informational: human, agent
	// OrgRole is the user's membership of the organization: member (default), admin or none.
	OrgRole string `yaml:"org_role"`
}

// SeedProject is an organization-owned Projects V2 board.
type SeedProject struct {
	Number int        `yaml:"number"`
	Title  string     `yaml:"title"`
	Fields SeedFields `yaml:"fields"`
}

// SeedFields is an ordered list of fields; in YAML a mapping from field name to its options
// (each a name, or {name, color, description}) for a single-select field, or to the word `text`
// or `number` for a text or number field.
type SeedFields []SeedField

// SeedField is one field: single-select (Type "" or FieldSingleSelect) with its options, or a
// text or number field (no options).
type SeedField struct {
	Name    string
	Type    string
	Options []SeedOption
}

// Field types a seed may declare, as the projects_v2_item webhook's field_type names them.
const (
	FieldSingleSelect = "single_select"
	FieldText         = "text"
	FieldNumber       = "number"
)

// SeedOption is one single-select option. Color defaults to a GitHub color chosen by position.
type SeedOption struct {
	Name        string `yaml:"name"`
	Color       string `yaml:"color"`
	Description string `yaml:"description"`
}

// SeedIssue is an issue, optionally on a project with field values by field name.
type SeedIssue struct {
	Repo        string            `yaml:"repo"`
	Number      int               `yaml:"number"`
	Title       string            `yaml:"title"`
	Body        string            `yaml:"body"`
	State       string            `yaml:"state"`        // open (default) or closed
	StateReason string            `yaml:"state_reason"` // completed, not_planned (closed only)
	Author      string            `yaml:"author"`       // defaults to the first user
	Parent      int               `yaml:"parent"`
	BlockedBy   []int             `yaml:"blocked_by"`
	Project     int               `yaml:"project"` // 0: the only project when fields are given
	Fields      map[string]string `yaml:"fields"`
	Assignees   []string          `yaml:"assignees"`
	Comments    []SeedComment     `yaml:"comments"`
}

// SeedComment is an existing issue comment.
type SeedComment struct {
	Author string `yaml:"author"`
	Body   string `yaml:"body"`
}

// SeedPR is a pull request; Closes lists issue numbers (same repo) it closes when merged.
type SeedPR struct {
	Repo    string            `yaml:"repo"`
	Number  int               `yaml:"number"`
	Title   string            `yaml:"title"`
	Body    string            `yaml:"body"`
	Author  string            `yaml:"author"`
	Closes  []int             `yaml:"closes"`
	Project int               `yaml:"project"`
	Fields  map[string]string `yaml:"fields"`
}

// SeedDraft is a draft issue item on a project.
type SeedDraft struct {
	Project int               `yaml:"project"`
	Title   string            `yaml:"title"`
	Body    string            `yaml:"body"`
	Fields  map[string]string `yaml:"fields"`
}

// UnmarshalYAML decodes an ordered mapping of field name to options.
func (f *SeedFields) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: fields must be a mapping of field name to options", n.Line)
	}
	var out SeedFields
	for i := 0; i+1 < len(n.Content); i += 2 {
		name := n.Content[i].Value
		val := n.Content[i+1]
		if val.Kind == yaml.ScalarNode && (val.Value == FieldText || val.Value == FieldNumber) {
			out = append(out, SeedField{Name: name, Type: val.Value})
			continue
		}
		if val.Kind != yaml.SequenceNode {
			return fmt.Errorf("line %d: field %q: options must be a list (or the field `text` or `number`)", val.Line, name)
		}
		fld := SeedField{Name: name}
		for _, o := range val.Content {
			var opt SeedOption
			switch o.Kind {
			case yaml.ScalarNode:
				opt.Name = o.Value
			case yaml.MappingNode:
				if err := decodeStrict(o, &opt); err != nil {
					return fmt.Errorf("field %q: %w", name, err)
				}
			default:
				return fmt.Errorf("line %d: field %q: an option is a name or {name, color, description}", o.Line, name)
			}
			fld.Options = append(fld.Options, opt)
		}
		out = append(out, fld)
	}
	*f = out
	return nil
}

// decodeStrict re-encodes a node and decodes it with unknown keys refused (yaml.v3 does not carry
// KnownFields into Node.Decode).
func decodeStrict(n *yaml.Node, v any) error {
	b, err := yaml.Marshal(n)
	if err != nil {
		return err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	return dec.Decode(v)
}

// ParseSeed decodes a seed strictly and validates it. A private_key_file is not touched (see
// LoadSeed); relative paths stay relative to the working directory.
func ParseSeed(b []byte) (Seed, error) {
	var s Seed
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil {
		if errors.Is(err, io.EOF) {
			return s, errors.New("seed is empty")
		}
		return s, fmt.Errorf("decode seed: %w", err)
	}
	if err := s.Validate(); err != nil {
		return s, err
	}
	return s, nil
}

// LoadSeed reads a seed file. When the app has a private_key_file and no inline key, the file is
// read if it exists, else a new RSA-2048 key is generated and written there (0600); the key ends
// up in App.PrivateKeyPEM. Relative key paths resolve against the seed file's directory.
func LoadSeed(path string) (Seed, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Seed{}, fmt.Errorf("read seed: %w", err)
	}
	s, err := ParseSeed(b)
	if err != nil {
		return s, fmt.Errorf("%s: %w", path, err)
	}
	if s.App.PrivateKeyPEM == "" && s.App.PrivateKeyFile != "" {
		kp := s.App.PrivateKeyFile
		if !filepath.IsAbs(kp) {
			kp = filepath.Join(filepath.Dir(path), kp)
		}
		s.App.PrivateKeyFile = kp
		pemBytes, err := readOrCreateKey(kp)
		if err != nil {
			return s, err
		}
		s.App.PrivateKeyPEM = string(pemBytes)
	}
	return s, nil
}

func readOrCreateKey(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		if _, err := parsePrivateKey(b); err != nil {
			return nil, fmt.Errorf("private key %s: %w", path, err)
		}
		return b, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read private key: %w", err)
	}
	pemBytes, err := generateKeyPEM()
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(path, pemBytes, 0o600); err != nil {
		return nil, fmt.Errorf("write private key: %w", err)
	}
	return pemBytes, nil
}

func generateKeyPEM() ([]byte, error) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("generate private key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}), nil
}

func parsePrivateKey(b []byte) (*rsa.PrivateKey, error) {
	blk, _ := pem.Decode(b)
	if blk == nil {
		return nil, errors.New("no PEM block")
	}
	if k, err := x509.ParsePKCS1PrivateKey(blk.Bytes); err == nil {
		return k, nil
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parse RSA key: %w", err)
	}
	rk, ok := k.(*rsa.PrivateKey)
	if !ok {
		return nil, errors.New("private key is not RSA")
	}
	return rk, nil
}

// Validate reports every problem in the seed at once.
func (s *Seed) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if s.Org == "" {
		bad("org: required")
	}
	if s.App.ID <= 0 {
		bad("app.id: required")
	}
	if s.App.Slug == "" {
		bad("app.slug: required")
	}
	if s.App.InstallationID <= 0 {
		bad("app.installation_id: required")
	}
	users := map[string]bool{}
	tokens := map[string]bool{}
	for i, u := range s.Users {
		if u.Login == "" {
			bad("users[%d].login: required", i)
		}
		if users[u.Login] {
			bad("users[%d].login: duplicate %q", i, u.Login)
		}
		users[u.Login] = true
		if u.Token != "" && tokens[u.Token] {
			bad("users[%d].token: duplicate", i)
		}
		tokens[u.Token] = true
		switch u.OrgRole {
		case "", OrgRoleMember, OrgRoleAdmin, OrgRoleNone:
		default:
			bad("users[%d].org_role: must be member, admin or none, got %q", i, u.OrgRole)
		}
	}
	if len(s.Users) == 0 {
		bad("users: at least one user is required")
	}
	for i, e := range s.App.Events {
		if e == "check_run" || e == "check_suite" {
			bad("app.events[%d]: ghsim does not send %s webhooks", i, e)
		}
	}
	logins := map[string]bool{}
	installations := map[int64]bool{}
	mainMembers := map[string]bool{}
	for _, u := range s.Users {
		if u.OrgRole != OrgRoleNone {
			mainMembers[u.Login] = true
		}
	}
	for i, o := range s.allOrgs() {
		prefix, selectionKey := "", "app.repositories" // the top-level organization's selection is the App's
		if i > 0 {
			prefix = fmt.Sprintf("orgs[%d].", i-1)
			selectionKey = "repositories"
			if o.Login == "" {
				bad("%slogin: required", prefix)
			}
			if o.InstallationID <= 0 {
				bad("%sinstallation_id: required", prefix)
			}
			for j, m := range o.Members {
				if !users[m] {
					bad("%smembers[%d]: unknown user %q", prefix, j, m)
				}
			}
		}
		if o.Login != "" && logins[strings.ToLower(o.Login)] {
			bad("%slogin: duplicate organization %q", prefix, o.Login)
		}
		logins[strings.ToLower(o.Login)] = true
		if o.InstallationID > 0 && installations[o.InstallationID] {
			bad("%sinstallation_id: duplicate %d", prefix, o.InstallationID)
		}
		installations[o.InstallationID] = true
		for _, err := range validateOrg(o, users, s.App.Slug, selectionKey) {
			errs = append(errs, fmt.Errorf("%s%w", prefix, err))
		}
		members := mainMembers
		if i > 0 && o.Members != nil {
			members = map[string]bool{}
			for _, m := range o.Members {
				members[m] = true
			}
		}
		for _, err := range validateTeams(o.Login, o.Teams, users, members) {
			errs = append(errs, fmt.Errorf("%s%w", prefix, err))
		}
	}
	return errors.Join(errs...)
}

// validateOrg reports the problems of one organization's repositories, projects, issues, pull
// requests and draft items (users are the seeded logins).
func validateOrg(o SeedOrg, users map[string]bool, appSlug, selectionKey string) []error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	repos := map[string]bool{}
	for i, r := range o.Repos {
		if r.Name == "" || repos[r.Name] || strings.ContainsAny(r.Name, "/ ") {
			bad("repos[%d]: empty, duplicate or invalid name %q", i, r.Name)
		}
		repos[r.Name] = true
		for path := range r.Files {
			if cleanPath(path) != path || path == "" {
				bad("repos[%d].files: %q is not a clean relative path", i, path)
			}
		}
		for path := range r.Files {
			for dir := path; strings.Contains(dir, "/"); {
				dir = dir[:strings.LastIndex(dir, "/")]
				if _, isFile := r.Files[dir]; isFile {
					bad("repos[%d].files: %q is a file and a directory", i, dir)
				}
			}
		}
	}
	for i, r := range o.Repositories {
		if !repos[r] {
			bad("%s[%d]: %q is not in repos", selectionKey, i, r)
		}
	}
	projects := map[int]SeedProject{}
	for i, p := range o.Projects {
		if p.Number <= 0 || projects[p.Number].Number != 0 {
			bad("projects[%d].number: must be positive and unique", i)
		}
		projects[p.Number] = p
		names := map[string]bool{}
		for _, f := range p.Fields {
			if names[f.Name] {
				bad("projects[%d].fields: duplicate field %q", i, f.Name)
			}
			names[f.Name] = true
			switch f.Type {
			case "", FieldSingleSelect:
			case FieldText, FieldNumber:
				if len(f.Options) > 0 {
					bad("projects[%d].fields.%s: a %s field has no options", i, f.Name, f.Type)
				}
			default:
				bad("projects[%d].fields.%s: unknown field type %q", i, f.Name, f.Type)
			}
			opts := map[string]bool{}
			for _, o := range f.Options {
				if o.Name == "" || opts[o.Name] {
					bad("projects[%d].fields.%s: empty or duplicate option %q", i, f.Name, o.Name)
				}
				opts[o.Name] = true
				if o.Color != "" && !validColor(o.Color) {
					bad("projects[%d].fields.%s.%s: unknown color %q", i, f.Name, o.Name, o.Color)
				}
			}
		}
	}
	checkFields := func(where string, proj int, fields map[string]string) {
		if len(fields) == 0 {
			return
		}
		p, ok := projects[proj]
		if !ok {
			bad("%s.project: unknown project %d", where, proj)
			return
		}
		for name, val := range fields {
			var fld *SeedField
			for i := range p.Fields {
				if p.Fields[i].Name == name {
					fld = &p.Fields[i]
				}
			}
			if fld == nil {
				bad("%s.fields: project %d has no field %q", where, proj, name)
				continue
			}
			switch fld.Type {
			case FieldText:
				continue
			case FieldNumber:
				if _, err := strconv.ParseFloat(val, 64); err != nil {
					bad("%s.fields.%s: %q is not a number", where, name, val)
				}
				continue
			}
			found := false
			for _, o := range fld.Options {
				found = found || o.Name == val
			}
			if !found {
				bad("%s.fields.%s: %q is not an option", where, name, val)
			}
		}
	}
	type key struct {
		repo string
		n    int
	}
	numbers := map[key]string{}
	for i, is := range o.Issues {
		where := fmt.Sprintf("issues[%d]", i)
		if !repos[is.Repo] {
			bad("%s.repo: unknown repo %q", where, is.Repo)
		}
		if is.Number <= 0 || numbers[key{is.Repo, is.Number}] != "" {
			bad("%s.number: must be positive and unique in its repo", where)
		}
		numbers[key{is.Repo, is.Number}] = "issue"
		switch is.State {
		case "", "open", "closed":
		default:
			bad("%s.state: must be open or closed", where)
		}
		switch is.StateReason {
		case "", "completed", "not_planned", "duplicate", "reopened":
		default:
			bad("%s.state_reason: unknown %q", where, is.StateReason)
		}
		checkFields(where, issueProject(o.Projects, is.Project, is.Fields), is.Fields)
		if is.Author != "" && !users[is.Author] {
			bad("%s.author: unknown user %q", where, is.Author)
		}
		for _, a := range is.Assignees {
			if !users[a] {
				bad("%s.assignees: unknown user %q", where, a)
			}
		}
		for j, c := range is.Comments {
			if c.Author != "" && !users[c.Author] && c.Author != appSlug+"[bot]" {
				bad("%s.comments[%d].author: unknown user %q", where, j, c.Author)
			}
		}
	}
	for i, is := range o.Issues {
		if is.Parent != 0 && numbers[key{is.Repo, is.Parent}] != "issue" {
			bad("issues[%d].parent: no issue %s#%d", i, is.Repo, is.Parent)
		}
		if is.Parent == is.Number && is.Parent != 0 {
			bad("issues[%d].parent: an issue cannot be its own parent", i)
		}
		for _, b := range is.BlockedBy {
			if numbers[key{is.Repo, b}] != "issue" || b == is.Number {
				bad("issues[%d].blocked_by: no issue %s#%d", i, is.Repo, b)
			}
		}
	}
	for i, pr := range o.PullRequests {
		where := fmt.Sprintf("pull_requests[%d]", i)
		if !repos[pr.Repo] {
			bad("%s.repo: unknown repo %q", where, pr.Repo)
		}
		if pr.Number <= 0 || numbers[key{pr.Repo, pr.Number}] != "" {
			bad("%s.number: must be positive and unique in its repo (issues and pull requests share numbers)", where)
		}
		numbers[key{pr.Repo, pr.Number}] = "pr"
		for _, c := range pr.Closes {
			if numbers[key{pr.Repo, c}] != "issue" {
				bad("%s.closes: no issue %s#%d", where, pr.Repo, c)
			}
		}
		checkFields(where, issueProject(o.Projects, pr.Project, pr.Fields), pr.Fields)
	}
	for i, d := range o.DraftItems {
		where := fmt.Sprintf("draft_items[%d]", i)
		if _, ok := projects[d.Project]; !ok {
			bad("%s.project: unknown project %d", where, d.Project)
		}
		checkFields(where, d.Project, d.Fields)
	}
	return errs
}

// issueProject returns the project an issue is on: the explicit one, or the only project when the
// issue has field values.
func issueProject(projects []SeedProject, explicit int, fields map[string]string) int {
	if explicit != 0 {
		return explicit
	}
	if len(fields) > 0 && len(projects) == 1 {
		return projects[0].Number
	}
	return 0
}

// cleanPath is a repository path as git keeps it: slash-separated, no empty, "." or ".."
// element, no leading or trailing slash ("" when nothing is left).
func cleanPath(p string) string {
	var parts []string
	for _, e := range strings.Split(p, "/") {
		if e != "" && e != "." && e != ".." {
			parts = append(parts, e)
		}
	}
	return strings.Join(parts, "/")
}

var optionColors = []string{"GRAY", "BLUE", "GREEN", "YELLOW", "ORANGE", "RED", "PINK", "PURPLE"}

func validColor(c string) bool {
	for _, x := range optionColors {
		if x == c {
			return true
		}
	}
	return false
}
