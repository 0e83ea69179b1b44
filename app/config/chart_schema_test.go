package config

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	ralphgate "github.com/ralph-gate/ralph-gate"
)

// chartSchemaFile is the Helm chart's values schema; its config section describes config.yml.
const chartSchemaFile = "../../charts/ralph-gate/values.schema.json"

type jsonSchema = map[string]any

// loadChartConfigSchema returns the whole values schema and its config section.
func loadChartConfigSchema(t *testing.T) (root, cfg jsonSchema) {
	t.Helper()
	data, err := os.ReadFile(chartSchemaFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &root); err != nil {
		t.Fatalf("%s: %v", chartSchemaFile, err)
	}
	props, _ := root["properties"].(jsonSchema)
	cfg, ok := props["config"].(jsonSchema)
	if !ok {
		t.Fatalf("%s: no properties.config", chartSchemaFile)
	}
	return root, cfg
}

// resolve follows a local "$ref" (#/definitions/NAME).
func resolve(root, node jsonSchema) jsonSchema {
	ref, ok := node["$ref"].(string)
	if !ok {
		return node
	}
	name, ok := strings.CutPrefix(ref, "#/definitions/")
	if !ok {
		return jsonSchema{"$unresolved": ref}
	}
	defs, _ := root["definitions"].(jsonSchema)
	def, _ := defs[name].(jsonSchema)
	return resolve(root, def)
}

var durationType = reflect.TypeOf(time.Duration(0))

// schemaDrift compares a schema node with the Go type config decodes at that path, and returns
// every difference (keys missing on either side, loose objects, wrong types) and the enums met.
func schemaDrift(root, node jsonSchema, t reflect.Type, path string, enums map[string][]any) []string {
	node = resolve(root, node)
	if node == nil {
		return []string{path + ": no schema"}
	}
	if ref, ok := node["$unresolved"]; ok {
		return []string{fmt.Sprintf("%s: cannot resolve $ref %v", path, ref)}
	}
	if e, ok := node["enum"].([]any); ok {
		enums[path] = e
	}
	typ, _ := node["type"].(string)
	want := ""
	switch {
	case t == durationType:
		want = "string"
		if node["pattern"] == nil {
			return []string{path + ": a duration needs the duration pattern"}
		}
	case t.Kind() == reflect.Struct:
		want = "object"
	case t.Kind() == reflect.Slice:
		want = "array"
	case t.Kind() == reflect.Map:
		want = "object"
	case t.Kind() == reflect.String:
		want = "string"
	case t.Kind() == reflect.Bool:
		want = "boolean"
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Int64:
		want = "integer"
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		want = "number"
	default:
		return []string{fmt.Sprintf("%s: the test does not know Go kind %s", path, t.Kind())}
	}
	if typ != want {
		return []string{fmt.Sprintf("%s: schema type %q, config decodes a %s (%s)", path, typ, want, t)}
	}
	var drift []string
	switch {
	case t == durationType:
	case t.Kind() == reflect.Struct:
		if node["additionalProperties"] != false {
			drift = append(drift, path+": additionalProperties must be false (a misspelt key must fail)")
		}
		props, _ := node["properties"].(jsonSchema)
		fields := yamlFields(t)
		for key, ft := range fields {
			sub, ok := props[key].(jsonSchema)
			if !ok {
				drift = append(drift, fmt.Sprintf("%s: config has key %q, the schema does not", path, key))
				continue
			}
			drift = append(drift, schemaDrift(root, sub, ft, join(path, key), enums)...)
		}
		for key := range props {
			if _, ok := fields[key]; !ok {
				drift = append(drift, fmt.Sprintf("%s: the schema has key %q, config does not", path, key))
			}
		}
	case t.Kind() == reflect.Slice:
		items, ok := node["items"].(jsonSchema)
		if !ok {
			return append(drift, path+": an array needs items")
		}
		drift = append(drift, schemaDrift(root, items, t.Elem(), path+"[]", enums)...)
	case t.Kind() == reflect.Map:
		values, ok := node["additionalProperties"].(jsonSchema)
		if !ok {
			return append(drift, path+": a map needs additionalProperties describing its values")
		}
		drift = append(drift, schemaDrift(root, values, t.Elem(), path+".<key>", enums)...)
	}
	return drift
}

// TestChartSchemaMatchesConfig keeps the chart's values.schema.json in step with the Config
// struct: every yaml key config decodes, and only those, at every depth, with its type, and
// objects closed (additionalProperties false) so a misspelt key fails helm template. Adding a
// key to config without adding it to the schema (or the reverse) fails here.
func TestChartSchemaMatchesConfig(t *testing.T) {
	root, cfg := loadChartConfigSchema(t)
	drift := schemaDrift(root, cfg, reflect.TypeOf(Config{}), "config", map[string][]any{})
	sort.Strings(drift)
	for _, d := range drift {
		t.Error(d)
	}
	if len(drift) > 0 {
		t.Logf("edit %s's properties.config to describe app/config's structs", chartSchemaFile)
	}
}

// TestChartSchemaEnums: each value a schema enum allows is one config accepts at that key, and
// a value outside it is refused there, so the schema refuses exactly what ralph-gate would.
// Every enum of the schema is checked; the four listed must exist.
func TestChartSchemaEnums(t *testing.T) {
	root, cfg := loadChartConfigSchema(t)
	enums := map[string][]any{}
	schemaDrift(root, cfg, reflect.TypeOf(Config{}), "config", enums)
	for _, want := range []string{"config.logging.level", "config.logging.format", "config.store.driver", "config.workflow.states[].kind", "config.workflow.extends"} {
		if _, ok := enums[want]; !ok {
			t.Errorf("the schema has no enum at %s", want)
		}
	}
	var paths []string
	for p := range enums {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		values := append(slices.Clone(enums[p]), "not-a-choice")
		for i, v := range values {
			outside := i == len(values)-1
			t.Run(fmt.Sprintf("%s=%v", p, v), func(t *testing.T) {
				at := strings.ReplaceAll(strings.TrimPrefix(p, "config."), "[]", "[0]")
				problems := parseWith(t, at, v)
				// Refused as a choice: a problem at the key that quotes the value. (An allowed
				// value may still need other keys, e.g. review_mode interactive a reviewing role.)
				refused := slices.ContainsFunc(problems, func(pr Problem) bool {
					return pr.Path == at && strings.Contains(pr.Message, fmt.Sprintf("%q", v))
				})
				if refused != outside {
					t.Errorf("config %s: %v refused=%v, the schema allows it=%v (problems: %v)", at, v, refused, !outside, problems)
				}
			})
		}
	}
}

// parseWith parses the embedded config.yml with one project and the value at path (dots and
// [index]) replaced.
func parseWith(t *testing.T, path string, value any) Problems {
	t.Helper()
	var doc map[string]any
	if err := yaml.Unmarshal(ralphgate.DefaultConfig(), &doc); err != nil {
		t.Fatal(err)
	}
	doc["projects"] = []any{map[string]any{"owner": "acme", "number": 1}}
	index := regexp.MustCompile(`^(.*)\[(\d+)\]$`)
	var cur any = doc
	keys := strings.Split(path, ".")
	for i, key := range keys {
		n := -1
		if m := index.FindStringSubmatch(key); m != nil {
			key = m[1]
			fmt.Sscan(m[2], &n)
		}
		obj, ok := cur.(map[string]any)
		if !ok {
			t.Fatalf("%s: not an object at %s", path, key)
		}
		last := i == len(keys)-1
		if _, ok := obj[key]; !ok {
			obj[key] = map[string]any{}
			if n >= 0 {
				obj[key] = []any{}
			}
		}
		if n < 0 && last {
			obj[key] = value
			break
		}
		cur = obj[key]
		if n >= 0 {
			list, ok := cur.([]any)
			if ok && len(list) == n { // a list the default leaves short (requirements: []) gains the item
				list = append(list, map[string]any{})
				obj[key] = list
			}
			if !ok || len(list) <= n {
				t.Fatalf("%s: no item %d at %s in the default config", path, n, key)
			}
			if last {
				list[n] = value
				break
			}
			cur = list[n]
		}
	}
	data, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	_, problems := parse(data)
	return problems
}

// TestChartSchemaDurationPattern: the schema's duration pattern matches exactly what
// time.ParseDuration (yaml.v3's decoder) accepts.
func TestChartSchemaDurationPattern(t *testing.T) {
	root, _ := loadChartConfigSchema(t)
	def := resolve(root, jsonSchema{"$ref": "#/definitions/duration"})
	pattern, _ := def["pattern"].(string)
	re, err := regexp.Compile(pattern)
	if err != nil {
		t.Fatalf("duration pattern %q: %v", pattern, err)
	}
	for _, s := range []string{"0", "5s", "90s", "1h30m", "1.5h", ".5s", "2m0s", "300ms", "10us", "10µs", "10μs", "7ns", "-1s", "+2m",
		"", "5", "5x", "s", "1 h", "1d", "2minutes", "1h-5m", "--1s", "1.s", "00"} {
		_, perr := time.ParseDuration(s)
		if matched := re.MatchString(s); matched != (perr == nil) {
			t.Errorf("duration %q: pattern matches=%v, time.ParseDuration accepts=%v", s, matched, perr == nil)
		}
	}
}

// schemaErrors checks a value against a schema node, for the keywords the chart's schema uses
// (type, properties, additionalProperties, required, items, enum, minLength, minimum,
// pattern, $ref), as helm does when it renders.
func schemaErrors(root, node jsonSchema, v any, at string) []string {
	node = resolve(root, node)
	var errs []string
	if e, ok := node["enum"].([]any); ok && !slices.ContainsFunc(e, func(x any) bool { return reflect.DeepEqual(x, v) }) {
		errs = append(errs, fmt.Sprintf("%s: %v is not one of %v", at, v, e))
	}
	number, isNumber := 0.0, false
	switch n := v.(type) {
	case int:
		number, isNumber = float64(n), true
	case float64:
		number, isNumber = n, true
	}
	switch typ, _ := node["type"].(string); typ {
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			return append(errs, fmt.Sprintf("%s: want an object, got %T", at, v))
		}
		required, _ := node["required"].([]any)
		for _, r := range required {
			if _, ok := m[r.(string)]; !ok {
				errs = append(errs, fmt.Sprintf("%s: missing property %q", at, r))
			}
		}
		props, _ := node["properties"].(jsonSchema)
		for k, val := range m {
			if sub, ok := props[k].(jsonSchema); ok {
				errs = append(errs, schemaErrors(root, sub, val, at+"/"+k)...)
			} else if ap, ok := node["additionalProperties"].(jsonSchema); ok {
				errs = append(errs, schemaErrors(root, ap, val, at+"/"+k)...)
			} else if node["additionalProperties"] == false {
				errs = append(errs, fmt.Sprintf("%s: additional property %q not allowed", at, k))
			}
		}
	case "array":
		list, ok := v.([]any)
		if !ok {
			return append(errs, fmt.Sprintf("%s: want an array, got %T", at, v))
		}
		items, _ := node["items"].(jsonSchema)
		for i, item := range list {
			errs = append(errs, schemaErrors(root, items, item, fmt.Sprintf("%s/%d", at, i))...)
		}
	case "string":
		str, ok := v.(string)
		if !ok {
			return append(errs, fmt.Sprintf("%s: want a string, got %T", at, v))
		}
		if n, ok := node["minLength"].(float64); ok && float64(len([]rune(str))) < n {
			errs = append(errs, fmt.Sprintf("%s: shorter than %v", at, n))
		}
		if p, ok := node["pattern"].(string); ok && !regexp.MustCompile(p).MatchString(str) {
			errs = append(errs, fmt.Sprintf("%s: does not match %s", at, p))
		}
	case "integer", "number":
		if !isNumber || (typ == "integer" && number != float64(int64(number))) {
			return append(errs, fmt.Sprintf("%s: want %s, got %T", at, typ, v))
		}
		if min, ok := node["minimum"].(float64); ok && number < min {
			errs = append(errs, fmt.Sprintf("%s: below %v", at, min))
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			errs = append(errs, fmt.Sprintf("%s: want a boolean, got %T", at, v))
		}
	}
	return errs
}

// A partial config.workflow extends the default workflow: the chart's schema accepts it at
// render time and ralph-gate accepts the config.yml the chart renders from it; a value of
// the wrong type (or outside a key's choices, or a named item without its name) is refused
// by both.
func TestChartSchemaAndConfigAgreeOnWorkflowSections(t *testing.T) {
	root, cfg := loadChartConfigSchema(t)
	var whole map[string]any
	if err := yaml.Unmarshal(ralphgate.DefaultConfig(), &whole); err != nil {
		t.Fatal(err)
	}
	wholeWorkflow := whole["workflow"].(map[string]any)
	wholeWorkflow["extends"] = "none"
	tests := []struct {
		name     string
		workflow any // config.workflow
		valid    bool
	}{
		{"review_mode alone", "{review_mode: auto}", true},
		{"one WIP limit", "{gates: {wip_limits: {In Progress: 2}}}", true},
		{"one state's next", "{states: [{name: In Progress, next: [In Review, Human Needed, Ready for Plan]}]}", true},
		{"a new state", "{states: [{name: Blocked, kind: human_gate, next: [In Progress]}, {name: In Progress, next: [In Review, Human Needed, Blocked]}]}", true},
		{"extends: default", "{extends: default, automation: {comment_automation: true}}", true},
		{"a whole workflow with extends: none", wholeWorkflow, true},
		{"a review mode outside its choices", "{review_mode: sometimes}", false},
		{"a string for a boolean", "{gates: {blockers: yes-please}}", false},
		{"a string for a list", "{states: [{name: In Progress, next: Done}]}", false},
		{"a word for a WIP limit", "{gates: {wip_limits: {In Progress: many}}}", false},
		{"a state without its name", "{states: [{kind: queue, next: [Done]}]}", false},
		{"a command without its name", "{commands: [{inputs: [Backlog]}]}", false},
		{"an extends outside its choices", "{extends: nothing}", false},
		{"a misspelt key", "{statez: []}", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wf := tt.workflow
			if text, ok := wf.(string); ok {
				if err := yaml.Unmarshal([]byte(text), &wf); err != nil {
					t.Fatal(err)
				}
			}
			values := map[string]any{"projects": []any{map[string]any{"owner": "acme", "number": 1}}, "workflow": wf}
			schemaErrs := schemaErrors(root, cfg, values, "/config")
			file, err := yaml.Marshal(values)
			if err != nil {
				t.Fatal(err)
			}
			_, problems := parse(file)
			if (len(schemaErrs) == 0) != tt.valid || (len(problems) == 0) != tt.valid {
				t.Errorf("valid=%v, but the schema says %v and ralph-gate says %v", tt.valid, schemaErrs, problems)
			}
		})
	}
}
