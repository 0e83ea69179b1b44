package ghsim

import (
	"fmt"
	"html"
	"strconv"
)

func projectResolvers(rs resolverSet) {
	fieldsOf(rs, "ProjectV2", map[string]func(*execCtx, *project, args) (any, error){
		"id":             func(_ *execCtx, p *project, _ args) (any, error) { return p.nodeID, nil },
		"databaseId":     func(_ *execCtx, p *project, _ args) (any, error) { return p.id, nil },
		"fullDatabaseId": func(_ *execCtx, p *project, _ args) (any, error) { return strconv.FormatInt(p.id, 10), nil },
		"number":         func(_ *execCtx, p *project, _ args) (any, error) { return p.number, nil },
		"title":          func(_ *execCtx, p *project, _ args) (any, error) { return p.title, nil },
		"closed":         func(_ *execCtx, _ *project, _ args) (any, error) { return false, nil },
		"public":         func(_ *execCtx, _ *project, _ args) (any, error) { return false, nil },
		"createdAt":      func(_ *execCtx, p *project, _ args) (any, error) { return ts(p.createdAt), nil },
		"updatedAt":      func(_ *execCtx, p *project, _ args) (any, error) { return ts(p.updatedAt), nil },
		"owner":          func(ec *execCtx, _ *project, _ args) (any, error) { return ec.w.org, nil },
		"url": func(ec *execCtx, p *project, _ args) (any, error) {
			return ec.w.htmlURL("/orgs/%s/projects/%d", ec.w.org.login, p.number), nil
		},
		"field": func(_ *execCtx, p *project, a args) (any, error) {
			if f := p.fieldByName(strArg(a, "name")); f != nil {
				return f, nil
			}
			return nil, nil
		},
		"fields": func(_ *execCtx, p *project, a args) (any, error) { return paginate("fields", anys(p.fields), a) },
		"items": func(_ *execCtx, p *project, a args) (any, error) {
			if strArg(a, "query") != "" {
				return nil, &typedError{typ: "GHSIM_NOT_IMPLEMENTED", msg: "ghsim does not implement argument ProjectV2.items(query)"}
			}
			states, _ := a["archivedStates"].([]any)
			out := make([]any, 0, len(p.items))
			for _, it := range p.items {
				st := "NOT_ARCHIVED"
				if it.archived {
					st = "ARCHIVED"
				}
				if len(states) == 0 || containsAny(states, st) {
					out = append(out, it)
				}
			}
			return paginate("items", out, a)
		},
	})

	fieldsOf(rs, "ProjectV2SingleSelectField", map[string]func(*execCtx, *field, args) (any, error){
		"id":         func(_ *execCtx, f *field, _ args) (any, error) { return f.nodeID, nil },
		"databaseId": func(_ *execCtx, f *field, _ args) (any, error) { return f.id, nil },
		"name":       func(_ *execCtx, f *field, _ args) (any, error) { return f.name, nil },
		"dataType":   func(_ *execCtx, _ *field, _ args) (any, error) { return "SINGLE_SELECT", nil },
		"project":    func(_ *execCtx, f *field, _ args) (any, error) { return f.project, nil },
		"createdAt":  func(_ *execCtx, f *field, _ args) (any, error) { return ts(f.createdAt), nil },
		"updatedAt":  func(_ *execCtx, f *field, _ args) (any, error) { return ts(f.createdAt), nil },
		"options": func(_ *execCtx, f *field, a args) (any, error) {
			names, filtered := a["names"].([]any)
			out := []*option{}
			for _, o := range f.options {
				if !filtered || containsAny(names, o.name) {
					out = append(out, o)
				}
			}
			return out, nil
		},
	})

	fieldsOf(rs, "ProjectV2SingleSelectFieldOption", map[string]func(*execCtx, *option, args) (any, error){
		"id":              func(_ *execCtx, o *option, _ args) (any, error) { return o.id, nil },
		"name":            func(_ *execCtx, o *option, _ args) (any, error) { return o.name, nil },
		"nameHTML":        func(_ *execCtx, o *option, _ args) (any, error) { return html.EscapeString(o.name), nil },
		"color":           func(_ *execCtx, o *option, _ args) (any, error) { return o.color, nil },
		"description":     func(_ *execCtx, o *option, _ args) (any, error) { return o.description, nil },
		"descriptionHTML": func(_ *execCtx, o *option, _ args) (any, error) { return html.EscapeString(o.description), nil },
	})

	fieldsOf(rs, "ProjectV2Item", map[string]func(*execCtx, *item, args) (any, error){
		"id":             func(_ *execCtx, it *item, _ args) (any, error) { return it.nodeID, nil },
		"databaseId":     func(_ *execCtx, it *item, _ args) (any, error) { return it.id, nil },
		"fullDatabaseId": func(_ *execCtx, it *item, _ args) (any, error) { return strconv.FormatInt(it.id, 10), nil },
		"isArchived":     func(_ *execCtx, it *item, _ args) (any, error) { return it.archived, nil },
		"project":        func(_ *execCtx, it *item, _ args) (any, error) { return it.project, nil },
		"content":        func(_ *execCtx, it *item, _ args) (any, error) { return it.content, nil },
		"createdAt":      func(_ *execCtx, it *item, _ args) (any, error) { return ts(it.createdAt), nil },
		"updatedAt":      func(_ *execCtx, it *item, _ args) (any, error) { return ts(it.updatedAt), nil },
		"creator":        func(_ *execCtx, it *item, _ args) (any, error) { return it.creator, nil },
		"type": func(_ *execCtx, it *item, _ args) (any, error) {
			switch it.content.(type) {
			case *issue:
				return "ISSUE", nil
			case *pullRequest:
				return "PULL_REQUEST", nil
			}
			return "DRAFT_ISSUE", nil
		},
		"fieldValueByName": func(_ *execCtx, it *item, a args) (any, error) {
			f := it.project.fieldByName(strArg(a, "name"))
			if f == nil || it.values[f] == nil {
				return nil, nil
			}
			return it.values[f], nil
		},
		"fieldValues": func(_ *execCtx, it *item, a args) (any, error) {
			var vals []any
			for _, f := range it.project.fields {
				if v := it.values[f]; v != nil {
					vals = append(vals, v)
				}
			}
			return paginate("fieldValues", vals, a)
		},
	})

	fieldsOf(rs, "ProjectV2ItemFieldSingleSelectValue", map[string]func(*execCtx, *fieldValue, args) (any, error){
		"id":              func(_ *execCtx, v *fieldValue, _ args) (any, error) { return v.nodeID, nil },
		"name":            func(_ *execCtx, v *fieldValue, _ args) (any, error) { return v.opt.name, nil },
		"nameHTML":        func(_ *execCtx, v *fieldValue, _ args) (any, error) { return html.EscapeString(v.opt.name), nil },
		"optionId":        func(_ *execCtx, v *fieldValue, _ args) (any, error) { return v.opt.id, nil },
		"color":           func(_ *execCtx, v *fieldValue, _ args) (any, error) { return v.opt.color, nil },
		"description":     func(_ *execCtx, v *fieldValue, _ args) (any, error) { return v.opt.description, nil },
		"descriptionHTML": func(_ *execCtx, v *fieldValue, _ args) (any, error) { return html.EscapeString(v.opt.description), nil },
		"field":           func(_ *execCtx, v *fieldValue, _ args) (any, error) { return v.field, nil },
		"item":            func(_ *execCtx, v *fieldValue, _ args) (any, error) { return v.item, nil },
		"creator":         func(_ *execCtx, v *fieldValue, _ args) (any, error) { return v.creator, nil },
		"createdAt":       func(_ *execCtx, v *fieldValue, _ args) (any, error) { return ts(v.createdAt), nil },
		"updatedAt":       func(_ *execCtx, v *fieldValue, _ args) (any, error) { return ts(v.updatedAt), nil },
	})

	fieldsOf(rs, "DraftIssue", map[string]func(*execCtx, *draft, args) (any, error){
		"id":        func(_ *execCtx, d *draft, _ args) (any, error) { return d.nodeID, nil },
		"title":     func(_ *execCtx, d *draft, _ args) (any, error) { return d.title, nil },
		"body":      func(_ *execCtx, d *draft, _ args) (any, error) { return d.body, nil },
		"creator":   func(_ *execCtx, d *draft, _ args) (any, error) { return d.creator, nil },
		"createdAt": func(_ *execCtx, d *draft, _ args) (any, error) { return ts(d.createdAt), nil },
		"updatedAt": func(_ *execCtx, d *draft, _ args) (any, error) { return ts(d.updatedAt), nil },
		"projectV2Items": func(_ *execCtx, d *draft, a args) (any, error) {
			return paginate("projectV2Items", anys(d.items), a)
		},
	})
}

// projectItemsOf lists an issue's or pull request's items; archived ones only when asked.
func projectItemsOf(items []*item, a args) (*connection, error) {
	include, ok := a["includeArchived"].(bool)
	if !ok {
		include = true
	}
	var out []any
	for _, it := range items {
		if include || !it.archived {
			out = append(out, it)
		}
	}
	return paginate("projectItems", out, a)
}

func gqlState(s string) string {
	switch s {
	case "open":
		return "OPEN"
	case "closed":
		return "CLOSED"
	}
	panic(fmt.Sprintf("ghsim: unknown state %q", s))
}
