package handlers_test

import (
	"bytes"
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/palantir/go-githubapp/githubapp"

	"github.com/ralph-gate/ralph-gate/enforce"
	"github.com/ralph-gate/ralph-gate/handlers"
)

// GitHub's published description of the projects_v2_item "edited" payload (@octokit/openapi-webhooks
// 12.1.0) and its published example of the event (octokit/webhooks examples 7.6.1); see
// ghsim/testdata/PROVENANCE.md.
var (
	editedSchemaFile = filepath.Join("..", "ghsim", "testdata", "payloads", "openapi-webhooks-12.1.0_projects-v2-item-edited_schema.json")
	octokitExample   = filepath.Join("..", "ghsim", "testdata", "payloads", "octokit-webhooks-examples-7.6.1_projects_v2_item_4_edited.json")
)

const (
	secret       = "test-secret"
	workflow     = "Workflow State"
	fieldNodeID  = "PVTSSF_lADOAWcTxs07G84AAali"
	appLogin     = "ralph-gate[bot]"
	exampleOrg   = "Octocoders" // the example's organization
	exampleItem  = "PVTI_lADOAWcTxs07G84AVqWu"
	enforcedProj = 7
)

// variant is one documented shape of changes.field_value.from or .to.
type variant struct {
	label string // the schema branch: "string", "integer", a component's name, "null", "object"; or "absent"
	value any
	// option is the option's name when the value is a single-select option.
	option string
	// other: a value no single-select field holds (text, date, number, iteration).
	other bool
}

// fromToVariants reads the from/to schema of GitHub's description and returns one value per
// oneOf branch, one per type of its type list that no branch is of (null, and {}: an object
// that is no branch), and "absent" (both are optional). It checks that from and to agree.
func fromToVariants(t testing.TB) []variant {
	t.Helper()
	b, err := os.ReadFile(editedSchemaFile)
	if err != nil {
		t.Fatal(err)
	}
	var set map[string]any
	if err := json.Unmarshal(b, &set); err != nil {
		t.Fatal(err)
	}
	resolve := func(s any) map[string]any {
		m, _ := s.(map[string]any)
		if ref, ok := m["$ref"].(string); ok {
			m, _ = set[strings.TrimPrefix(ref, "#/components/schemas/")].(map[string]any)
		}
		return m
	}
	dig := func(m map[string]any, path ...string) map[string]any {
		for _, p := range path {
			if p == "oneOf" {
				m = resolve(m["oneOf"].([]any)[0]) // the field_value branch of changes
				continue
			}
			m = resolve(m["properties"].(map[string]any)[p])
		}
		return m
	}
	typesOf := func(m map[string]any) []string {
		switch tv := m["type"].(type) {
		case string:
			return []string{tv}
		case []any:
			var out []string
			for _, x := range tv {
				out = append(out, x.(string))
			}
			return out
		}
		return nil
	}
	var instance func(m map[string]any, name string) any
	instance = func(m map[string]any, name string) any {
		ts := slices.DeleteFunc(typesOf(m), func(s string) bool { return s == "null" })
		if len(ts) == 0 {
			return nil
		}
		switch ts[0] {
		case "string":
			return name + " value"
		case "integer", "number":
			return 7
		case "boolean":
			return false
		case "object":
			out := map[string]any{}
			for k, p := range m["properties"].(map[string]any) {
				out[k] = instance(resolve(p), k)
			}
			return out
		}
		return nil
	}
	read := func(side string) []variant {
		sch := dig(resolve(set["webhook-projects-v2-item-edited"]), "changes", "oneOf", "field_value", side)
		var out []variant
		covered := map[string]bool{}
		for _, br := range sch["oneOf"].([]any) {
			m := resolve(br)
			v := variant{other: true}
			if ref, ok := br.(map[string]any)["$ref"].(string); ok {
				v.label = ref[strings.LastIndex(ref, "/")+1:]
			} else {
				v.label = typesOf(m)[0]
				covered[v.label] = true
			}
			v.value = instance(m, v.label)
			if props, _ := m["properties"].(map[string]any); props["name"] != nil {
				v.other, v.option = false, v.value.(map[string]any)["name"].(string)
			}
			out = append(out, v)
		}
		for _, ty := range typesOf(sch) {
			switch {
			case covered[ty]:
			case ty == "null":
				out = append(out, variant{label: "null"})
			case ty == "object":
				out = append(out, variant{label: "object", value: map[string]any{}})
			default:
				t.Fatalf("%s: type %q has no branch and no variant here", side, ty)
			}
		}
		return out
	}
	from, to := read("from"), read("to")
	if len(from) < 6 || len(from) != len(to) {
		t.Fatalf("from has %d variants, to %d", len(from), len(to))
	}
	return append(from, variant{label: "absent"})
}

// optionAndNull picks, of the documented variants, a single-select option and null.
func optionAndNull(vs []variant) (option, null variant) {
	for _, v := range vs {
		switch {
		case v.option != "":
			option = v
		case v.label == "null":
			null = v
		}
	}
	return option, null
}

func (v variant) known() bool { return v.label == "null" || v.option != "" }

// meta is which optional members of changes.field_value a payload carries.
type meta struct {
	name           string
	nodeID, fieldT bool
	fieldID        string // field_node_id when nodeID (default fieldNodeID)
	field          string // field_name, "" for none
	project        int    // project_number, 0 for none
}

func metas() []meta {
	return []meta{
		{name: "everything", nodeID: true, fieldT: true, field: workflow, project: enforcedProj},
		{name: "as in GitHub's example: node id and type", nodeID: true, fieldT: true},
		{name: "node id only", nodeID: true},
		{name: "no field_name", nodeID: true, fieldT: true, project: enforcedProj},
		{name: "no project_number", nodeID: true, fieldT: true, field: workflow},
	}
}

// fieldType is the field_type GitHub sends for a field holding these values ("" when they do
// not tell: null, {} and absent).
func fieldType(from, to variant) string {
	for _, v := range []variant{from, to} {
		switch {
		case v.option != "":
			return "single_select"
		case v.label == "string":
			return "text"
		case v.label == "integer":
			return "number"
		case v.other:
			return "iteration"
		}
	}
	return ""
}

// payloadFor puts a field value change into GitHub's example envelope (its organization set to org).
func payloadFor(t testing.TB, org string, m meta, from, to variant) []byte {
	t.Helper()
	b, err := os.ReadFile(octokitExample)
	if err != nil {
		t.Fatal(err)
	}
	var p map[string]any
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	p["organization"].(map[string]any)["login"] = org
	fv := map[string]any{}
	if m.nodeID {
		fv["field_node_id"] = cmp.Or(m.fieldID, fieldNodeID)
	}
	if ft := fieldType(from, to); m.fieldT && ft != "" {
		fv["field_type"] = ft
	}
	if m.field != "" {
		fv["field_name"] = m.field
	}
	if m.project != 0 {
		fv["project_number"] = m.project
	}
	for side, v := range map[string]variant{"from": from, "to": to} {
		if v.label != "absent" {
			fv[side] = v.value
		}
	}
	p["changes"] = map[string]any{"field_value": fv}
	out, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// want is what must become of a payload.
type want int

const (
	ignored  want = iota
	reported      // recorded in the item's history and enqueued, with its values
	reread        // enqueued without a delivery id or values: the item is walked, nothing recorded
)

func (w want) String() string { return [...]string{"ignored", "reported", "re-read"}[w] }

// expect is the rule: a value no single-select field holds is never the workflow field; the
// workflow field, named, with a readable to value, is reported; anything else that may be it
// (not named, or no readable to value) is re-read.
func expect(m meta, from, to variant) want {
	switch {
	case from.other || to.other:
		return ignored
	case m.field == "" || !to.known():
		return reread
	}
	return reported
}

// queue records what the handler enqueues.
type queue struct {
	mu      sync.Mutex
	changes []enforce.Change
}

func (q *queue) EnqueueChange(_ context.Context, ch enforce.Change) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.changes = append(q.changes, ch)
	return nil
}

func (q *queue) EnqueueLifecycle(context.Context, enforce.Lifecycle) error { return nil }

func (q *queue) take() []enforce.Change {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.changes
	q.changes = nil
	return out
}

// recorder records what the handler records in items' histories.
type recorder struct{ queue }

func (r *recorder) Observe(ctx context.Context, ch enforce.Change) (time.Time, error) {
	return time.Time{}, r.EnqueueChange(ctx, ch)
}

// intake is the webhook route as the app serves it: go-githubapp's dispatcher (it checks the
// signature and the event header) with the app's answers to errors (app.dispatchError: a
// malformed payload is a 400, any other failure a 500).
func intake(h *handlers.ProjectsV2Item) http.Handler {
	return githubapp.NewEventDispatcher([]githubapp.EventHandler{h}, secret,
		githubapp.WithErrorCallback(func(w http.ResponseWriter, _ *http.Request, err error) {
			var ve githubapp.ValidationError
			if errors.As(err, &ve) || errors.Is(err, handlers.ErrMalformed) {
				http.Error(w, "malformed webhook", http.StatusBadRequest)
				return
			}
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}))
}

// signed is a delivery as GitHub sends it: the payload, signed with the webhook secret.
func signed(delivery string, body []byte) *http.Request {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	req := httptest.NewRequest(http.MethodPost, "/api/github/hook", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", handlers.EventProjectsV2Item)
	req.Header.Set("X-GitHub-Delivery", delivery)
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	return req
}

// deliver hands a signed delivery to the route and returns its answer.
func deliver(route http.Handler, delivery string, body []byte) (int, string) {
	rec := httptest.NewRecorder()
	route.ServeHTTP(rec, signed(delivery, body))
	return rec.Code, rec.Body.String()
}

func scope() handlers.Scope {
	return handlers.Scope{Projects: []handlers.Project{{Owner: exampleOrg, Number: enforcedProj}}, Field: workflow, AppLogin: appLogin}
}

// Every documented shape of changes.field_value.from and .to (generated from GitHub's
// published schema: each oneOf branch, null, {}, absent), crossed with every combination of
// the optional field_name, project_number and field_type GitHub may leave out, is signed and
// delivered: every one is answered 2xx, and only a change of the enforced single-select field
// reaches the queue — recorded with its values when the payload names the field and its new
// value, as a re-read (nothing recorded) when it may be that field but does not say.
func TestProjectsV2ItemEveryDocumentedFieldValue(t *testing.T) {
	vs := fromToVariants(t)
	q, hist := &queue{}, &recorder{}
	counts := map[want]int{}
	n := 0
	for _, m := range metas() {
		for _, from := range vs {
			for _, to := range vs {
				// A fresh handler each time: nothing learned from an earlier payload.
				route := intake(&handlers.ProjectsV2Item{Scope: scope(), Queue: q, History: hist})
				n++
				name := fmt.Sprintf("%s, from %s, to %s", m.name, from.label, to.label)
				delivery := fmt.Sprintf("d-%d", n)
				body := payloadFor(t, exampleOrg, m, from, to)
				if status, msg := deliver(route, delivery, body); status/100 != 2 {
					t.Errorf("%s: answered %d %q\n%s", name, status, msg, body)
					continue
				}
				w := expect(m, from, to)
				counts[w]++
				got, recorded := q.take(), hist.take()
				switch w {
				case ignored:
					if len(got)+len(recorded) != 0 {
						t.Errorf("%s: %s, but enqueued %+v, recorded %+v", name, w, got, recorded)
					}
				case reported:
					fromName, toName := from.option, to.option
					if len(got) != 1 || len(recorded) != 1 || got[0] != recorded[0] {
						t.Errorf("%s: %s, but enqueued %+v, recorded %+v", name, w, got, recorded)
					} else if ch := got[0]; ch.DeliveryID != delivery || ch.ItemID != exampleItem || ch.To != toName ||
						ch.FromKnown != from.known() || ch.From != fromName || ch.ProjectNumber != m.project || ch.Actor != "wolfy1339" {
						t.Errorf("%s: enqueued %+v", name, ch)
					}
				case reread:
					if len(got) != 1 || len(recorded) != 0 {
						t.Errorf("%s: %s, but enqueued %+v, recorded %+v", name, w, got, recorded)
					} else if ch := got[0]; ch.DeliveryID != "" || ch.ItemID != exampleItem || ch.FromKnown || ch.From != "" || ch.To != "" ||
						ch.Owner != exampleOrg || ch.Actor != "wolfy1339" {
						t.Errorf("%s: a re-read must carry the item and no report: %+v", name, ch)
					}
				}
			}
		}
	}
	if counts[ignored] == 0 || counts[reported] == 0 || counts[reread] == 0 {
		t.Fatalf("the generated payloads do not cover every outcome: %v", counts)
	}
	t.Logf("%d payloads from %d from/to variants: %v", n, len(vs), counts)
}

// What is not the enforced single-select field, or not an enforced project, never reaches the
// queue, and what a payload once said of a node id routes a payload that does not say it.
func TestProjectsV2ItemRouting(t *testing.T) {
	vs := fromToVariants(t)
	option, null := optionAndNull(vs)
	everything, bare := metas()[0], metas()[1]
	other := func(m meta, field string, project int) meta { m.field, m.project = field, project; return m }
	steps := []struct {
		name string
		org  string
		m    meta
		want want
	}{
		{"another single-select field", exampleOrg, other(everything, "Priority", enforcedProj), ignored},
		{"the workflow field of a project not enforced", exampleOrg, other(everything, workflow, enforcedProj+1), ignored},
		{"an organization with no enforced project", "someone-else", everything, ignored},
		{"an organization with no enforced project, unnamed field", "someone-else", bare, ignored},
		// The field's node id was named "Priority" above: a payload naming only the id is that field.
		{"unnamed, but its node id was named Priority", exampleOrg, bare, ignored},
		// Named the workflow field now (a rename): learned again.
		{"the workflow field", exampleOrg, everything, reported},
		{"unnamed, its node id named the workflow field, its project numbered", exampleOrg, bare, reported},
	}
	q := &queue{}
	route := intake(&handlers.ProjectsV2Item{Scope: scope(), Queue: q})
	for i, st := range steps {
		body := payloadFor(t, st.org, st.m, option, null)
		if status, msg := deliver(route, fmt.Sprintf("r-%d", i), body); status/100 != 2 {
			t.Fatalf("%s: answered %d %q", st.name, status, msg)
		}
		got := q.take()
		switch {
		case st.want == ignored && len(got) != 0:
			t.Fatalf("%s: enqueued %+v", st.name, got)
		case st.want == reported && (len(got) != 1 || got[0].DeliveryID == "" || got[0].To != "" || !got[0].FromKnown || got[0].From != option.option):
			t.Fatalf("%s: want a report from %q to no value, enqueued %+v", st.name, option.option, got)
		case st.want == reported && got[0].ProjectNumber != enforcedProj:
			t.Fatalf("%s: the project number learned from its node id is not carried: %+v", st.name, got[0])
		}
	}

	// Our own write of an unnamed field: recorded as ours as it was made, nothing to walk.
	body := payloadFor(t, exampleOrg, metas()[2], option, option)
	body = bytes.Replace(body, []byte(`"login":"wolfy1339"`), []byte(`"login":"`+appLogin+`"`), -1)
	q2 := &queue{}
	h2 := &handlers.ProjectsV2Item{Scope: scope(), Queue: q2}
	if err := h2.Handle(context.Background(), handlers.EventProjectsV2Item, "own", body); err != nil || len(q2.take()) != 0 {
		t.Fatalf("our own write: %v", err)
	}
}

// A payload that is not one stays a 400, before anything is enqueued.
func TestProjectsV2ItemMalformedIsRefused(t *testing.T) {
	q := &queue{}
	route := intake(&handlers.ProjectsV2Item{Scope: scope(), Queue: q})
	for i, body := range []string{`{"action":`, `[]`, `{"action":"edited","projects_v2_item":"nope"}`,
		`{"action":"edited","projects_v2_item":{"node_id":"x"},"changes":{"field_value":"Done"}}`} {
		if status, _ := deliver(route, fmt.Sprintf("m-%d", i), []byte(body)); status != http.StatusBadRequest {
			t.Errorf("%s: answered %d, want 400", body, status)
		}
	}
	if got := q.take(); len(got) != 0 {
		t.Fatalf("enqueued %+v", got)
	}
}

// An edit of a field workflow.requirements names is recorded in its item's history with its
// values as text, whatever the field's type (every documented shape of from and to): a move
// is checked against the field as it was when it was made. One whose payload does not say the
// new value records nothing; one on a project not enforced, or of a field not required, is
// ignored; an unnamed field is known by a node id an earlier payload named.
func TestProjectsV2ItemRequiredFieldEdits(t *testing.T) {
	const required = "Estimate"
	sc := scope()
	sc.Required = []string{required}
	text := func(v variant) (string, bool) {
		switch {
		case v.label == "absent", v.label == "object":
			return "", false
		case v.label == "null":
			return "", true
		case v.option != "":
			return v.option, true
		}
		switch x := v.value.(type) {
		case string:
			return x, true
		case map[string]any:
			s, ok := x["title"].(string)
			return s, ok
		default:
			b, _ := json.Marshal(x)
			return string(b), true
		}
	}
	est := meta{name: "Estimate named", nodeID: true, fieldT: false, fieldID: "PVTF_estimate", field: required, project: enforcedProj}
	vs := fromToVariants(t)
	n := 0
	for _, from := range vs {
		for _, to := range vs {
			n++
			q, hist := &queue{}, &recorder{}
			route := intake(&handlers.ProjectsV2Item{Scope: sc, Queue: q, History: hist})
			delivery := fmt.Sprintf("f-%d", n)
			name := fmt.Sprintf("from %s, to %s", from.label, to.label)
			if status, msg := deliver(route, delivery, payloadFor(t, exampleOrg, est, from, to)); status/100 != 2 {
				t.Fatalf("%s: answered %d %q", name, status, msg)
			}
			got, recorded := q.take(), hist.take()
			toText, toKnown := text(to)
			fromText, fromKnown := text(from)
			if !toKnown {
				if len(got)+len(recorded) != 0 {
					t.Errorf("%s: no new value to record, but enqueued %+v", name, got)
				}
				continue
			}
			if len(got) != 1 || len(recorded) != 1 {
				t.Errorf("%s: enqueued %+v, recorded %+v", name, got, recorded)
				continue
			}
			if ch := got[0]; ch.Field != required || ch.DeliveryID != delivery || ch.To != toText || ch.FromKnown != fromKnown ||
				(fromKnown && ch.From != fromText) || ch.ItemID != exampleItem || ch.Actor != "wolfy1339" {
				t.Errorf("%s: recorded %+v, want %s %q → %q", name, ch, required, fromText, toText)
			}
		}
	}

	option, null := optionAndNull(vs)
	q := &queue{}
	route := intake(&handlers.ProjectsV2Item{Scope: sc, Queue: q, History: &recorder{}})
	steps := []struct {
		name     string
		m        meta
		recorded bool
	}{
		{"unnamed, its node id not named before", meta{nodeID: true, fieldID: "PVTF_estimate", project: enforcedProj}, false},
		{"a field not required", meta{nodeID: true, fieldID: "PVTF_priority", field: "Priority", project: enforcedProj}, false},
		{"the required field on a project not enforced", meta{nodeID: true, fieldID: "PVTF_estimate", field: required, project: enforcedProj + 1}, false},
		{"the required field", est, true},
		{"unnamed, its node id named Estimate before", meta{nodeID: true, fieldID: "PVTF_estimate", project: enforcedProj}, true},
	}
	for i, st := range steps {
		if status, msg := deliver(route, fmt.Sprintf("s-%d", i), payloadFor(t, exampleOrg, st.m, null, option)); status/100 != 2 {
			t.Fatalf("%s: answered %d %q", st.name, status, msg)
		}
		got := q.take()
		fields := 0
		for _, ch := range got {
			if ch.Field != "" {
				fields++
			}
		}
		if st.recorded != (fields == 1) || (!st.recorded && fields != 0) {
			t.Errorf("%s: recorded=%v, enqueued %+v", st.name, st.recorded, got)
		}
	}
}
