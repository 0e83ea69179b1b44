package ghsim

import (
	"fmt"
	"time"
)

type args = map[string]any

type root = struct{}

// newResolvers registers every implemented field. Anything else in the schema fails loudly.
func newResolvers() resolverSet {
	rs := resolverSet{}
	queryResolvers(rs)
	ownerResolvers(rs)
	projectResolvers(rs)
	issueResolvers(rs)
	issueEventResolvers(rs)
	mutationResolvers(rs)
	return rs
}

func queryResolvers(rs resolverSet) {
	fieldsOf(rs, "Query", map[string]func(*execCtx, root, args) (any, error){
		"viewer": func(ec *execCtx, _ root, _ args) (any, error) { return ec.who.actor, nil },
		"rateLimit": func(ec *execCtx, _ root, _ args) (any, error) {
			r := ec.rate
			return valueObject{"limit": r.Limit, "cost": 1, "remaining": r.Remaining, "used": r.Used,
				"resetAt": r.Reset.UTC().Format(time.RFC3339), "nodeCount": ec.nodeCount}, nil
		},
		"node": func(ec *execCtx, _ root, a args) (any, error) { return ec.node(strArg(a, "id")) },
		"nodes": func(ec *execCtx, _ root, a args) (any, error) {
			ids, _ := a["ids"].([]any)
			if len(ids) > 100 {
				// GitHub's limit on nodes(ids:).
				return nil, fmt.Errorf("You may not provide more than 100 node ids; you provided %d.", len(ids))
			}
			out := make([]any, len(ids))
			for i, id := range ids {
				s, _ := id.(string)
				n, err := ec.node(s)
				if err != nil {
					ec.errs = append(ec.errs, gqlError{Type: "NOT_FOUND", Path: []any{"nodes", i}, Message: err.Error()})
					continue
				}
				out[i] = n
			}
			return out, nil
		},
		"organization": func(ec *execCtx, _ root, a args) (any, error) {
			o := ec.w.orgNamed(strArg(a, "login"))
			if o == nil {
				return nil, errNotFound("Could not resolve to an Organization with the login of '%s'.", strArg(a, "login"))
			}
			return o, nil
		},
		"repository": func(ec *execCtx, _ root, a args) (any, error) {
			r := ec.w.repo(strArg(a, "owner"), strArg(a, "name"))
			if r == nil || ec.hidden(r) {
				return nil, errNotFound("Could not resolve to a Repository with the name '%s/%s'.", strArg(a, "owner"), strArg(a, "name"))
			}
			return r, nil
		},
		"user": func(ec *execCtx, _ root, a args) (any, error) {
			u := ec.w.byLogin[strArg(a, "login")]
			if u == nil || u.typ != "User" {
				return nil, errNotFound("Could not resolve to a User with the login of '%s'.", strArg(a, "login"))
			}
			return u, nil
		},
	})
}

// node resolves a global id to one of the modelled node types.
func (ec *execCtx) node(id string) (any, error) {
	switch n := ec.w.nodes[id].(type) {
	case *issue, *pullRequest, *item, *project, *comment, *draft, *repo, *organization, *field:
		return n, nil
	case *actor:
		return n, nil
	}
	return nil, errNotFound("Could not resolve to a node with the global id of '%s'", id)
}

func ownerResolvers(rs resolverSet) {
	fieldsOf(rs, "Organization", map[string]func(*execCtx, *organization, args) (any, error){
		"id":         func(_ *execCtx, o *organization, _ args) (any, error) { return o.nodeID, nil },
		"databaseId": func(_ *execCtx, o *organization, _ args) (any, error) { return o.id, nil },
		"login":      func(_ *execCtx, o *organization, _ args) (any, error) { return o.login, nil },
		"name":       func(_ *execCtx, o *organization, _ args) (any, error) { return o.login, nil },
		"url":        func(ec *execCtx, o *organization, _ args) (any, error) { return ec.w.htmlURL("/%s", o.login), nil },
		"projectV2": func(ec *execCtx, o *organization, a args) (any, error) {
			n, _ := intArg(a, "number")
			if p := o.projectByNumber(n); p != nil {
				return p, nil
			}
			return nil, errNotFound("Could not resolve to a ProjectV2 with the number %d.", n)
		},
		"projectsV2": func(ec *execCtx, o *organization, a args) (any, error) {
			if q := strArg(a, "query"); q != "" {
				return nil, &typedError{typ: "GHSIM_NOT_IMPLEMENTED", msg: "ghsim does not implement argument Organization.projectsV2(query)"}
			}
			ps := make([]any, 0, len(o.projects))
			for i := len(o.projects) - 1; i >= 0; i-- { // orderBy NUMBER DESC, GitHub's default
				ps = append(ps, o.projects[i])
			}
			return paginate("projectsV2", ps, a)
		},
	})
	actorFields := map[string]func(*execCtx, *actor, args) (any, error){
		"id":         func(_ *execCtx, u *actor, _ args) (any, error) { return u.nodeID, nil },
		"databaseId": func(_ *execCtx, u *actor, _ args) (any, error) { return u.id, nil },
		"login":      func(_ *execCtx, u *actor, _ args) (any, error) { return u.login, nil },
		"url":        func(ec *execCtx, u *actor, _ args) (any, error) { return ec.w.htmlURL("/%s", u.login), nil },
		"avatarUrl":  func(ec *execCtx, u *actor, _ args) (any, error) { return ec.w.htmlURL("/avatars/u/%d", u.id), nil },
	}
	fieldsOf(rs, "Bot", actorFields)
	actorFields["name"] = func(_ *execCtx, u *actor, _ args) (any, error) { return u.login, nil }
	fieldsOf(rs, "User", actorFields)

	fieldsOf(rs, "Repository", map[string]func(*execCtx, *repo, args) (any, error){
		"id":            func(_ *execCtx, r *repo, _ args) (any, error) { return r.nodeID, nil },
		"databaseId":    func(_ *execCtx, r *repo, _ args) (any, error) { return r.id, nil },
		"name":          func(_ *execCtx, r *repo, _ args) (any, error) { return r.name, nil },
		"nameWithOwner": func(_ *execCtx, r *repo, _ args) (any, error) { return r.fullName(), nil },
		"owner":         func(_ *execCtx, r *repo, _ args) (any, error) { return r.owner, nil },
		"url": func(ec *execCtx, r *repo, _ args) (any, error) {
			return ec.w.htmlURL("/%s", r.fullName()), nil
		},
		"issue": func(ec *execCtx, r *repo, a args) (any, error) {
			n, _ := intArg(a, "number")
			if is := ec.w.issue(r.owner.login, r.name, n); is != nil {
				return is, nil
			}
			return nil, errNotFound("Could not resolve to an Issue with the number of %d.", n)
		},
		"pullRequest": func(ec *execCtx, r *repo, a args) (any, error) {
			n, _ := intArg(a, "number")
			if pr := ec.w.pr(r.owner.login, r.name, n); pr != nil {
				return pr, nil
			}
			return nil, errNotFound("Could not resolve to a PullRequest with the number of %d.", n)
		},
		"issues": func(ec *execCtx, r *repo, a args) (any, error) {
			for _, unsupported := range []string{"filterBy", "labels", "orderBy"} {
				if a[unsupported] != nil {
					return nil, &typedError{typ: "GHSIM_NOT_IMPLEMENTED", msg: fmt.Sprintf("ghsim does not implement argument Repository.issues(%s)", unsupported)}
				}
			}
			states, _ := a["states"].([]any)
			var out []any
			for _, is := range ec.w.issues {
				if is.repo == r && (len(states) == 0 || containsAny(states, gqlState(is.state))) {
					out = append(out, is)
				}
			}
			return paginate("issues", out, a)
		},
	})
}

func containsAny(list []any, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
