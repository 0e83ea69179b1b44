package config

import (
	"fmt"
	"reflect"
	"strings"

	"gopkg.in/yaml.v3"
)

func configShape() reflect.Type { return reflect.TypeOf(Config{}) }

// unknownKeys walks the YAML tree beside the Go type and reports every key the type does
// not declare, with its path. yaml.v3's KnownFields stops at the first one; operators
// deserve the whole list.
func unknownKeys(n *yaml.Node, t reflect.Type, at string) Problems {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.AliasNode {
		// The anchor was checked where it is defined; following aliases here would let a
		// small file expand exponentially ("billion laughs").
		return nil
	}
	var problems Problems
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return nil // the decoder reports the type mismatch
		}
		fields := yamlFields(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			key, val := n.Content[i].Value, n.Content[i+1]
			p := join(at, key)
			if key == "" {
				p = join(at, `""`) // a key without a name still has a path
			}
			ft, ok := fields[key]
			if !ok {
				problems = append(problems, Problem{Path: p, Message: unknownKeyMessage(key, n.Content[i].Line, t)})
				continue
			}
			problems = append(problems, unknownKeys(val, ft, p)...)
		}
	case reflect.Slice, reflect.Array:
		if n.Kind != yaml.SequenceNode {
			return nil
		}
		for i, item := range n.Content {
			problems = append(problems, unknownKeys(item, t.Elem(), fmt.Sprintf("%s[%d]", at, i))...)
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return nil
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			problems = append(problems, unknownKeys(n.Content[i+1], t.Elem(), join(at, n.Content[i].Value))...)
		}
	}
	return problems
}

// unknownKeyMessage says a key is unknown, with the nearest known key when one is near:
// `unknown key (line 5) (did you mean "gates"?); known keys: …`.
func unknownKeyMessage(key string, line int, t reflect.Type) string {
	known := knownList(t)
	msg := fmt.Sprintf("unknown key (line %d)", line)
	if near, ok := Nearest(key, strings.Split(known, ", ")); ok {
		msg += fmt.Sprintf(" (did you mean %q?)", near)
	}
	return msg + "; known keys: " + known
}

func join(at, key string) string {
	if at == "" {
		return key
	}
	return at + "." + key
}

// yamlFields are the keys a mapping decoded into t may hold, with their types: its fields'
// yaml names and its steering keys (workflow.extends, merge.go).
func yamlFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for _, k := range steeringKeys(t) {
		out[k.name] = k.typ
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		if strings.Contains(opts, "inline") {
			for k, v := range yamlFields(f.Type) {
				out[k] = v
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = f.Type
	}
	return out
}

func knownList(t reflect.Type) string {
	var names []string
	for _, k := range steeringKeys(t) {
		names = append(names, k.name)
	}
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if name != "" && name != "-" {
			names = append(names, name)
		}
	}
	return strings.Join(names, ", ")
}
