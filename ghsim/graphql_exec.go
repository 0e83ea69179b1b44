package ghsim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"github.com/vektah/gqlparser/v2/ast"
)

// A generic GraphQL executor over gqlparser's validated AST. Resolvers are registered per
// "Type.field"; objects that answer their own fields (connections, small value objects) implement
// fieldSource; abstract types are resolved through gqlTyped. Any valid field without a resolver
// fails loudly, naming the field, so the simulator never silently answers what it does not model.

type resolveFunc func(ec *execCtx, obj any, args map[string]any) (any, error)

type resolverSet map[string]resolveFunc

// fieldsOf registers resolvers for the fields of one GraphQL type whose Go value is T.
func fieldsOf[T any](rs resolverSet, typeName string, fields map[string]func(ec *execCtx, o T, args map[string]any) (any, error)) {
	for name, f := range fields {
		rs[typeName+"."+name] = func(ec *execCtx, obj any, args map[string]any) (any, error) {
			o, ok := obj.(T)
			if !ok {
				return nil, fmt.Errorf("ghsim: %s.%s resolved on %T", typeName, name, obj)
			}
			return f(ec, o, args)
		}
	}
}

// gqlTyped values know their concrete GraphQL type (needed for interfaces and unions).
type gqlTyped interface{ gqlType() string }

// fieldSource values resolve their own fields; ok=false means "no such field here".
type fieldSource interface {
	gqlField(ec *execCtx, name string, args map[string]any) (v any, ok bool, err error)
}

// valueObject is a small object whose fields are plain values or func(args) (any, error).
type valueObject map[string]any

func (o valueObject) gqlField(_ *execCtx, name string, args map[string]any) (any, bool, error) {
	v, ok := o[name]
	if !ok {
		return nil, false, nil
	}
	if f, isFunc := v.(func(map[string]any) (any, error)); isFunc {
		r, err := f(args)
		return r, true, err
	}
	return v, true, nil
}

// typedError is a GraphQL error with GitHub's "type" (NOT_FOUND, FORBIDDEN, ...).
type typedError struct {
	typ string
	msg string
}

func (e *typedError) Error() string { return e.msg }

func notImplemented(typeName, field string) error {
	return &typedError{typ: "GHSIM_NOT_IMPLEMENTED", msg: fmt.Sprintf("ghsim does not implement field %s.%s", typeName, field)}
}

type execCtx struct {
	schema    *ast.Schema
	doc       *ast.QueryDocument
	vars      map[string]any
	resolvers resolverSet
	w         *world
	who       principal
	rate      rateSnapshot
	nodeCount int
	errs      []gqlError
}

// orderedMap keeps response keys in selection order, as GraphQL requires.
type orderedMap struct {
	keys []string
	vals []any
}

func (m *orderedMap) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range m.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		vb, err := json.Marshal(m.vals[i])
		if err != nil {
			return nil, err
		}
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// execute runs the prepared operation and returns GitHub's response body ({data, errors}).
func (ec *execCtx) execute(op *ast.OperationDefinition) map[string]any {
	root := ec.schema.Query
	if op.Operation == ast.Mutation {
		root = ec.schema.Mutation
	}
	ec.nodeCount = countNodes(ec.doc, op.SelectionSet, 1, ec.vars)
	data, ok := ec.execSelections(root, struct{}{}, []ast.SelectionSet{op.SelectionSet}, nil)
	out := map[string]any{}
	if ok {
		out["data"] = data
	} else {
		out["data"] = nil
	}
	if len(ec.errs) > 0 {
		out["errors"] = ec.errs
	}
	return out
}

type fieldGroup struct {
	key    string
	fields []*ast.Field
}

func (ec *execCtx) collect(objType *ast.Definition, set ast.SelectionSet, groups *[]*fieldGroup, index map[string]*fieldGroup, visited map[string]bool) {
	for _, sel := range set {
		switch s := sel.(type) {
		case *ast.Field:
			if !ec.included(s.Directives) {
				continue
			}
			key := s.Alias
			if key == "" {
				key = s.Name
			}
			if g := index[key]; g != nil {
				g.fields = append(g.fields, s)
				continue
			}
			g := &fieldGroup{key: key, fields: []*ast.Field{s}}
			index[key] = g
			*groups = append(*groups, g)
		case *ast.InlineFragment:
			if ec.included(s.Directives) && ec.applies(objType, s.TypeCondition) {
				ec.collect(objType, s.SelectionSet, groups, index, visited)
			}
		case *ast.FragmentSpread:
			if visited[s.Name] || !ec.included(s.Directives) {
				continue
			}
			visited[s.Name] = true
			fd := ec.doc.Fragments.ForName(s.Name)
			if fd != nil && ec.applies(objType, fd.TypeCondition) {
				ec.collect(objType, fd.SelectionSet, groups, index, visited)
			}
		}
	}
}

func (ec *execCtx) included(dirs ast.DirectiveList) bool {
	for _, d := range dirs {
		args := d.ArgumentMap(ec.vars)
		cond, _ := args["if"].(bool)
		switch d.Name {
		case "skip":
			if cond {
				return false
			}
		case "include":
			if !cond {
				return false
			}
		}
	}
	return true
}

func (ec *execCtx) applies(objType *ast.Definition, cond string) bool {
	if cond == "" || cond == objType.Name {
		return true
	}
	def := ec.schema.Types[cond]
	if def == nil || (def.Kind != ast.Interface && def.Kind != ast.Union) {
		return false
	}
	for _, p := range ec.schema.GetPossibleTypes(def) {
		if p.Name == objType.Name {
			return true
		}
	}
	return false
}

// execSelections resolves a selection set on obj; ok=false means a non-null field failed and the
// object itself becomes null.
func (ec *execCtx) execSelections(objType *ast.Definition, obj any, sets []ast.SelectionSet, path []any) (*orderedMap, bool) {
	var groups []*fieldGroup
	index := map[string]*fieldGroup{}
	visited := map[string]bool{}
	for _, set := range sets {
		ec.collect(objType, set, &groups, index, visited)
	}
	out := &orderedMap{}
	for _, g := range groups {
		p := append(append([]any{}, path...), g.key)
		v, ok := ec.execField(objType, obj, g.fields, p)
		if !ok {
			return nil, false
		}
		out.keys = append(out.keys, g.key)
		out.vals = append(out.vals, v)
	}
	return out, true
}

func (ec *execCtx) execField(objType *ast.Definition, obj any, fields []*ast.Field, path []any) (any, bool) {
	f := fields[0]
	if f.Name == "__typename" {
		return objType.Name, true
	}
	def := objType.Fields.ForName(f.Name)
	if def == nil {
		ec.addErr(fmt.Errorf("field %s.%s is not in the schema", objType.Name, f.Name), f, path)
		return nil, true
	}
	args := f.ArgumentMap(ec.vars)
	val, err := ec.resolve(objType.Name, f.Name, obj, args)
	if err != nil {
		ec.addErr(err, f, path)
		return nil, !def.Type.NonNull
	}
	return ec.complete(def.Type, fields, val, path)
}

func (ec *execCtx) resolve(typeName, field string, obj any, args map[string]any) (any, error) {
	if r := ec.resolvers[typeName+"."+field]; r != nil {
		return r(ec, obj, args)
	}
	if fs, ok := obj.(fieldSource); ok {
		if v, ok, err := fs.gqlField(ec, field, args); ok {
			return v, err
		}
	}
	return nil, notImplemented(typeName, field)
}

func isNil(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Interface, reflect.Func:
		return rv.IsNil() && rv.Kind() != reflect.Slice
	}
	return false
}

func (ec *execCtx) complete(t *ast.Type, fields []*ast.Field, val any, path []any) (any, bool) {
	if isNil(val) {
		if t.NonNull {
			ec.addErr(fmt.Errorf("Cannot return null for non-nullable field"), fields[0], path)
			return nil, false
		}
		return nil, true
	}
	if t.Elem != nil {
		rv := reflect.ValueOf(val)
		if rv.Kind() != reflect.Slice {
			ec.addErr(fmt.Errorf("ghsim: list field resolved to %T", val), fields[0], path)
			return nil, !t.NonNull
		}
		out := make([]any, rv.Len())
		for i := range rv.Len() {
			v, ok := ec.complete(t.Elem, fields, rv.Index(i).Interface(), append(append([]any{}, path...), i))
			if !ok {
				return nil, !t.NonNull
			}
			out[i] = v
		}
		return out, true
	}
	def := ec.schema.Types[t.NamedType]
	switch def.Kind {
	case ast.Scalar, ast.Enum:
		return val, true
	case ast.Interface, ast.Union:
		typed, ok := val.(gqlTyped)
		var concrete *ast.Definition
		if ok {
			concrete = ec.schema.Types[typed.gqlType()]
		}
		if concrete == nil || !ec.applies(concrete, def.Name) {
			ec.addErr(fmt.Errorf("ghsim: cannot resolve the concrete type of %s for %T", def.Name, val), fields[0], path)
			return nil, !t.NonNull
		}
		def = concrete
	}
	if ec.hidden(val) {
		ec.addErr(errForbidden(), fields[0], path)
		return nil, !t.NonNull
	}
	var sets []ast.SelectionSet
	for _, f := range fields {
		sets = append(sets, f.SelectionSet)
	}
	m, ok := ec.execSelections(def, val, sets, path)
	if !ok {
		return nil, !t.NonNull
	}
	return m, true
}

// errForbidden is GitHub's answer for what the installation may not see: a node in a repository
// the app is not installed on.
func errForbidden() error {
	return &typedError{typ: "FORBIDDEN", msg: "Resource not accessible by integration"}
}

// hidden reports whether the requester may not see v: with its installation token the app sees
// what belongs to its own organization only, and of that organization's repositories only those
// it is installed on (SeedApp.Repositories, SeedOrg.Repositories): issues, pull requests,
// comments, repositories, and — of another organization — projects and their items, fields and
// values. GitHub then answers the field null, with a FORBIDDEN error at its path, and the rest
// of the data. Users see everything.
func (ec *execCtx) hidden(v any) bool {
	if ec.who.kind != installationToken {
		return false
	}
	var r *repo
	var o *organization
	switch x := v.(type) {
	case *issue:
		r = x.repo
	case *pullRequest:
		r = x.repo
	case *comment:
		if x.issue != nil {
			r = x.issue.repo
		}
	case *repo:
		r = x
	case *project:
		o = x.owner
	case *item:
		o = x.project.owner
	case *field:
		o = x.project.owner
	case *fieldValue:
		o = x.item.project.owner
	case *draft:
		if len(x.items) > 0 {
			o = x.items[0].project.owner
		}
	}
	if r != nil {
		return !ec.who.inst.sees(r)
	}
	return o != nil && o != ec.who.inst.org
}

// forbidden refuses a mutation on a node the installation may not see.
func (ec *execCtx) forbidden(ids ...string) error {
	for _, id := range ids {
		if n, ok := ec.w.nodes[id]; ok && ec.hidden(n) {
			return errForbidden()
		}
	}
	return nil
}

func (ec *execCtx) addErr(err error, f *ast.Field, path []any) {
	e := gqlError{Message: err.Error(), Path: path}
	if f.Position != nil {
		e.Locations = []gqlLocation{{Line: f.Position.Line, Column: f.Position.Column}}
	}
	var te *typedError
	var nf notFoundError
	var inv invalidError
	switch {
	case errors.As(err, &te):
		e.Type = te.typ
		if te.typ == "FORBIDDEN" {
			e.Extensions = map[string]any{"saml_failure": false}
		}
	case errors.As(err, &nf):
		e.Type = "NOT_FOUND"
	case errors.As(err, &inv):
		e.Type = "UNPROCESSABLE"
	}
	ec.errs = append(ec.errs, e)
}

// countNodes approximates GitHub's nodeCount: the product of first/last down each path, summed.
func countNodes(doc *ast.QueryDocument, set ast.SelectionSet, mult int, vars map[string]any) int {
	total := 0
	for _, sel := range set {
		switch s := sel.(type) {
		case *ast.Field:
			m := mult
			if s.Definition != nil {
				args := s.ArgumentMap(vars)
				if n, ok := intArg(args, "first"); ok {
					m = mult * n
					total += m
				} else if n, ok := intArg(args, "last"); ok {
					m = mult * n
					total += m
				}
			}
			total += countNodes(doc, s.SelectionSet, m, vars)
		case *ast.InlineFragment:
			total += countNodes(doc, s.SelectionSet, mult, vars)
		case *ast.FragmentSpread:
			if fd := doc.Fragments.ForName(s.Name); fd != nil {
				total += countNodes(doc, fd.SelectionSet, mult, vars)
			}
		}
	}
	return total
}
