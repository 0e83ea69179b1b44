package ghboard

import (
	"context"
	"fmt"
	"strings"

	"github.com/ralph-gate/ralph-gate/enforce"
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

// SetStates writes several states, batchSize per request. Clearing is not batched (rare).
func (b *Board) SetStates(ctx context.Context, writes []enforce.StateWrite) error {
	var batch []enforce.StateWrite
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		vars := map[string]any{}
		for i, w := range batch {
			f, err := b.fieldFor(ctx, w.Item)
			if err != nil {
				return err
			}
			option, ok := f.Options[w.State]
			if !ok {
				b.fields.Forget(w.Item.ProjectID)
				return fmt.Errorf("project %s/%d has no option %q in %q", w.Item.Owner, w.Item.ProjectNumber, w.State, b.fieldName)
			}
			vars[fmt.Sprintf("p%d", i)] = f.ProjectID
			vars[fmt.Sprintf("i%d", i)] = w.Item.ID
			vars[fmt.Sprintf("f%d", i)] = f.FieldID
			vars[fmt.Sprintf("o%d", i)] = option
		}
		if err := b.gql.Do(ctx, batchSetStates(len(batch)), vars, nil); err != nil {
			return fmt.Errorf("set %d states: %w", len(batch), err)
		}
		batch = batch[:0]
		return nil
	}
	for _, w := range writes {
		if w.State == "" {
			if err := b.SetState(ctx, w.Item, ""); err != nil {
				return err
			}
			continue
		}
		batch = append(batch, w)
		if len(batch) == batchSize {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}
