package config

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	ralphgate "github.com/ralph-gate/ralph-gate"
)

// Reference renders docs/CONFIGURATION.md: every key of the Config struct with its type, its
// default (from the embedded config.yml) and its description (the comments above the key in
// config.yml, which is the one place keys are documented). A test fails when the file drifts.
func Reference() ([]byte, error) {
	def, err := Default()
	if err != nil {
		return nil, err
	}
	var root yaml.Node
	if err := yaml.Unmarshal(ralphgate.DefaultConfig(), &root); err != nil {
		return nil, fmt.Errorf("parse the embedded config.yml: %w", err)
	}
	comments := map[string]string{}
	collectComments(root.Content[0], "", comments)

	var b bytes.Buffer
	b.WriteString(`# Configuration reference

<!-- Generated from the Config struct and the comments in config.yml by
     ` + "`go test ./app/config -run TestConfigurationReference -update`" + `; do not edit by hand.
     TestConfigurationReference fails when this file drifts. -->

ralph-gate reads one YAML file, given with ` + "`--config`" + ` (the Helm chart mounts it from a ConfigMap).
Without a file the embedded default, [config.yml](../config.yml), is used. Decoding is strict: an
unknown key, or a value of the wrong type, is an error reported with its path (and line:
` + "`enforcement.coalesce_window: line 5: want a duration such as \"10m\", got 10`" + `), and a mistyped state
gets the nearest one (` + "`unknown state \"Reserch Needed\" (did you mean \"Research Needed\"?)`" + `).
A file without an ` + "`actors`" + ` section gets the default's whole section; a ` + "`workflow`" + ` section extends the
default workflow, key by key ([how](#how-a-workflow-section-extends-the-default)).

Every command runs the same checks before it acts, and each asks only for what it uses:

| command | needs, besides a valid file |
|---|---|
| ` + "`serve`" + `, ` + "`doctor`" + `, ` + "`validate --config FILE`" + ` | the App's id, private key and webhook secret, every ` + "`mcp.agents[].token_env`" + ` set, and no token shared by two agents; no project: without ` + "`projects`" + `, serve reads each organization's policy from its repository ([how](#policy-in-the-organizations-repository)) |
| ` + "`mcp --stdio`" + ` (` + "`validate --for mcp`" + `) | the App's id and private key, at least one project listed in the file (no webhook secret, no agent token) |
| ` + "`validate --for file`" + ` (and ` + "`validate`" + ` without ` + "`--config`" + `) | nothing more: a secret that is given must still be sound |

` + "`ralph-gate validate`" + ` lists every problem at once (` + "`--json`" + ` for scripts); ` + "`serve`" + ` refuses to start on any.

Key paths use ` + "`[]`" + ` for "every item of a list" and ` + "`<key>`" + ` for "any key of a map".

## Environment

Secrets are best kept out of the file. These variables, when set, replace the keys they name:

| variable | replaces |
|---|---|
| ` + "`" + EnvIntegrationID + "`" + ` | ` + "`github.app.integration_id`" + ` |
| ` + "`" + EnvWebhookSecret + "`" + ` | ` + "`github.app.webhook_secret`" + ` |
| ` + "`" + EnvPrivateKeyFile + "`" + ` | ` + "`github.app.private_key`" + `, read from this file (the ` + "`.pem`" + ` GitHub generated; the Helm chart mounts the key's Secret as a file and sets it). A file that cannot be read or holds no RSA private key is a problem naming the variable and the path, never the content |
| ` + "`" + EnvPrivateKey + "`" + ` | ` + "`github.app.private_key`" + ` (the PEM text itself); setting it beside ` + "`" + EnvPrivateKeyFile + "`" + ` is a problem: give the key one way |
| ` + "`" + EnvStoreDSN + "`" + ` | ` + "`store.dsn`" + ` |
| ` + "`" + EnvOAuthClientID + "`" + ` | ` + "`github.oauth.client_id`" + ` |
| ` + "`" + EnvOAuthClientSecret + "`" + ` | ` + "`github.oauth.client_secret`" + ` |
| ` + "`" + EnvSessionKey + "`" + ` | nothing in the file: the key that signs the board health pages' session cookies, at least 32 bytes (` + "`openssl rand -hex 32`" + `); a shorter or repetitive key is refused. ` + "`serve`" + ` asks for it, ` + "`server.public_url`" + ` and ` + "`github.oauth`" + ` only with ` + "`ui.enabled`" + ` |
`)
	t := reflect.TypeOf(Config{})
	v := reflect.ValueOf(def)
	for i := 0; i < t.NumField(); i++ {
		name := yamlName(t.Field(i))
		if name == "" {
			continue
		}
		fmt.Fprintf(&b, "\n## `%s`\n\n", name)
		if c := comments[name]; c != "" {
			b.WriteString(paragraph(c))
			b.WriteString("\n\n")
		}
		b.WriteString("| key | type | default | description |\n|---|---|---|---|\n")
		rows(&b, name, t.Field(i).Type, v.Field(i), true, comments)
		if name == "workflow" {
			b.WriteString("\n" + workflowMergeDoc)
		}
		if name == "policy" {
			b.WriteString("\n" + orgPolicyDoc)
		}
	}
	return b.Bytes(), nil
}

// rows writes one table row per key under path (the section's own key first when it is a
// list or a map, whose items the rows then describe).
func rows(b *bytes.Buffer, path string, t reflect.Type, v reflect.Value, top bool, comments map[string]string) {
	if t.Kind() == reflect.Struct && t != reflect.TypeOf(time.Duration(0)) {
		for _, k := range steeringKeys(t) {
			fmt.Fprintf(b, "| `%s` | %s | `%s` | %s |\n", path+"."+k.name, typeName(k.typ), k.def, cell(k.doc))
		}
		for i := 0; i < t.NumField(); i++ {
			name := yamlName(t.Field(i))
			if name == "" {
				continue
			}
			var fv reflect.Value
			if v.IsValid() {
				fv = v.Field(i)
			}
			rows(b, path+"."+name, t.Field(i).Type, fv, false, comments)
		}
		return
	}
	if !top || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
		desc := ""
		if !top {
			desc = comments[path]
		}
		if parent, _, inList := strings.Cut(path, "[]"); desc == "" && inList {
			desc = "see `" + parent + "`"
		}
		fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", path, typeName(t), defaultOf(v), cell(desc))
	}
	if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct {
		rows(b, path+"[]", t.Elem(), reflect.Value{}, false, comments)
	}
	if t.Kind() == reflect.Map && t.Elem().Kind() == reflect.Struct {
		rows(b, path+".<key>", t.Elem(), reflect.Value{}, false, comments)
	}
}

func yamlName(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if name == "-" {
		return ""
	}
	if name == "" {
		name = strings.ToLower(f.Name)
	}
	return name
}

func typeName(t reflect.Type) string {
	if t == reflect.TypeOf(time.Duration(0)) {
		return "duration (`90s`, `5m`, `1h`)"
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "integer"
	case reflect.Float64, reflect.Float32:
		return "number"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Struct {
			return "list of objects"
		}
		return "list of " + typeName(t.Elem()) + "s"
	case reflect.Map:
		return "map of " + typeName(t.Key()) + " to " + typeName(t.Elem())
	case reflect.Struct:
		return "object"
	}
	return t.Kind().String()
}

// defaultOf shows the embedded default of a value outside lists; "" inside lists.
func defaultOf(v reflect.Value) string {
	if !v.IsValid() {
		return ""
	}
	if d, ok := v.Interface().(time.Duration); ok {
		return "`" + d.String() + "`"
	}
	switch v.Kind() {
	case reflect.String:
		if v.String() == "" {
			return "`\"\"`"
		}
		return "`" + strings.ReplaceAll(v.String(), "|", `\|`) + "`"
	case reflect.Slice:
		if v.Len() == 0 {
			return "`[]`"
		}
		if v.Type().Elem().Kind() == reflect.String && v.Len() <= 4 {
			items := make([]string, v.Len())
			for i := range items {
				items[i] = v.Index(i).String()
			}
			return "`[" + strings.ReplaceAll(strings.Join(items, ", "), "|", `\|`) + "]`"
		}
		return fmt.Sprintf("%d items (see config.yml)", v.Len())
	case reflect.Map:
		if v.Len() == 0 {
			return "`{}`"
		}
		return fmt.Sprintf("%d entries (see config.yml)", v.Len())
	}
	return fmt.Sprintf("`%v`", v.Interface())
}

// collectComments records the comment above (or beside) each key, by key path; within a list
// the first item that comments a key documents it for every item.
func collectComments(n *yaml.Node, at string, out map[string]string) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			p := join(at, k.Value)
			c := strings.TrimSpace(joinComments(k.HeadComment, k.LineComment, val.LineComment))
			if c != "" && out[p] == "" {
				out[p] = c
			}
			collectComments(val, p, out)
		}
	}
	// Comments inside list items describe that item (an example), not the key in general:
	// the list's own comment documents its items.
}

func joinComments(parts ...string) string {
	var lines []string
	for _, p := range parts {
		for _, l := range strings.Split(p, "\n") {
			l = strings.TrimSpace(l)
			if !strings.HasPrefix(l, "#") {
				continue
			}
			lines = append(lines, strings.TrimPrefix(strings.TrimPrefix(l, "#"), " "))
		}
	}
	return strings.Join(lines, "\n")
}

// paragraph turns a comment into Markdown prose, keeping indented lines (lists in comments)
// on their own lines.
func paragraph(c string) string {
	var out []string
	for _, l := range strings.Split(c, "\n") {
		if strings.HasPrefix(l, " ") {
			out = append(out, "`"+strings.TrimSpace(l)+"`<br>")
			continue
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

// cell fits a comment into one table cell.
func cell(c string) string {
	if c == "" {
		return ""
	}
	lines := strings.Split(c, "\n")
	for i, l := range lines {
		l = strings.ReplaceAll(l, "|", `\|`)
		if strings.HasPrefix(l, " ") {
			l = "<br>" + strings.TrimSpace(l)
		}
		lines[i] = l
	}
	return strings.ReplaceAll(strings.Join(lines, " "), " <br>", "<br>")
}
