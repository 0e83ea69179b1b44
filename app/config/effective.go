package config

import (
	"bytes"
	"reflect"
	"slices"

	"gopkg.in/yaml.v3"

	"github.com/ralph-gate/ralph-gate/policy"
)

// WorkflowYAML writes a workflow as a configuration file's workflow section, whole: the keys
// of policy.Spec as the file spells them, after "extends: none", so that the section pasted
// into a file is exactly this workflow (whatever later defaults become). Keys with an empty
// value (false, "", 0, an empty list or mapping) are left out: with extends: none an absent
// key is that empty value. Lists of names are written on one line, as config.yml does.
func WorkflowYAML(spec policy.Spec) ([]byte, error) {
	body := specNode(reflect.ValueOf(spec))
	body.Content = append([]*yaml.Node{str(extendsKey), str(extendsNone)}, body.Content...)
	doc := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{str("workflow"), body}}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// specNode is the YAML tree of a value of policy.Spec (or of one of its parts).
func specNode(v reflect.Value) *yaml.Node {
	switch v.Kind() {
	case reflect.Struct:
		n := &yaml.Node{Kind: yaml.MappingNode}
		for i := 0; i < v.NumField(); i++ {
			name := yamlName(v.Type().Field(i))
			f := v.Field(i)
			if name == "" || f.IsZero() || ((f.Kind() == reflect.Slice || f.Kind() == reflect.Map) && f.Len() == 0) {
				continue
			}
			n.Content = append(n.Content, str(name), specNode(f))
		}
		return n
	case reflect.Slice:
		n := &yaml.Node{Kind: yaml.SequenceNode}
		if k := v.Type().Elem().Kind(); k != reflect.Struct && k != reflect.Map && k != reflect.Slice {
			n.Style = yaml.FlowStyle
		}
		for i := 0; i < v.Len(); i++ {
			n.Content = append(n.Content, specNode(v.Index(i)))
		}
		return n
	case reflect.Map:
		n := &yaml.Node{Kind: yaml.MappingNode}
		keys := v.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int {
			switch {
			case a.String() < b.String():
				return -1
			case a.String() > b.String():
				return 1
			}
			return 0
		})
		for _, k := range keys {
			n.Content = append(n.Content, specNode(k), specNode(v.MapIndex(k)))
		}
		return n
	}
	var n yaml.Node
	if err := n.Encode(v.Interface()); err != nil {
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null"}
	}
	return &n
}

// str is a string scalar, quoted when YAML needs it.
func str(s string) *yaml.Node {
	return specNode(reflect.ValueOf(s))
}
