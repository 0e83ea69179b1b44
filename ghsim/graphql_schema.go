package ghsim

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sync"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/parser"
	"github.com/vektah/gqlparser/v2/validator"
)

// GitHub's published GraphQL schema (see testdata/PROVENANCE.md). Every document is validated
// against it before anything runs.
//
//go:embed testdata/schema.graphql
var schemaSDL string

// loadSchema parses the schema once per process: it is immutable and takes a while to load.
var loadSchema = sync.OnceValues(func() (*ast.Schema, error) {
	s, err := gqlparser.LoadSchema(&ast.Source{Name: "schema.graphql", Input: schemaSDL, BuiltIn: false})
	if err != nil {
		return nil, fmt.Errorf("load GitHub schema: %w", err)
	}
	return s, nil
})

// gqlError is one entry of a GraphQL "errors" list, in GitHub's shape.
type gqlError struct {
	Type       string         `json:"type,omitempty"`
	Path       []any          `json:"path,omitempty"`
	Locations  []gqlLocation  `json:"locations,omitempty"`
	Message    string         `json:"message"`
	Extensions map[string]any `json:"extensions,omitempty"`
}

type gqlLocation struct {
	Line   int `json:"line"`
	Column int `json:"column"`
}

// gqlRequest is a parsed, validated GraphQL request ready to execute, or the errors that stop it.
type gqlRequest struct {
	doc    *ast.QueryDocument
	op     *ast.OperationDefinition
	vars   map[string]any
	fields []string // top-level field names, one per occurrence
	errs   []gqlError
}

func (g *gqlRequest) operations() []string {
	ops := []string{"graphql:request"}
	for _, f := range g.fields {
		ops = append(ops, "graphql:"+f)
	}
	return ops
}

// GitHub's validation error codes for gqlparser's rules.
var ruleCodes = map[string]string{
	"FieldsOnCorrectType":          "undefinedField",
	"KnownArgumentNames":           "argumentNotAccepted",
	"ProvidedRequiredArguments":    "missingRequiredArguments",
	"KnownTypeNames":               "undefinedType",
	"NoUndefinedVariables":         "variableNotDefined",
	"NoUnusedVariables":            "variableNotUsed",
	"NoUnusedFragments":            "useAndDefineFragment",
	"KnownFragmentNames":           "undefinedFragment",
	"ScalarLeafs":                  "selectionMismatch",
	"VariablesInAllowedPosition":   "variableMismatch",
	"ValuesOfCorrectType":          "argumentLiteralsIncompatible",
	"UniqueArgumentNames":          "argumentUniqueness",
	"UniqueOperationNames":         "operationNotUnique",
	"PossibleFragmentSpreads":      "cannotSpreadFragment",
	"FragmentsOnCompositeTypes":    "fragmentOnNonCompositeType",
	"KnownDirectives":              "undefinedDirective",
	"LoneAnonymousOperation":       "anonymousOperationNotAlone",
	"OverlappingFieldsCanBeMerged": "fieldConflict",
}

var undefinedFieldRE = regexp.MustCompile(`^Cannot query field "([^"]+)" on type "([^"]+)"`)

func fromGQLParser(e *gqlerror.Error) gqlError {
	out := gqlError{Message: e.Message}
	for _, l := range e.Locations {
		out.Locations = append(out.Locations, gqlLocation{Line: l.Line, Column: l.Column})
	}
	if e.Rule == "" {
		return out
	}
	code, ok := ruleCodes[e.Rule]
	if !ok {
		code = e.Rule
	}
	out.Extensions = map[string]any{"code": code}
	if m := undefinedFieldRE.FindStringSubmatch(e.Message); m != nil {
		out.Message = fmt.Sprintf("Field '%s' doesn't exist on type '%s'", m[1], m[2])
		out.Extensions["typeName"] = m[2]
		out.Extensions["fieldName"] = m[1]
	}
	return out
}

func errorsFrom(err error) []gqlError {
	var list gqlerror.List
	if errors.As(err, &list) {
		out := make([]gqlError, 0, len(list))
		for _, e := range list {
			out = append(out, fromGQLParser(e))
		}
		return out
	}
	var one *gqlerror.Error
	if errors.As(err, &one) {
		return []gqlError{fromGQLParser(one)}
	}
	return []gqlError{{Message: err.Error()}}
}

// prepareGraphQL decodes the HTTP body, parses and validates the document against the schema,
// picks the operation and coerces its variables.
func prepareGraphQL(schema *ast.Schema, body []byte) *gqlRequest {
	var in struct {
		Query         string         `json:"query"`
		Variables     map[string]any `json:"variables"`
		OperationName string         `json:"operationName"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&in); err != nil {
		return &gqlRequest{errs: []gqlError{{Message: "Problems parsing JSON"}}}
	}
	if in.Query == "" {
		return &gqlRequest{errs: []gqlError{{Message: "A query attribute must be specified and must be a string."}}}
	}
	doc, err := parser.ParseQuery(&ast.Source{Name: "query", Input: in.Query})
	if err != nil {
		return &gqlRequest{errs: errorsFrom(err)}
	}
	if list := validator.Validate(schema, doc); len(list) > 0 {
		return &gqlRequest{errs: errorsFrom(list)}
	}
	g := &gqlRequest{doc: doc}
	if in.OperationName != "" {
		g.op = doc.Operations.ForName(in.OperationName)
		if g.op == nil {
			g.errs = []gqlError{{Message: fmt.Sprintf("No operation named %q", in.OperationName)}}
			return g
		}
	} else if len(doc.Operations) == 1 {
		g.op = doc.Operations[0]
	} else {
		g.errs = []gqlError{{Message: "An operation name is required"}}
		return g
	}
	vars, err := validator.VariableValues(schema, g.op, in.Variables)
	if err != nil {
		g.errs = errorsFrom(err)
		return g
	}
	g.vars = vars
	g.fields = topLevelFields(doc, g.op.SelectionSet, nil)
	return g
}

func topLevelFields(doc *ast.QueryDocument, set ast.SelectionSet, out []string) []string {
	for _, sel := range set {
		switch s := sel.(type) {
		case *ast.Field:
			if s.Name != "__typename" {
				out = append(out, s.Name)
			}
		case *ast.InlineFragment:
			out = topLevelFields(doc, s.SelectionSet, out)
		case *ast.FragmentSpread:
			if fd := doc.Fragments.ForName(s.Name); fd != nil {
				out = topLevelFields(doc, fd.SelectionSet, out)
			}
		}
	}
	return out
}

// ValidateDocument checks a GraphQL document and its variables against GitHub's schema exactly as
// the simulator does before running anything, returning GitHub's error messages. Adapters use it
// to test every document they send.
func ValidateDocument(query string, variables map[string]any) error {
	schema, err := loadSchema()
	if err != nil {
		return err
	}
	body, err := json.Marshal(map[string]any{"query": query, "variables": variables})
	if err != nil {
		return err
	}
	g := prepareGraphQL(schema, body)
	if len(g.errs) == 0 {
		return nil
	}
	var msgs []error
	for _, e := range g.errs {
		msgs = append(msgs, errors.New(e.Message))
	}
	return errors.Join(msgs...)
}
