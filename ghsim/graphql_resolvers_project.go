package ghsim

import (
	"fmt"
	"html"
	"strconv"
	"strings"
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
		"owner":          func(_ *execCtx, p *project, _ args) (any, error) { return p.owner, nil },
		"url": func(ec *execCtx, p *project, _ args) (any, error) {
			return ec.w.htmlURL("/orgs/%s/projects/%d", p.owner.login, p.number), nil
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
			states, err := archivedStatesArg(a)
			if err != nil {
				return nil, err
			}
			out := make([]any, 0, len(p.items))
			for _, it := range p.items {
				if states[it.archivedState()] {
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

	// Text and number fields (field.dataType FieldText, FieldNumber).
	fieldsOf(rs, "ProjectV2Field", map[string]func(*execCtx, *field, args) (any, error){
		"id":         func(_ *execCtx, f *field, _ args) (any, error) { return f.nodeID, nil },
		"databaseId": func(_ *execCtx, f *field, _ args) (any, error) { return f.id, nil },
		"name":       func(_ *execCtx, f *field, _ args) (any, error) { return f.name, nil },
		"dataType":   func(_ *execCtx, f *field, _ args) (any, error) { return strings.ToUpper(f.dataType), nil },
		"project":    func(_ *execCtx, f *field, _ args) (any, error) { return f.project, nil },
		"createdAt":  func(_ *execCtx, f *field, _ args) (any, error) { return ts(f.createdAt), nil },
		"updatedAt":  func(_ *execCtx, f *field, _ args) (any, error) { return ts(f.createdAt), nil },
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

	// The values of text and number fields: the fields every value has, and text or number.
	valueFields := func(name string, value func(*fieldValue) any) map[string]func(*execCtx, *fieldValue, args) (any, error) {
		return map[string]func(*execCtx, *fieldValue, args) (any, error){
			name:        func(_ *execCtx, v *fieldValue, _ args) (any, error) { return value(v), nil },
			"id":        func(_ *execCtx, v *fieldValue, _ args) (any, error) { return v.nodeID, nil },
			"field":     func(_ *execCtx, v *fieldValue, _ args) (any, error) { return v.field, nil },
			"item":      func(_ *execCtx, v *fieldValue, _ args) (any, error) { return v.item, nil },
			"creator":   func(_ *execCtx, v *fieldValue, _ args) (any, error) { return v.creator, nil },
			"createdAt": func(_ *execCtx, v *fieldValue, _ args) (any, error) { return ts(v.createdAt), nil },
			"updatedAt": func(_ *execCtx, v *fieldValue, _ args) (any, error) { return ts(v.updatedAt), nil },
		}
	}
	fieldsOf(rs, "ProjectV2ItemFieldTextValue", valueFields("text", func(v *fieldValue) any { return v.text }))
	fieldsOf(rs, "ProjectV2ItemFieldNumberValue", valueFields("number", func(v *fieldValue) any { return v.number }))

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

// archivedStatesArg reads ProjectV2.items(archivedStates:), the archived states to list. The
// schema's default is [NOT_ARCHIVED] ("Defaults to only returning items that are not
// archived"), which gqlparser fills in when the argument is omitted (or its variable is not
// given); it is applied here too, so the default never depends on that. A single value is a list
// of one (GraphQL's input coercion of lists). An explicit null or an empty list is refused:
// GitHub does not document what it answers to either, and ghsim does not guess.
func archivedStatesArg(a args) (map[string]bool, error) {
	v, given := a["archivedStates"]
	if !given {
		return map[string]bool{archivedNot: true}, nil
	}
	var list []string
	switch x := v.(type) {
	case []any: // a literal list, or a variable's JSON list
		for _, s := range x {
			if st, ok := s.(string); ok {
				list = append(list, st)
			}
		}
	case []string: // a variable's single value, made a list of one by gqlparser
		list = x
	case string: // a literal single value
		list = []string{x}
	}
	if len(list) == 0 {
		return nil, &typedError{typ: "GHSIM_NOT_IMPLEMENTED",
			msg: "ghsim does not implement ProjectV2.items(archivedStates:) with null or an empty list (GitHub does not document the answer): omit it, or name ARCHIVED and/or NOT_ARCHIVED"}
	}
	states := map[string]bool{}
	for _, st := range list {
		states[st] = true
	}
	return states, nil
}

// projectItemsOf lists an issue's or pull request's items: archived ones too unless
// includeArchived is false (the schema's default is true). An explicit null is refused: GitHub
// does not document what it answers.
func projectItemsOf(items []*item, a args) (*connection, error) {
	include := true
	if v, given := a["includeArchived"]; given {
		b, ok := v.(bool)
		if !ok {
			return nil, &typedError{typ: "GHSIM_NOT_IMPLEMENTED",
				msg: "ghsim does not implement projectItems(includeArchived: null) (GitHub does not document the answer): omit it, or pass true or false"}
		}
		include = b
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
