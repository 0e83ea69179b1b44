package ghsim

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Connections: first/after/last/before over a list, with nodes, edges, pageInfo and totalCount.
// GitHub requires first or last on every connection and caps them at 100; so does ghsim.

const maxPageSize = 100

type connection struct {
	all        []any
	start, end int
}

type edge struct {
	cursor string
	node   any
}

func (e *edge) gqlField(_ *execCtx, name string, _ map[string]any) (any, bool, error) {
	switch name {
	case "cursor":
		return e.cursor, true, nil
	case "node":
		return e.node, true, nil
	}
	return nil, false, nil
}

func encodeCursor(i int) string {
	return base64.StdEncoding.EncodeToString([]byte("cursor:v2:" + strconv.Itoa(i)))
}

func decodeCursor(c string) (int, error) {
	b, err := base64.StdEncoding.DecodeString(c)
	if err == nil {
		if n, ok := strings.CutPrefix(string(b), "cursor:v2:"); ok {
			if i, err := strconv.Atoi(n); err == nil && i >= 0 {
				return i, nil
			}
		}
	}
	return 0, &typedError{typ: "INVALID_CURSOR_ARGUMENTS", msg: fmt.Sprintf("`%s` does not appear to be a valid cursor.", c)}
}

func (c *connection) gqlField(_ *execCtx, name string, _ map[string]any) (any, bool, error) {
	switch name {
	case "nodes":
		return c.all[c.start:c.end], true, nil
	case "edges":
		out := make([]any, 0, c.end-c.start)
		for i := c.start; i < c.end; i++ {
			out = append(out, &edge{cursor: encodeCursor(i), node: c.all[i]})
		}
		return out, true, nil
	case "totalCount":
		return len(c.all), true, nil
	case "pageInfo":
		var startC, endC any
		if c.end > c.start {
			startC, endC = encodeCursor(c.start), encodeCursor(c.end-1)
		}
		return valueObject{"hasNextPage": c.end < len(c.all), "hasPreviousPage": c.start > 0,
			"startCursor": startC, "endCursor": endC}, true, nil
	}
	return nil, false, nil
}

// paginate slices all by the connection arguments of the field called name.
func paginate(name string, all []any, args map[string]any) (*connection, error) {
	first, hasFirst := intArg(args, "first")
	last, hasLast := intArg(args, "last")
	if !hasFirst && !hasLast {
		return nil, &typedError{typ: "MISSING_PAGINATION_BOUNDARIES",
			msg: fmt.Sprintf("You must provide a `first` or `last` value to properly paginate the `%s` connection.", name)}
	}
	for _, p := range []struct {
		arg string
		n   int
		has bool
	}{{"first", first, hasFirst}, {"last", last, hasLast}} {
		if !p.has {
			continue
		}
		if p.n < 0 {
			return nil, &typedError{typ: "INVALID_PAGINATION", msg: fmt.Sprintf("`%s` on the `%s` connection cannot be less than zero.", p.arg, name)}
		}
		if p.n > maxPageSize {
			return nil, &typedError{typ: "EXCESSIVE_PAGINATION",
				msg: fmt.Sprintf("Requesting %d records on the `%s` connection exceeds the `%s` limit of %d records.", p.n, name, p.arg, maxPageSize)}
		}
	}
	c := &connection{all: all, start: 0, end: len(all)}
	if after, ok := args["after"].(string); ok && after != "" {
		i, err := decodeCursor(after)
		if err != nil {
			return nil, err
		}
		c.start = min(i+1, len(all))
	}
	if before, ok := args["before"].(string); ok && before != "" {
		i, err := decodeCursor(before)
		if err != nil {
			return nil, err
		}
		c.end = max(min(i, c.end), c.start)
	}
	if hasFirst {
		c.end = min(c.end, c.start+first)
	}
	if hasLast {
		c.start = max(c.start, c.end-last)
	}
	return c, nil
}

func anys[T any](s []T) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

func intArg(args map[string]any, name string) (int, bool) {
	v, ok := args[name]
	if !ok || v == nil {
		return 0, false
	}
	return toInt(v)
}

func toInt(v any) (int, bool) {
	switch n := v.(type) {
	case int:
		return n, true
	case int32:
		return int(n), true
	case int64:
		return int(n), true
	case float64:
		return int(n), true
	case json.Number:
		i, err := n.Int64()
		return int(i), err == nil
	case string:
		i, err := strconv.Atoi(n)
		return i, err == nil
	}
	return 0, false
}

func strArg(args map[string]any, name string) string {
	s, _ := args[name].(string)
	return s
}

// input returns the "input" argument of a mutation.
func input(args map[string]any) map[string]any {
	m, _ := args["input"].(map[string]any)
	return m
}
