package config

import (
	"encoding"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

var (
	goDuration      = reflect.TypeOf(time.Duration(0))
	unmarshalerType = reflect.TypeOf((*yaml.Unmarshaler)(nil)).Elem()
	textType        = reflect.TypeOf((*encoding.TextUnmarshaler)(nil)).Elem()
	// yamlLine finds the line yaml.v3 puts at the start of each type error.
	yamlLine = regexp.MustCompile(`^line (\d+): `)
)

// typeProblems walks the YAML tree beside the Go type and reports every value the type cannot
// hold, by key path and line, in words. yaml.v3 names only the line and a Go type ("line 5:
// cannot unmarshal !!int `10` into time.Duration"); an operator needs the key. Whether a value
// fits is decided by yaml.v3 itself (each leaf is decoded on its own), so this walk and the
// decoder never disagree. lines records the key path of every value by its line, to place
// any error of the decoder this walk did not foresee.
func typeProblems(n *yaml.Node, t reflect.Type, at string, lines map[int]string) Problems {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.AliasNode {
		return nil // checked where the anchor is defined (see unknownKeys)
	}
	if at != "" {
		if _, seen := lines[n.Line]; !seen {
			lines[n.Line] = at
		}
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return nil // an empty value leaves the default
	}
	if customDecoding(t) {
		return leafProblem(n, t, at)
	}
	var problems Problems
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return Problems{mismatch(n, at, "a mapping ("+knownList(t)+")")}
		}
		fields := yamlFields(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			key := n.Content[i].Value
			if ft, ok := fields[key]; ok {
				problems = append(problems, typeProblems(n.Content[i+1], ft, join(at, key), lines)...)
			}
		}
	case reflect.Slice, reflect.Array:
		if n.Kind != yaml.SequenceNode {
			return Problems{mismatch(n, at, "a list")}
		}
		for i, item := range n.Content {
			problems = append(problems, typeProblems(item, t.Elem(), fmt.Sprintf("%s[%d]", at, i), lines)...)
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return Problems{mismatch(n, at, "a mapping")}
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := join(at, k.Value)
			if t.Key().Kind() != reflect.String {
				problems = append(problems, leafProblem(k, t.Key(), p)...)
			}
			problems = append(problems, typeProblems(v, t.Elem(), p, lines)...)
		}
	case reflect.Interface:
	default:
		problems = append(problems, leafProblem(n, t, at)...)
	}
	return problems
}

// customDecoding reports whether a type decodes itself: its values are checked whole.
func customDecoding(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return t != goDuration && (p.Implements(unmarshalerType) || p.Implements(textType))
}

// leafProblem decodes one value into a new t with yaml.v3's own rules, and words a refusal.
func leafProblem(n *yaml.Node, t reflect.Type, at string) Problems {
	if err := n.Decode(reflect.New(t).Interface()); err != nil {
		return Problems{mismatch(n, at, want(t))}
	}
	// yaml.v3 truncates 1.5 into an integer without a word: a silent default is a bug.
	if isInt(t.Kind()) && n.Kind == yaml.ScalarNode && n.ShortTag() == "!!float" {
		if f, err := strconv.ParseFloat(n.Value, 64); err == nil && f != math.Trunc(f) {
			return Problems{mismatch(n, at, want(t))}
		}
	}
	return nil
}

func isInt(k reflect.Kind) bool {
	switch k {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	}
	return false
}

// want says in words what a type takes.
func want(t reflect.Type) string {
	if t == goDuration {
		return `a duration such as "10m"`
	}
	switch k := t.Kind(); {
	case k == reflect.String:
		return "a string"
	case k == reflect.Bool:
		return "true or false"
	case isInt(k):
		return "a whole number"
	case k == reflect.Float32 || k == reflect.Float64:
		return "a number"
	}
	return "a " + t.String()
}

// mismatch is the problem of a value that is not what the key takes. Scalars are quoted as
// written (strings quoted, numbers bare), cut to 40 characters.
func mismatch(n *yaml.Node, at, wanted string) Problem {
	var got string
	switch n.Kind {
	case yaml.MappingNode:
		got = "a mapping"
	case yaml.SequenceNode:
		got = "a list"
	default:
		v := n.Value
		if r := []rune(v); len(r) > 40 {
			v = string(r[:40]) + "…"
		}
		if n.ShortTag() == "!!str" {
			got = strconv.Quote(v)
		} else {
			got = v
		}
	}
	if at == "" {
		at = "(file)"
	}
	return Problem{Path: at, Message: fmt.Sprintf("line %d: want %s, got %s", n.Line, wanted, got)}
}

// placeDecodeErrors turns yaml.v3's type errors into problems at key paths. An error on a
// line typeProblems already reported is the same problem; any other is placed at the key of
// its line (or the file, when no key starts there).
func placeDecodeErrors(msgs []string, found Problems, lines map[int]string) Problems {
	reported := map[int]bool{}
	for _, p := range found {
		if m := yamlLine.FindStringSubmatch(p.Message); m != nil {
			n, _ := strconv.Atoi(m[1])
			reported[n] = true
		}
	}
	var out Problems
	for _, msg := range msgs {
		path := "(file)"
		if m := yamlLine.FindStringSubmatch(msg); m != nil {
			n, _ := strconv.Atoi(m[1])
			if reported[n] {
				continue
			}
			if p, ok := lines[n]; ok {
				path = p
			}
		}
		out = append(out, Problem{Path: path, Message: strings.TrimSpace(msg)})
	}
	return out
}

// unshadowed drops the semantic problems at a key whose value had the wrong type: the value
// was not decoded, and "must be at least 1 (got 0)" about it would only mislead.
func unshadowed(decoded, semantic Problems) Problems {
	typed := map[string]bool{}
	for _, p := range decoded {
		if yamlLine.MatchString(p.Message) {
			typed[p.Path] = true
		}
	}
	var out Problems
	for _, p := range semantic {
		if !typed[p.Path] {
			out = append(out, p)
		}
	}
	return out
}
