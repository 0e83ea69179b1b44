package ghboard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/payload"
)

// batchSize is how many field writes go into one document (aliased mutations).
const batchSize = 50

// batchSetStates builds a document with n aliased updateProjectV2ItemFieldValue mutations.
func batchSetStates(n int) string {
	var b strings.Builder
	b.WriteString("mutation RalphGateSetStates(")
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "$p%d: ID!, $i%d: ID!, $f%d: ID!, $o%d: String!", i, i, i, i)
	}
	b.WriteString(") {\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "  m%d: updateProjectV2ItemFieldValue(input: {projectId: $p%d, itemId: $i%d, fieldId: $f%d, value: {singleSelectOptionId: $o%d}}) { projectV2Item { id } }\n", i, i, i, i, i)
	}
	b.WriteString("}")
	return b.String()
}

func batchVars(n int) map[string]any {
	vars := map[string]any{}
	for i := 0; i < n; i++ {
		vars[fmt.Sprintf("p%d", i)] = "PVT_x"
		vars[fmt.Sprintf("i%d", i)] = fmt.Sprintf("PVTI_%d", i)
		vars[fmt.Sprintf("f%d", i)] = "PVTSSF_x"
		vars[fmt.Sprintf("o%d", i)] = "abc"
	}
	return vars
}

// batchRounds bounds how many times one batch is sent: the first time, then again with only
// the aliases that failed for a reason a retry may fix.
const batchRounds = 3

// FailedWrite is a state write that did not happen, with GitHub's reason: its error type
// (NOT_FOUND, FORBIDDEN, UNPROCESSABLE, …; "" when it gave none) and message.
type FailedWrite struct {
	Write   enforce.StateWrite
	Type    string
	Message string
}

// WritesError is a SetStates whose writes did not all happen. Failed names every write that
// did not (each with GitHub's reason, or Err when its request failed as a whole); every other
// write of the call did happen, and was not sent twice. Unwrap gives Err (a rate limit or an
// outage, for the caller's retry policy) and ErrNotFound when every failed write's item no
// longer exists.
type WritesError struct {
	Failed  []FailedWrite
	Written int
	Err     error
}

func (e *WritesError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d state writes did not happen:", len(e.Failed), len(e.Failed)+e.Written)
	for i, f := range e.Failed {
		if i > 0 {
			b.WriteString(";")
		}
		fmt.Fprintf(&b, " %s (#%d) to %q", f.Write.Item.ID, f.Write.Item.Number, f.Write.State)
		if f.Type != "" || f.Message != "" {
			fmt.Fprintf(&b, " (%s: %s)", f.Type, f.Message)
		}
	}
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	return b.String()
}

func (e *WritesError) Unwrap() []error {
	var out []error
	if e.Err != nil {
		out = append(out, e.Err)
	}
	gone := len(e.Failed) > 0
	for _, f := range e.Failed {
		gone = gone && f.Type == "NOT_FOUND"
	}
	if gone {
		out = append(out, ErrNotFound)
	}
	return out
}

// SetStates writes several states, batchSize per request (aliased mutations); clearing is not
// batched (rare). GitHub runs each alias on its own: when some fail, the others' writes stand
// and their data comes back with an error per failed alias. SetStates then sends again only the
// failed writes a retry may fix (no error type, or an internal one), at most batchRounds times
// in all, and never the ones that succeeded. It returns nil when every write happened, else a
// *WritesError naming exactly the writes that did not (a request that failed as a whole, e.g.
// rate limited, counts every write it carried and every later one as not done, and stops).
func (b *Board) SetStates(ctx context.Context, writes []enforce.StateWrite) error {
	res := &WritesError{}
	var batch []enforce.StateWrite
	flush := func() {
		switch {
		case len(batch) == 0:
		case res.Err != nil:
			for _, w := range batch {
				res.Failed = append(res.Failed, FailedWrite{Write: w})
			}
		default:
			b.writeBatch(ctx, batch, res)
		}
		batch = batch[:0]
	}
	for i, w := range writes {
		if res.Err != nil {
			res.Failed = append(res.Failed, FailedWrite{Write: w})
			continue
		}
		if w.State == "" {
			flush()
			if res.Err != nil {
				res.Failed = append(res.Failed, FailedWrite{Write: w})
				continue
			}
			if err := b.SetState(ctx, w.Item, ""); err != nil {
				res.Failed, res.Err = append(res.Failed, FailedWrite{Write: w}), err
				continue
			}
			res.Written++
			continue
		}
		batch = append(batch, w)
		if len(batch) == batchSize || i == len(writes)-1 {
			flush()
		}
	}
	flush()
	if len(res.Failed) == 0 {
		return nil
	}
	return res
}

// writeBatch writes one batch into res: what was written, what failed and why, and Err when a
// request failed as a whole.
func (b *Board) writeBatch(ctx context.Context, batch []enforce.StateWrite, res *WritesError) {
	pending := batch
	for round := 1; len(pending) > 0; round++ {
		vars := map[string]any{}
		for i, w := range pending {
			f, err := b.fieldFor(ctx, w.Item)
			if err == nil {
				option, ok := f.Options[w.State]
				if !ok {
					b.fields.Forget(w.Item.ProjectID)
					err = fmt.Errorf("project %s/%d has no option %q in %q", w.Item.Owner, w.Item.ProjectNumber, w.State, b.fieldName)
				}
				vars[fmt.Sprintf("p%d", i)] = f.ProjectID
				vars[fmt.Sprintf("i%d", i)] = w.Item.ID
				vars[fmt.Sprintf("f%d", i)] = f.FieldID
				vars[fmt.Sprintf("o%d", i)] = option
			}
			if err != nil {
				res.Err = err
				for _, w := range pending {
					res.Failed = append(res.Failed, FailedWrite{Write: w})
				}
				return
			}
		}
		var data map[string]json.RawMessage
		err := b.gql.Do(ctx, batchSetStates(len(pending)), vars, &data)
		var ge *GraphQLError
		if err != nil && !(errors.As(err, &ge) && ge.Partial) {
			// Nothing came back: no write of this request is known to have happened.
			res.Err = fmt.Errorf("set %d states: %w", len(pending), err)
			for _, w := range pending {
				res.Failed = append(res.Failed, FailedWrite{Write: w})
			}
			return
		}
		var again []enforce.StateWrite
		for i, w := range pending {
			alias := fmt.Sprintf("m%d", i)
			if v := bytes.TrimSpace(data[alias]); len(v) > 0 && !bytes.Equal(v, []byte("null")) {
				res.Written++
				continue
			}
			f := FailedWrite{Write: w}
			if fe, ok := aliasError(ge, alias); ok {
				f.Type, f.Message = fe.Type, fe.Message
			}
			if round < batchRounds && transientType(f.Type) {
				again = append(again, w)
				continue
			}
			res.Failed = append(res.Failed, f)
		}
		pending = again
	}
}

// aliasError is the error GitHub gave for one alias: the one at or inside its path, else one
// without a path (about the whole document).
func aliasError(ge *GraphQLError, alias string) (payload.FieldError, bool) {
	if ge == nil {
		return payload.FieldError{}, false
	}
	for _, fe := range ge.Errors {
		if fe.Under(alias) {
			return fe, true
		}
	}
	for _, fe := range ge.Errors {
		if len(fe.Path) == 0 {
			return fe, true
		}
	}
	return payload.FieldError{}, false
}

// transientType reports whether a GraphQL error type may go away on its own (GitHub's "Something
// went wrong while executing your query" has no type); a missing or forbidden node, or an
// invalid value, stays.
func transientType(t string) bool {
	switch t {
	case "", "INTERNAL", "INTERNAL_ERROR", "SERVICE_UNAVAILABLE", "TIMEOUT":
		return true
	}
	return false
}
