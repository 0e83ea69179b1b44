package config

import (
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	ralphgate "github.com/ralph-gate/ralph-gate"
	"github.com/ralph-gate/ralph-gate/policy"
)

// A workflow section extends the embedded default workflow: it is merged into the default's
// YAML tree, value by value, before it is decoded (docs/CONFIGURATION.md, "How a workflow
// section extends the default", written from workflowMergeDoc below):
//
//   - a mapping over a mapping merges key by key, at every depth;
//   - a list whose items, in the default, are all mappings with a name (states, commands,
//     intents) merges by name: an item of a known name is merged into it key by key, an item
//     of a new name (or without one, or a name given twice) is appended, in the order given;
//   - anything else (every other list, every scalar) replaces the default's value whole; an
//     empty value (null) keeps the default's.
//
// workflow.extends: none makes the section the whole workflow; default (or no extends) merges.

const (
	extendsKey     = "extends"
	extendsDefault = "default"
	extendsNone    = "none"
)

// steeringKey is a key the file may hold that no Go field decodes: it steers decoding and is
// taken out of the tree before the tree is checked and decoded. keys.go lists it among its
// type's keys (unknown keys, the chart's schema), reference.go documents it.
type steeringKey struct {
	name string
	typ  reflect.Type
	def  string // its default, as the reference shows it
	doc  string // its description in the reference
}

// steeringKeys are the steering keys of a type.
func steeringKeys(t reflect.Type) []steeringKey {
	if t != reflect.TypeOf(policy.Spec{}) {
		return nil
	}
	return []steeringKey{{
		name: extendsKey, typ: reflect.TypeOf(""), def: extendsDefault,
		doc: "How this section relates to the embedded default workflow: `default` extends it (the keys given replace the default's, the rest is kept; see below), `none` makes this section the whole workflow.",
	}}
}

// workflowMergeDoc is docs/CONFIGURATION.md's part on the merge (after the workflow table).
const workflowMergeDoc = `### How a workflow section extends the default

A ` + "`workflow`" + ` section extends the embedded default workflow (config.yml's, whose values the table
above shows): the keys it gives replace the default's, everything it does not give is kept. The two
are merged value by value, by three rules:

1. **A mapping over a mapping merges key by key**, at every depth: ` + "`gates: {wip_limits: {In Progress: 2}}`" + `
   sets one WIP limit and keeps the other gates and every other limit.
2. **A list whose items, in the default, are all mappings with a ` + "`name`" + `** (` + "`states`, `commands`, `intents`" + `)
   **merges by name**: an item whose name the default has (spelled exactly) is merged key by key into
   that item, so a state given with only ` + "`next:`" + ` keeps its kind and description; an item with a new
   name is added after the default's items, in the order given. An item without a name, or a name
   given twice, is added as it is, and validation reports it.
3. **Anything else replaces the default's value whole**: every other list (a state's ` + "`next`" + `, ` + "`initial`" + `,
   ` + "`pipeline`, `parent_gates`, `from_anywhere`, `humans_only`" + `, a command's ` + "`inputs`" + ` and ` + "`outputs`" + `, an
   intent's ` + "`ambiguous`" + `) and every single value. An empty value (` + "`key:`" + ` alone, or ` + "`~`" + `) keeps the
   default's.

Nothing of the default can be removed this way. ` + "`extends: none`" + ` makes the section the whole workflow,
exactly as written, with nothing from the default: a file that lists a whole workflow of its own and
leaves out or renames states, commands or intents of the default needs it, or those come back.
` + "`extends: default`" + ` is the same as no ` + "`extends`" + `; any other value is a problem at ` + "`workflow.extends`" + `.

A problem in what the section gives is reported at the section's own key path and line
(` + "`workflow.states[0].colour: unknown key (line 4); known keys: …`" + `). A problem of the merged workflow,
such as a ` + "`next`" + ` naming no state, is reported at its path in the merged workflow, with the file's
path and line when the item sits elsewhere there
(` + "`workflow.states[6].next[0]: unknown state \"In Reveiw\" (did you mean \"In Review\"?) (the file's workflow.states[0].next[0], line 4)`" + `).
` + "`ralph-gate validate --show-workflow`" + ` prints the merged workflow, whole.

Interactive plan review on the default machine (it also needs a reviewing role under ` + "`actors.roles`" + `):

` + "```yaml" + `
workflow:
  review_mode: interactive
` + "```" + `

In Progress may also hand work back to Ready for Plan. Its ` + "`next`" + ` list is replaced whole, so it
repeats the default's moves; its kind and description stay the default's:

` + "```yaml" + `
workflow:
  states:
    - name: In Progress
      next: [In Review, Human Needed, Ready for Plan]
` + "```" + `
`

// workflowOrigin says where the merged workflow's values came from, to report problems by
// the file's paths and lines.
type workflowOrigin struct {
	// section is the file's workflow section (extends removed); nil when it has none.
	section *yaml.Node
	// moved maps the file's path of a list item to its path in the merged workflow, when the
	// two differ (a state given first that merged into the default's seventh); back maps the
	// other way. longest is the length of the longest path in either (a path's prefixes
	// longer than it are looked up in neither).
	moved, back map[string]string
	longest     int
	// duplicates are the keys the file gives twice in a mapping merged with the default's:
	// the merge keeps the first (yaml.v3 would drop the whole mapping, the default's keys too).
	duplicates Problems
}

// takeExtends removes workflow.extends from the file's tree and returns the workflow section
// and what it extends; a value other than default or none is a problem (and the section then
// extends the default).
func takeExtends(doc *yaml.Node) (section *yaml.Node, extends string, problems Problems) {
	extends = extendsDefault
	section = valueOf(doc, "workflow")
	if section == nil || isNull(section) {
		return nil, extends, nil
	}
	if section.Kind != yaml.MappingNode {
		return section, extends, nil
	}
	kept := section.Content[:0:0]
	for i := 0; i+1 < len(section.Content); i += 2 {
		k, v := section.Content[i], section.Content[i+1]
		if k.Value != extendsKey {
			kept = append(kept, k, v)
			continue
		}
		switch {
		case isNull(v):
		case v.Kind == yaml.ScalarNode && (v.Value == extendsDefault || v.Value == extendsNone):
			extends = v.Value
		default:
			p := mismatch(v, "workflow."+extendsKey, extendsDefault+" (extend the embedded default workflow) or "+extendsNone+" (this section is the whole workflow)")
			if near, ok := Nearest(v.Value, []string{extendsDefault, extendsNone}); ok && v.Kind == yaml.ScalarNode {
				p.Message += fmt.Sprintf(" (did you mean %q?)", near)
			}
			problems = append(problems, p)
		}
	}
	section.Content = kept
	return section, extends, problems
}

// defaultSection is a section of the embedded config.yml, freshly parsed (the merge shares
// its nodes; nothing changes them).
func defaultSection(key string) (*yaml.Node, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(ralphgate.DefaultConfig(), &root); err != nil || len(root.Content) == 0 {
		return nil, fmt.Errorf("the embedded config.yml does not parse: %v", err)
	}
	n := valueOf(root.Content[0], key)
	if n == nil {
		return nil, fmt.Errorf("the embedded config.yml has no %s section", key)
	}
	return n, nil
}

// effectiveWorkflow returns the workflow to decode: the section merged into the default's
// (extends: default), the section alone (none), or the default's when there is no section.
func effectiveWorkflow(section *yaml.Node, extends string) (*yaml.Node, *workflowOrigin, error) {
	origin := &workflowOrigin{section: section}
	if section != nil && extends == extendsNone {
		return section, origin, nil
	}
	def, err := defaultSection("workflow")
	if err != nil {
		return nil, origin, err
	}
	return origin.merge(def, section, "workflow", "workflow"), origin, nil
}

// merge merges user into def; userAt and at are the value's paths in the file and in the
// merged workflow.
func (o *workflowOrigin) merge(def, user *yaml.Node, userAt, at string) *yaml.Node {
	switch {
	case user == nil || isNull(user):
		return def
	case def == nil:
		return user
	case def.Kind == yaml.MappingNode && user.Kind == yaml.MappingNode:
		return o.mergeMapping(def, user, userAt, at)
	case def.Kind == yaml.SequenceNode && user.Kind == yaml.SequenceNode && namedList(def):
		return o.mergeNamed(def, user, userAt, at)
	}
	return user
}

// mergeMapping keeps the default's keys in their order, each merged with the value the user
// gave for it, then appends the user's other keys. A key given twice is a problem, and the
// first is kept.
func (o *workflowOrigin) mergeMapping(def, user *yaml.Node, userAt, at string) *yaml.Node {
	given := map[string]int{}
	for i := 0; i+1 < len(user.Content); i += 2 {
		k := user.Content[i]
		if first, dup := given[k.Value]; dup {
			o.duplicates = append(o.duplicates, Problem{Path: join(userAt, k.Value),
				Message: fmt.Sprintf("line %d: mapping key %q already defined at line %d", k.Line, k.Value, user.Content[first].Line)})
			continue
		}
		given[k.Value] = i
	}
	out := bare(def)
	used := map[int]bool{}
	for i := 0; i+1 < len(def.Content); i += 2 {
		k, v := def.Content[i], def.Content[i+1]
		j, ok := given[k.Value]
		if !ok {
			out.Content = append(out.Content, k, v)
			continue
		}
		used[j] = true
		uk := user.Content[j]
		out.Content = append(out.Content, uk, o.merge(v, user.Content[j+1], join(userAt, uk.Value), join(at, uk.Value)))
	}
	for j := 0; j+1 < len(user.Content); j += 2 {
		if k := user.Content[j].Value; !used[j] && given[k] == j {
			out.Content = append(out.Content, user.Content[j], user.Content[j+1])
		}
	}
	return out
}

// mergeNamed merges each of the user's items into the default's item of the same name, or
// appends it (a new name, no name, or a name already merged).
func (o *workflowOrigin) mergeNamed(def, user *yaml.Node, userAt, at string) *yaml.Node {
	out := bare(def)
	out.Content = append(out.Content, def.Content...)
	slot := map[string]int{}
	for i, item := range def.Content {
		if name, _ := itemName(item); name != "" {
			if _, dup := slot[name]; !dup {
				slot[name] = i
			}
		}
	}
	for i, item := range user.Content {
		j := len(out.Content)
		from, to := fmt.Sprintf("%s[%d]", userAt, i), ""
		if name, ok := itemName(item); ok {
			if k, known := slot[name]; known {
				delete(slot, name)
				j = k
			}
		}
		to = fmt.Sprintf("%s[%d]", at, j)
		if j < len(out.Content) {
			out.Content[j] = o.merge(def.Content[j], item, from, to)
		} else {
			out.Content = append(out.Content, item)
		}
		if from != to {
			o.move(from, to)
		}
	}
	return out
}

// namedList reports whether a list's items are all mappings with a name.
func namedList(list *yaml.Node) bool {
	for _, item := range list.Content {
		if _, ok := itemName(item); !ok {
			return false
		}
	}
	return len(list.Content) > 0
}

// itemName is a list item's name, when it is a mapping with a name.
func itemName(n *yaml.Node) (string, bool) {
	if n.Kind != yaml.MappingNode {
		return "", false
	}
	v := valueOf(n, "name")
	if v == nil || v.Kind != yaml.ScalarNode || isNull(v) {
		return "", false
	}
	return v.Value, true
}

// bare is a copy of a collection node without its content.
func bare(n *yaml.Node) *yaml.Node {
	c := *n
	c.Content = nil
	return &c
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// valueOf is the value of key in a mapping (its first occurrence), or nil.
func valueOf(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// setValue sets key's value in a mapping, appending the key when it is not there.
func setValue(n *yaml.Node, key string, v *yaml.Node) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			n.Content[i+1] = v
			return
		}
	}
	n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, v)
}

// move records that the file's list item at path from is at path to in the merged workflow.
func (o *workflowOrigin) move(from, to string) {
	if o.moved == nil {
		o.moved = map[string]string{}
	}
	if o.back == nil {
		o.back = map[string]string{}
	}
	o.moved[from] = to
	if _, taken := o.back[to]; !taken {
		o.back[to] = from
	}
	o.longest = max(o.longest, len(from), len(to))
}

// toMerged translates a path of the file into the merged workflow's.
func (o *workflowOrigin) toMerged(p string) string {
	if o == nil {
		return p
	}
	if from, to, ok := longestPrefix(p, o.moved, o.longest); ok {
		return to + p[len(from):]
	}
	return p
}

// toFile translates a path of the merged workflow into the file's, when it lies in an item
// the file gave elsewhere.
func (o *workflowOrigin) toFile(p string) (string, bool) {
	if o == nil {
		return "", false
	}
	if to, from, ok := longestPrefix(p, o.back, o.longest); ok {
		return from + p[len(to):], true
	}
	return "", false
}

// longestPrefix finds the longest key of m that is p or a path above it; no key of m is
// longer than longest. It looks up p's own prefixes, not m's keys: its cost is that of
// longest, whatever the number of keys (one per item the file moved, thousands in a large
// file, looked up for each of its problems).
func longestPrefix(p string, m map[string]string, longest int) (key, value string, ok bool) {
	for i := min(len(p), longest); i > 0; i-- {
		if i < len(p) && p[i] != '.' && p[i] != '[' {
			continue
		}
		if v, found := m[p[:i]]; found {
			return p[:i], v, true
		}
	}
	return "", "", false
}

// pathStep is one step of a key path: .key or [index].
var pathStep = regexp.MustCompile(`\.([^.\[]+)|\[(\d+)\]`)

// deepest walks the file's workflow section along a path of it ("workflow.states[0].next[1]")
// and returns the deepest part of the path the file holds, and that value's line.
func (o *workflowOrigin) deepest(p string) (string, int) {
	rest, ok := strings.CutPrefix(p, "workflow")
	if !ok || o.section == nil {
		return "", 0
	}
	n, at := o.section, "workflow"
	for _, m := range pathStep.FindAllStringSubmatch(rest, -1) {
		var next *yaml.Node
		if m[1] != "" && n.Kind == yaml.MappingNode {
			next = valueOf(n, m[1])
		} else if i, err := strconv.Atoi(m[2]); m[2] != "" && err == nil && n.Kind == yaml.SequenceNode && i < len(n.Content) {
			next = n.Content[i]
		}
		if next == nil {
			break
		}
		n, at = next, at+m[0]
	}
	return at, n.Line
}

// unshadowed is the package's unshadowed for a merged workflow: a value of the wrong type
// that the file gave elsewhere in the merged workflow hides the semantic problems at its
// merged path too, and a semantic problem inside such an item names the file's path and line.
func (o *workflowOrigin) unshadowed(decoded, semantic Problems) Problems {
	return o.placed(o.kept(decoded, semantic))
}

// kept are the semantic problems no type error hides, at its path in the file or in the
// merged workflow.
func (o *workflowOrigin) kept(decoded, semantic Problems) Problems {
	shadows := slices.Clone(decoded)
	for _, p := range decoded {
		if q := o.toMerged(p.Path); q != p.Path {
			shadows = append(shadows, Problem{Path: q, Message: p.Message})
		}
	}
	return unshadowed(shadows, semantic)
}

// placed names the file's path and line in each semantic problem inside an item the file
// gave elsewhere in the merged workflow.
func (o *workflowOrigin) placed(semantic Problems) Problems {
	out := slices.Clone(semantic)
	for i, p := range out {
		if filePath, ok := o.toFile(p.Path); ok {
			at, line := o.deepest(filePath)
			if line > 0 {
				out[i].Message = fmt.Sprintf("%s (the file's %s, line %d)", p.Message, at, line)
			}
		}
	}
	return out
}
