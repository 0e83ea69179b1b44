package ghsim

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
)

// A small JSON-schema checker for the subset the webhook schemas use: type (one or a list),
// properties, required, enum, items, oneOf/anyOf/allOf, nullable, and $ref to
// "#/components/schemas/<name>" resolved among the loaded definitions.
//
// A null value is accepted wherever the schema's type list includes "null" (or nullable is set),
// even under oneOf: GitHub's published schema declares from/to as `type: [null, ...]` beside a
// oneOf without a null branch, and GitHub sends null there for an unset value.
type schemaSet map[string]any

func loadSchemas(t testing.TB, files ...string) schemaSet {
	t.Helper()
	set := schemaSet{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		for k, v := range m {
			set[k] = v
		}
	}
	return set
}

func (s schemaSet) validate(name string, v any) []string {
	return s.check(s[name], v, "$")
}

func typeOf(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		if x == math.Trunc(x) {
			return "integer"
		}
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

func typeList(sch map[string]any) []string {
	switch t := sch["type"].(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, x := range t {
			out = append(out, x.(string))
		}
		return out
	}
	return nil
}

func (s schemaSet) check(schema any, v any, at string) []string {
	sch, ok := schema.(map[string]any)
	if !ok {
		return []string{at + ": schema missing"}
	}
	if ref, ok := sch["$ref"].(string); ok {
		name := strings.TrimPrefix(ref, "#/components/schemas/")
		target, ok := s[name]
		if !ok {
			return []string{at + ": unresolved $ref " + ref}
		}
		return s.check(target, v, at)
	}
	types := typeList(sch)
	if v == nil {
		for _, t := range types {
			if t == "null" {
				return nil
			}
		}
		if n, _ := sch["nullable"].(bool); n {
			return nil
		}
	}
	var errs []string
	if len(types) > 0 {
		got := typeOf(v)
		match := false
		for _, t := range types {
			match = match || t == got || (t == "number" && got == "integer")
		}
		if !match {
			return []string{fmt.Sprintf("%s: type %s, want %v", at, got, types)}
		}
	}
	if enum, ok := sch["enum"].([]any); ok {
		found := false
		for _, e := range enum {
			found = found || e == v
		}
		if !found {
			errs = append(errs, fmt.Sprintf("%s: %v not in enum %v", at, v, enum))
		}
	}
	if obj, ok := v.(map[string]any); ok {
		if req, ok := sch["required"].([]any); ok {
			for _, r := range req {
				if _, ok := obj[r.(string)]; !ok {
					errs = append(errs, fmt.Sprintf("%s: missing required %q", at, r))
				}
			}
		}
		if props, ok := sch["properties"].(map[string]any); ok {
			for k, ps := range props {
				if pv, ok := obj[k]; ok {
					errs = append(errs, s.check(ps, pv, at+"."+k)...)
				}
			}
		}
	}
	if arr, ok := v.([]any); ok && sch["items"] != nil {
		for i, x := range arr {
			errs = append(errs, s.check(sch["items"], x, fmt.Sprintf("%s[%d]", at, i))...)
		}
	}
	if all, ok := sch["allOf"].([]any); ok {
		for _, sub := range all {
			errs = append(errs, s.check(sub, v, at)...)
		}
	}
	if any_, ok := sch["anyOf"].([]any); ok {
		matched := false
		for _, sub := range any_ {
			matched = matched || len(s.check(sub, v, at)) == 0
		}
		if !matched {
			errs = append(errs, at+": matches no anyOf branch")
		}
	}
	if one, ok := sch["oneOf"].([]any); ok {
		n := 0
		var why []string
		for _, sub := range one {
			e := s.check(sub, v, at)
			if len(e) == 0 {
				n++
			}
			why = append(why, e...)
		}
		if n != 1 {
			errs = append(errs, fmt.Sprintf("%s: matches %d oneOf branches, want 1 (%s)", at, n, strings.Join(why, "; ")))
		}
	}
	return errs
}

func TestSchemaCheckerOnPublishedExamples(t *testing.T) {
	set := loadSchemas(t, "testdata/payloads/openapi-webhooks-12.1.0_projects-v2-item-edited_schema.json", "testdata/webhook-components.json")
	b, err := os.ReadFile("testdata/payloads/SYNTHESIZED_projects_v2_item_edited_single_select_from_to.json")
	if err != nil {
		t.Fatal(err)
	}
	var p map[string]any
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	delete(p, "_comment")
	// The synthesized example has abbreviated users and organization, so check the parts that are complete.
	if errs := set.check(set["projects-v2-single-select-option"], dig(p, "changes", "field_value", "to"), "$.to"); len(errs) > 0 {
		t.Fatal(errs)
	}
	// And the checker must reject what is wrong.
	bad := map[string]any{"action": "deleted", "projects_v2_item": map[string]any{}, "sender": map[string]any{}}
	if errs := set.validate("webhook-projects-v2-item-edited", bad); len(errs) < 3 {
		t.Fatalf("checker accepted a bad payload: %v", errs)
	}
}
