package toolspec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ralph-gate/ralph-gate/policy"
)

// CheckArguments checks a call's raw arguments against the tool's input type — the same rules
// as its JSON schema (no unknown argument, each of its type, the required ones present), and
// integers the input type can hold — so a bad call is answered in the façade's three-part form
// naming the tool's own arguments, instead of the schema validator's text. values lists the
// valid values of an argument where there is a known set (commands, states), for the Recovery;
// it may be nil. The first problem is reported, in the order: unknown argument, wrong type,
// missing argument. nil when the arguments are well-formed.
func (s Spec) CheckArguments(raw json.RawMessage, values func(arg string) []string) error {
	if values == nil {
		values = func(string) []string { return nil }
	}
	args := s.Arguments()
	got := map[string]json.RawMessage{}
	if trimmed := bytes.TrimSpace(raw); len(trimmed) > 0 && !bytes.Equal(trimmed, []byte("null")) {
		if err := json.Unmarshal(trimmed, &got); err != nil {
			return &policy.Refusal{Tried: s.Name + ": the arguments are not a JSON object", Why: "got " + jsonType(trimmed),
				Recovery: "retry with the arguments as one JSON object, " + s.example(), Options: []string{}}
		}
	}
	names := make([]string, 0, len(got))
	for k := range got {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		if !slices.ContainsFunc(args, func(a Argument) bool { return a.Name == k }) {
			return s.unknownArgument(k, got)
		}
	}
	for _, a := range args {
		v, ok := got[a.Name]
		if !ok {
			continue
		}
		if r := s.checkType(a, v, values(a.Name)); r != nil {
			return r
		}
		if r := s.checkLength(a, v); r != nil {
			return r
		}
	}
	for _, a := range args {
		if _, ok := got[a.Name]; !ok && a.Required {
			return policy.NewRetryRefusal(fmt.Sprintf("%s: argument `%s` is missing", s.Name, a.Name),
				fmt.Sprintf("`%s` is required: %s", a.Name, strings.TrimSuffix(a.Description, ".")),
				policy.Retry{With: []policy.Suggestion{suggest(a, values(a.Name))}})
		}
	}
	return nil
}

// unknownArgument refuses an argument the tool does not have, suggesting the argument it
// probably meant — an alias's argument (issue: number), else the argument it spells (Number,
// toState) or is part of (state: to_state) — with the same value, in its place:
// "retry with number 3 instead of issue".
func (s Spec) unknownArgument(k string, got map[string]json.RawMessage) error {
	args := s.Arguments()
	var list []string
	for _, a := range args {
		n := a.Name
		if a.Required {
			n += " (required)"
		}
		list = append(list, n)
	}
	why := s.Name + " takes " + strings.Join(list, ", ")
	if len(list) == 0 {
		why = s.Name + " takes no arguments"
	}
	rt := policy.Retry{Drop: []policy.Arg{policy.Arg(k)}, Instead: true}
	if a, ok := s.meant(k); ok {
		if _, given := got[a.Name]; !given {
			sg := suggest(a, nil)
			if v, ok := valueAs(a, got[k]); ok {
				sg.Values, sg.Hint = []string{v}, ""
			}
			rt.With = []policy.Suggestion{sg}
		}
	}
	return policy.NewRetryRefusal(fmt.Sprintf("%s: unknown argument `%s`", s.Name, k), why, rt)
}

// meant is the argument a misspelt name most likely means: the argument of an alias of the
// tool's (issue: number; Spec.Aliases), or one the same letters in another case or
// separator style name (Issue_Number: number), else an argument of the same letters in
// another case or separator style (Number: number), else the only argument whose name
// contains it (state: to_state).
func (s Spec) meant(k string) (Argument, bool) {
	norm := normName
	nk := norm(k)
	byName := func(name string) (Argument, bool) {
		for _, a := range s.Arguments() {
			if a.Name == name {
				return a, true
			}
		}
		return Argument{}, false
	}
	if name, ok := s.Aliases[k]; ok {
		return byName(name)
	}
	for alias, name := range s.Aliases {
		if norm(alias) == nk {
			return byName(name)
		}
	}
	var contains []Argument
	for _, a := range s.Arguments() {
		na := norm(a.Name)
		if na == nk {
			return a, true
		}
		if len(nk) >= 4 && strings.Contains(na, nk) {
			contains = append(contains, a)
		}
	}
	if len(contains) == 1 {
		return contains[0], true
	}
	return Argument{}, false
}

// checkType refuses a value that is not of the argument's type (or, for an integer, does not
// fit one), suggesting the value converted when it can be.
func (s Spec) checkType(a Argument, v json.RawMessage, vals []string) error {
	if isType(a.Type, v) {
		return nil
	}
	if bytes.Equal(bytes.TrimSpace(v), []byte("null")) && !a.Required {
		// An optional argument left empty: leave it out.
		return policy.NewRetryRefusal(fmt.Sprintf("%s: argument `%s` must be %s, got null", s.Name, a.Name, article(a.Type)),
			fmt.Sprintf("`%s` is optional: %s", a.Name, strings.TrimSuffix(a.Description, ".")),
			policy.Retry{Drop: []policy.Arg{policy.Arg(a.Name)}})
	}
	sg := suggest(a, vals)
	if a.Type == "integer" && outOfRange(v) {
		return policy.NewRetryRefusal(fmt.Sprintf("%s: argument `%s` is out of range, got %s", s.Name, a.Name, describe(v)),
			fmt.Sprintf("integers are exact only up to %d; `%s`: %s", maxExactInteger, a.Name, strings.TrimSuffix(a.Description, ".")),
			policy.Retry{With: []policy.Suggestion{sg}})
	}
	if conv, ok := valueAs(a, v); ok {
		sg.Values, sg.Hint = []string{conv}, ""
	}
	return policy.NewRetryRefusal(fmt.Sprintf("%s: argument `%s` must be %s, got %s", s.Name, a.Name, article(a.Type), describe(v)),
		fmt.Sprintf("`%s`: %s", a.Name, strings.TrimSuffix(a.Description, ".")),
		policy.Retry{With: []policy.Suggestion{sg}})
}

// checkLength refuses a string argument longer than its bound, quoting only its beginning (a
// megabyte-long repo is not sent back).
func (s Spec) checkLength(a Argument, v json.RawMessage) error {
	if a.MaxRunes <= 0 || len(v) <= a.MaxRunes {
		return nil // (a rune is at least a byte)
	}
	var str string
	if json.Unmarshal(v, &str) != nil || utf8.RuneCountInString(str) <= a.MaxRunes {
		return nil
	}
	return policy.NewRetryRefusal(fmt.Sprintf("%s: argument `%s` is too long: %d characters, at most %d", s.Name, a.Name, utf8.RuneCountInString(str), a.MaxRunes),
		fmt.Sprintf("got %s; `%s`: %s", describe(v), a.Name, strings.TrimSuffix(a.Description, ".")),
		policy.Retry{With: []policy.Suggestion{suggest(a, nil)}})
}

// suggest is the Recovery's suggestion for a: its valid values when there is a known set, else
// a description of the value.
func suggest(a Argument, vals []string) policy.Suggestion {
	sg := policy.Suggestion{Arg: policy.Arg(a.Name), Kind: policy.Text}
	if a.Type != "string" {
		sg.Kind = policy.Literal
	}
	switch {
	case len(vals) > 0:
		sg.Values = slices.Clone(vals)
	case a.Type == "boolean":
		sg.Values = []string{"true", "false"}
	default:
		hint, _, _ := strings.Cut(strings.TrimSuffix(a.Description, "."), ";")
		if hint == "" {
			hint = "a " + a.Type
		} else {
			hint = strings.ToLower(hint[:1]) + hint[1:]
		}
		sg.Hint = hint
	}
	return sg
}

// valueAs is v written as a value of a's type ("5" and "#5" as the integer 5, 5 as the
// string "5"), when it can be.
func valueAs(a Argument, v json.RawMessage) (string, bool) {
	var x any
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	if dec.Decode(&x) != nil {
		return "", false
	}
	switch a.Type {
	case "string":
		switch t := x.(type) {
		case string:
			return t, true
		case json.Number:
			return t.String(), true
		case bool:
			return strconv.FormatBool(t), true
		}
	case "integer":
		var text string
		switch t := x.(type) {
		case string:
			text = strings.TrimPrefix(strings.TrimSpace(t), "#") // "#3", as issues are written
		case json.Number:
			text = t.String()
		default:
			return "", false
		}
		if n, err := strconv.ParseInt(text, 10, 0); err == nil {
			return strconv.FormatInt(n, 10), true
		}
		if f, err := strconv.ParseFloat(text, 64); err == nil && f == float64(int64(f)) && f > -1<<53 && f < 1<<53 {
			return strconv.FormatInt(int64(f), 10), true
		}
	case "boolean":
		switch t := x.(type) {
		case bool:
			return strconv.FormatBool(t), true
		case string:
			if b, err := strconv.ParseBool(strings.TrimSpace(t)); err == nil {
				return strconv.FormatBool(b), true
			}
		}
	}
	return "", false
}

// isType: v is a JSON value of type t as the input type decodes it (an integer is written
// without fraction or exponent).
func isType(t string, v json.RawMessage) bool {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return false
	}
	switch t {
	case "string":
		return v[0] == '"'
	case "boolean":
		return string(v) == "true" || string(v) == "false"
	case "integer":
		n, err := strconv.ParseInt(string(v), 10, 64)
		return err == nil && n >= -maxExactInteger && n <= maxExactInteger
	}
	return false
}

// maxExactInteger is the largest integer every JSON reader holds exactly (2^53 − 1): a larger
// one would be rounded on its way (9007199254740993 read as …992), so it is refused.
const maxExactInteger = 1<<53 - 1

// outOfRange reports whether v is an integer beyond ±maxExactInteger.
func outOfRange(v json.RawMessage) bool {
	n, ok := new(big.Int).SetString(string(bytes.TrimSpace(v)), 10)
	return ok && n.CmpAbs(big.NewInt(maxExactInteger)) > 0
}

func jsonType(v json.RawMessage) string {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return "nothing"
	}
	switch v[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	if _, err := strconv.ParseInt(string(v), 10, 0); err == nil {
		return "an integer"
	}
	return "a number"
}

// describe names v's type and shows it, shortened.
func describe(v json.RawMessage) string {
	t := jsonType(v)
	if t == "null" || t == "an object" || t == "an array" {
		return t
	}
	shown := string(bytes.TrimSpace(v))
	if r := []rune(shown); len(r) > 40 {
		shown = string(r[:40]) + "…"
	}
	return t + " (" + shown + ")"
}

func article(t string) string {
	if t == "integer" {
		return "an integer"
	}
	return "a " + t
}

// example is a call with the tool's required arguments, for a Recovery.
func (s Spec) example() string {
	var parts []string
	for _, a := range s.Arguments() {
		if a.Required {
			parts = append(parts, fmt.Sprintf("%q: …", a.Name))
		}
	}
	return "e.g. {" + strings.Join(parts, ", ") + "}"
}
