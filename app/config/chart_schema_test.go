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
	for _, want := range []string{"config.logging.level", "config.logging.format", "config.store.driver", "config.workflow.states[].kind"} {
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
		}
		if n < 0 && last {
			obj[key] = value
			break
		}
		cur = obj[key]
		if n >= 0 {
			list, ok := cur.([]any)
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
