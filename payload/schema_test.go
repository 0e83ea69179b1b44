package payload

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// GitHub's published description of the projects_v2_item "edited" payload: the
// webhook-projects-v2-item-edited schema of @octokit/openapi-webhooks 12.1.0 and the
// components it references (ghsim's testdata; see ghsim/testdata/PROVENANCE.md).
var (
	editedSchemaFile = filepath.Join("..", "ghsim", "testdata", "payloads", "openapi-webhooks-12.1.0_projects-v2-item-edited_schema.json")
	componentsFile   = filepath.Join("..", "ghsim", "testdata", "webhook-components.json")
	// octokitExample is GitHub's published example of the event (payload/testdata/PROVENANCE.md):
	// the envelope the generated changes are put in.
	octokitExample = filepath.Join("testdata", "projects_v2_item_edited_octokit.json")
)

const editedSchema = "webhook-projects-v2-item-edited"

// schemas holds named JSON schemas; "$ref": "#/components/schemas/<name>" resolves among them.
type schemas map[string]any

func loadSchemas(tb testing.TB) schemas {
	tb.Helper()
	set := schemas{}
	for _, f := range []string{editedSchemaFile, componentsFile} {
		b, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			tb.Fatal(err)
		}
		for k, v := range m {
			set[k] = v
		}
	}
	return set
}

// resolve follows $ref.
func (s schemas) resolve(sch any) map[string]any {
	m, _ := sch.(map[string]any)
	for m != nil {
		ref, ok := m["$ref"].(string)
		if !ok {
			return m
		}
		m, _ = s[strings.TrimPrefix(ref, "#/components/schemas/")].(map[string]any)
	}
	return m
}

// at walks properties (and, for a step named "oneOf[i]", that branch) from a named schema.
func (s schemas) at(tb testing.TB, name string, path ...string) map[string]any {
	tb.Helper()
	cur := s.resolve(s[name])
	for _, p := range path {
		var next any
		if i, ok := strings.CutPrefix(p, "oneOf:"); ok {
			var n int
			fmt.Sscan(i, &n)
			next = cur["oneOf"].([]any)[n]
		} else {
			next = cur["properties"].(map[string]any)[p]
		}
		cur = s.resolve(next)
		if cur == nil {
			tb.Fatalf("schema %s has no %s", name, strings.Join(path, "."))
		}
	}
	return cur
}

func types(sch map[string]any) []string {
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

func jsonType(v any) string {
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

// valid reports whether v satisfies the schema, for the subset GitHub's webhook schemas use
// (type lists, properties, required, enum, oneOf, $ref). As GitHub's description declares
// from/to `type: [null, …]` beside a oneOf with no null branch, null is valid wherever the
// type list has "null".
func (s schemas) valid(sch any, v any) bool {
	m := s.resolve(sch)
	if m == nil {
		return false
	}
	ts := types(m)
	if v == nil && slices.Contains(ts, "null") {
		return true
	}
	if len(ts) > 0 {
		got := jsonType(v)
		if !slices.Contains(ts, got) && !(got == "integer" && slices.Contains(ts, "number")) {
			return false
		}
	}
	if enum, ok := m["enum"].([]any); ok && !slices.Contains(enum, v) {
		return false
	}
	if obj, ok := v.(map[string]any); ok {
		for _, r := range asList(m["required"]) {
			if _, ok := obj[r.(string)]; !ok {
				return false
			}
		}
		props, _ := m["properties"].(map[string]any)
		for k, ps := range props {
			if pv, ok := obj[k]; ok && !s.valid(ps, pv) {
				return false
			}
		}
	}
	if one, ok := m["oneOf"].([]any); ok {
		n := 0
		for _, b := range one {
			if s.valid(b, v) {
				n++
			}
		}
		if n != 1 {
			return false
		}
	}
	return true
}

func asList(v any) []any { l, _ := v.([]any); return l }

// variant is one documented shape of a from/to value.
type variant struct {
	label string // the branch: "string", "integer", a component's name, "null", "object"
	value any
	// kind is what the value says of the field: "option", "other" (a value no single-select
	// field holds) or "" (nothing).
	kind string
}

// absent is a from/to the payload leaves out (GitHub marks both optional).
var absent = variant{label: "absent"}

// valueVariants returns one instance of each oneOf branch of a from/to schema, then one of each
// type of its type list that no branch is of: null, and an object that is no branch ({}).
func (s schemas) valueVariants(tb testing.TB, sch map[string]any) []variant {
	tb.Helper()
	var out []variant
	covered := map[string]bool{}
	for _, b := range asList(sch["oneOf"]) {
		label := "?"
		if ref, ok := b.(map[string]any)["$ref"].(string); ok {
			label = ref[strings.LastIndex(ref, "/")+1:]
		}
		m := s.resolve(b)
		for _, t := range types(m) {
			covered[t] = covered[t] || label == "?"
			if label == "?" {
				label = t
			}
		}
		v := variant{label: label, value: s.instance(m, label), kind: "other"}
		if props, _ := m["properties"].(map[string]any); props["name"] != nil {
			v.kind = "option" // the single-select option: {id, name, …}
		}
		out = append(out, v)
	}
	for _, t := range types(sch) {
		switch {
		case covered[t]:
		case t == "null":
			out = append(out, variant{label: "null", value: nil})
		case t == "object":
			out = append(out, variant{label: "object", value: map[string]any{}})
		default:
			out = append(out, variant{label: t, value: s.instance(map[string]any{"type": t}, t), kind: "other"})
		}
	}
	if len(out) < 4 {
		tb.Fatalf("from/to schema yields only %d variants", len(out))
	}
	return out
}

// instance builds a value satisfying sch (every property set), with strings derived from name.
func (s schemas) instance(sch map[string]any, name string) any {
	sch = s.resolve(sch)
	if enum := asList(sch["enum"]); len(enum) > 0 {
		return enum[0]
	}
	ts := slices.DeleteFunc(types(sch), func(t string) bool { return t == "null" })
	if len(ts) == 0 {
		return nil
	}
	switch ts[0] {
	case "string":
		return name + " value"
	case "integer", "number":
		return float64(7)
	case "boolean":
		return false
	case "array":
		return []any{}
	case "object":
		out := map[string]any{}
		props, _ := sch["properties"].(map[string]any)
		for k, p := range props {
			out[k] = s.instance(s.resolve(p), k)
		}
		return out
	}
	return nil
}

// fromToVariants are the documented shapes of changes.field_value.from and .to, read from the
// schema (the two must agree), plus "absent".
func fromToVariants(tb testing.TB, s schemas) []variant {
	tb.Helper()
	fv := []string{"changes", "oneOf:0", "field_value"}
	from := s.valueVariants(tb, s.at(tb, editedSchema, append(fv, "from")...))
	to := s.valueVariants(tb, s.at(tb, editedSchema, append(fv, "to")...))
	if len(from) != len(to) {
		tb.Fatalf("from has %d variants, to %d", len(from), len(to))
	}
	return append(from, absent)
}

// edited builds a projects_v2_item "edited" payload: GitHub's example envelope with
// changes.field_value made of meta and the from/to variants.
func edited(tb testing.TB, meta map[string]any, from, to variant) []byte {
	tb.Helper()
	b, err := os.ReadFile(octokitExample)
	if err != nil {
		tb.Fatal(err)
	}
	var p map[string]any
	if err := json.Unmarshal(b, &p); err != nil {
		tb.Fatal(err)
	}
	fv := map[string]any{}
	for k, v := range meta {
		fv[k] = v
	}
	if from.label != absent.label {
		fv["from"] = from.value
	}
	if to.label != absent.label {
		fv["to"] = to.value
	}
	p["changes"] = map[string]any{"field_value": fv}
	out, err := json.Marshal(p)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// fieldType is the field_type GitHub sends for a field holding these values ("" when they
// do not tell, as null and {} do not).
func fieldType(from, to variant) string {
	for _, v := range []variant{from, to} {
		switch {
		case v.kind == "option":
			return "single_select"
		case v.label == "string":
			return "text"
		case v.label == "integer" || v.label == "number":
			return "number"
		case v.kind == "other":
			return "iteration"
		}
	}
	return ""
}
