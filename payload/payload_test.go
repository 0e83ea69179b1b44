package payload

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func seedPayloads(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.json"))
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{`{}`, `null`, `[]`, `{"action":"edited","projects_v2_item":{"node_id":"PVTI_1"},"changes":{"field_value":{"from":null}}}`,
		`{"action":"edited","projects_v2_item":{"node_id":"PVTI_1"},"changes":{"field_value":{"from":{"name":7}}}}`,
		`{"action":"closed","issue":{"number":1},"repository":{"name":"app","owner":{"login":"acme"}}}`,
		`{"action":"closed","number":3,"pull_request":{"merged":true},"repository":{"name":"app"}}`} {
		f.Add([]byte(s))
	}
}

func TestProjectsV2Item(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "projects_v2_item_edited.json"))
	if err != nil {
		t.Fatal(err)
	}
	fc, err := ProjectsV2Item(data)
	if err != nil {
		t.Fatal(err)
	}
	if fc.Ignore != "" || fc.ItemID == "" || fc.Field != "Workflow State" || fc.ProjectNumber != 7 || !fc.FromKnown || fc.From != "Backlog" ||
		!fc.ToKnown || fc.To != "In Progress" || fc.Sender == "" || fc.Owner != "Octocoders" || fc.InstallationID != 42 || fc.At.IsZero() ||
		fc.Kind != KindOption || fc.FieldNodeID == "" || fc.FieldType != FieldTypeSingleSelect {
		t.Fatalf("decoded %+v", fc)
	}
	// Not JSON, not an object, no item, or a member of the wrong JSON type: malformed (400).
	for _, bad := range []string{`{`, `[]`, `null`, `"edited"`, `{"action":"edited"}`, `{"projects_v2_item":null}`,
		`{"action":"edited","projects_v2_item":"nope"}`,
		`{"action":7,"projects_v2_item":{"node_id":"x"}}`,
		`{"action":"edited","projects_v2_item":{"node_id":7}}`,
		`{"action":"edited","projects_v2_item":{"node_id":"x"},"organization":"acme"}`,
		`{"action":"edited","projects_v2_item":{"node_id":"x"},"sender":["alice"]}`,
		`{"action":"edited","projects_v2_item":{"node_id":"x"},"changes":"field_value"}`,
		`{"action":"edited","projects_v2_item":{"node_id":"x"},"changes":{"field_value":[1]}}`,
		`{"action":"edited","projects_v2_item":{"node_id":"x"},"changes":{"field_value":{"field_name":7}}}`} {
		if _, err := ProjectsV2Item([]byte(bad)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err %v, want ErrMalformed", bad, err)
		}
	}
	// Well formed, but nothing to enforce: ignored, not refused (a refusal is redelivered).
	for _, ignored := range []string{`{"projects_v2_item":{}}`, `{"action":"edited","projects_v2_item":{}}`,
		`{"action":"edited","projects_v2_item":{"node_id":"x"}}`,
		`{"action":"edited","projects_v2_item":{"node_id":"x"},"changes":{"body":{"from":"a","to":"b"}}}`} {
		if fc, err := ProjectsV2Item([]byte(ignored)); err != nil || fc.Ignore == "" {
			t.Errorf("%s: %+v %v, want ignored", ignored, fc, err)
		}
	}
	fc, err = ProjectsV2Item([]byte(`{"action":"edited","projects_v2_item":{"node_id":"x"},"changes":{"field_value":{"from":null}}}`))
	if err != nil || !fc.FromKnown || fc.From != "" || fc.ToKnown || fc.Kind != KindUnknown {
		t.Fatalf("from null: %+v %v", fc, err)
	}
	fc, err = ProjectsV2Item([]byte(`{"action":"edited","projects_v2_item":{"node_id":"x"},"changes":{"field_value":{}}}`))
	if err != nil || fc.FromKnown || fc.ToKnown {
		t.Fatalf("from absent: %+v %v", fc, err)
	}
	// A text field's value is no single-select option: decoded, and says so.
	fc, err = ProjectsV2Item([]byte(`{"action":"edited","projects_v2_item":{"node_id":"x"},"changes":{"field_value":{"to":"oops"}}}`))
	if single, known := fc.SingleSelect(); err != nil || fc.Kind != KindOther || single || !known || fc.ToKnown {
		t.Fatalf("text value: %+v %v", fc, err)
	}
	// Members are read by their exact names: another spelling is someone else's member.
	fc, err = ProjectsV2Item([]byte(`{"Action":7,"action":"edited","projects_v2_item":{"node_id":"x","NODE_ID":7},"Changes":"x",
		"changes":{"field_value":{"Field_Name":1,"field_name":"Workflow State","to":{"id":"a","name":"Done"}}}}`))
	if err != nil || fc.Action != ActionEdited || fc.ItemID != "x" || fc.Field != "Workflow State" || fc.To != "Done" {
		t.Fatalf("exact names: %+v %v", fc, err)
	}
	// Lenient where only routing is refined: a project_number of 7.0, an unreadable date.
	fc, err = ProjectsV2Item([]byte(`{"action":"edited","projects_v2_item":{"node_id":"x","updated_at":"yesterday"},"installation":{"id":4.2e1},
		"changes":{"field_value":{"project_number":7.0,"field_name":"Workflow State","to":{"id":"a","name":"Done"}}}}`))
	if err != nil || fc.ProjectNumber != 7 || !fc.At.IsZero() || fc.InstallationID != 42 || fc.To != "Done" {
		t.Fatalf("lenient members: %+v %v", fc, err)
	}
}

// Every documented shape of changes.field_value.from and .to (each oneOf branch of GitHub's
// published schema, null, {}, absent), with and without field_name and project_number,
// decodes without an error, and says what it tells of the field.
func TestProjectsV2ItemDocumentedValues(t *testing.T) {
	s := loadSchemas(t)
	vs := fromToVariants(t, s)
	metas := fieldMetas()
	n := 0
	for _, from := range vs {
		for _, to := range vs {
			for _, m := range metas {
				data := edited(t, m.fields(from, to), from, to)
				name := fmt.Sprintf("%s/from %s/to %s", m.name, from.label, to.label)
				var p any
				if err := json.Unmarshal(data, &p); err != nil {
					t.Fatal(err)
				}
				if from.label != "object" && to.label != "object" && !s.valid(s[editedSchema], p) {
					t.Fatalf("%s: the generated payload does not satisfy the schema: %s", name, data)
				}
				fc, err := ProjectsV2Item(data)
				if err != nil {
					t.Fatalf("%s: %v\n%s", name, err, data)
				}
				n++
				other := from.kind == "other" || to.kind == "other"
				single, known := fc.SingleSelect()
				switch {
				case fc.Ignore != "" || fc.ItemID == "":
					t.Fatalf("%s: %+v", name, fc)
				case other && (fc.Kind != KindOther || single || !known || fc.FromKnown || fc.ToKnown):
					t.Fatalf("%s: a value no single-select field holds: %+v", name, fc)
				case !other && (from.kind == "option" || to.kind == "option") && (fc.Kind != KindOption || !single):
					t.Fatalf("%s: an option: %+v", name, fc)
				case !other && fc.ToKnown != (to.label == "null" || to.kind == "option"):
					t.Fatalf("%s: ToKnown %v", name, fc.ToKnown)
				case !other && to.kind == "option" && fc.To != to.value.(map[string]any)["name"]:
					t.Fatalf("%s: To %q", name, fc.To)
				case !other && fc.FromKnown != (from.label == "null" || from.kind == "option"):
					t.Fatalf("%s: FromKnown %v", name, fc.FromKnown)
				case fc.Field != m.fieldName() || fc.ProjectNumber != m.projectNumber():
					t.Fatalf("%s: field %q project %d", name, fc.Field, fc.ProjectNumber)
				}
			}
		}
	}
	t.Logf("%d payloads from %d variants", n, len(vs))
}

// fieldMeta is which optional members of changes.field_value a payload carries.
type fieldMeta struct {
	name                      string
	nodeID, typ, fname, numbr bool
}

func fieldMetas() []fieldMeta {
	return []fieldMeta{
		{name: "everything", nodeID: true, typ: true, fname: true, numbr: true},
		{name: "as in GitHub's example (node id and type)", nodeID: true, typ: true},
		{name: "node id only", nodeID: true},
		{name: "no field_name", nodeID: true, typ: true, numbr: true},
		{name: "no project_number", nodeID: true, typ: true, fname: true},
		{name: "nothing"},
	}
}

func (m fieldMeta) fieldName() string {
	if m.fname {
		return "Workflow State"
	}
	return ""
}

func (m fieldMeta) projectNumber() int {
	if m.numbr {
		return 7
	}
	return 0
}

func (m fieldMeta) fields(from, to variant) map[string]any {
	out := map[string]any{}
	if m.nodeID {
		out["field_node_id"] = "PVTSSF_lADOAWcTxs07G84AAali"
	}
	if ft := fieldType(from, to); m.typ && ft != "" {
		out["field_type"] = ft
	}
	if m.fname {
		out["field_name"] = m.fieldName()
	}
	if m.numbr {
		out["project_number"] = m.projectNumber()
	}
	return out
}

// Every byte of a projects_v2_item payload is GitHub's (or an attacker's who has the secret):
// decoding never panics, refuses only as ErrMalformed and never refuses a payload GitHub's
// published schema allows; a change it accepts names its item, and what it says of the field
// is consistent.
func FuzzProjectsV2Item(f *testing.F) {
	seedPayloads(f)
	s := loadSchemas(f)
	vs := fromToVariants(f, s)
	for _, from := range vs {
		for _, to := range vs {
			f.Add(edited(f, fieldMetas()[0].fields(from, to), from, to))
			f.Add(edited(f, fieldMetas()[1].fields(from, to), from, to))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fc, err := ProjectsV2Item(data)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v is not ErrMalformed", err)
			}
			var p any
			if json.Unmarshal(data, &p) == nil && s.valid(s[editedSchema], p) {
				t.Fatalf("refused a payload the schema allows: %v\n%s", err, data)
			}
			return
		}
		if fc.Ignore == "" && fc.ItemID == "" {
			t.Fatal("accepted a payload without an item")
		}
		if fc.Kind == KindOther && (fc.FromKnown || fc.ToKnown || fc.From != "" || fc.To != "") {
			t.Fatalf("a value no single-select field holds was read as one: %+v", fc)
		}
		single, known := fc.SingleSelect()
		if fc.Kind == KindOther && (single || !known) {
			t.Fatalf("a value no single-select field holds, but a single-select field: %+v", fc)
		}
		if fc.Kind == KindOption && (fc.FieldType == "" || fc.FieldType == FieldTypeSingleSelect) && !(single && known) {
			t.Fatalf("an option, but not a single-select field: %+v", fc)
		}
	})
}

func FuzzIssues(f *testing.F) {
	seedPayloads(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		ev, err := Issues(data)
		if err != nil && !errors.Is(err, ErrMalformed) {
			t.Fatalf("error %v is not ErrMalformed", err)
		}
		_ = ev
	})
}

func FuzzPullRequest(f *testing.F) {
	seedPayloads(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := PullRequest(data); err != nil && !errors.Is(err, ErrMalformed) {
			t.Fatalf("error %v is not ErrMalformed", err)
		}
	})
}

func TestGraphQL(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	h := func(kv ...string) http.Header {
		out := http.Header{}
		for i := 0; i+1 < len(kv); i += 2 {
			out.Set(kv[i], kv[i+1])
		}
		return out
	}
	cases := []struct {
		name   string
		status int
		header http.Header
		body   string
		check  func(t *testing.T, data []byte, err error)
	}{
		{"data", 200, nil, `{"data":{"a":1}}`, func(t *testing.T, data []byte, err error) {
			if err != nil || string(data) != `{"a":1}` {
				t.Fatalf("%s %v", data, err)
			}
		}},
		{"secondary with retry-after", 403, h("Retry-After", "7"), `{"message":"You have exceeded a secondary rate limit."}`, func(t *testing.T, _ []byte, err error) {
			var rl *RateLimitError
			if !errors.As(err, &rl) || !rl.Secondary || rl.RetryAfter != 7*time.Second {
				t.Fatalf("%v", err)
			}
		}},
		{"retry-after as a date", 429, h("Retry-After", now.Add(90*time.Second).UTC().Format(http.TimeFormat)), `{}`, func(t *testing.T, _ []byte, err error) {
			var rl *RateLimitError
			if !errors.As(err, &rl) || rl.RetryAfter != 90*time.Second {
				t.Fatalf("%v", err)
			}
		}},
		{"primary spent (REST style)", 403, h("X-Ratelimit-Remaining", "0", "X-Ratelimit-Reset", "1700000120"), `{"message":"API rate limit exceeded"}`, func(t *testing.T, _ []byte, err error) {
			var rl *RateLimitError
			if !errors.As(err, &rl) || rl.Secondary || rl.RetryAfter != 2*time.Minute {
				t.Fatalf("%v", err)
			}
		}},
		{"primary spent (GraphQL 200)", 200, h("X-Ratelimit-Reset", "1700000030"), `{"errors":[{"type":"RATE_LIMITED","message":"API rate limit exceeded"}]}`, func(t *testing.T, _ []byte, err error) {
			var rl *RateLimitError
			if !errors.As(err, &rl) || rl.RetryAfter != 30*time.Second {
				t.Fatalf("%v", err)
			}
		}},
		{"5xx", 502, nil, `{"message":"Server Error"}`, func(t *testing.T, _ []byte, err error) {
			var se *ServerError
			if !errors.As(err, &se) || se.Status != 502 {
				t.Fatalf("%v", err)
			}
		}},
		{"graphql error", 200, nil, `{"errors":[{"type":"NOT_FOUND","message":"Could not resolve"}]}`, func(t *testing.T, data []byte, err error) {
			var ge *GraphQLError
			if !errors.As(err, &ge) || !strings.Contains(err.Error(), "Could not resolve") || ge.Partial || data != nil {
				t.Fatalf("%s %v", data, err)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			hdr := c.header
			if hdr == nil {
				hdr = http.Header{}
			}
			data, err := GraphQL(c.status, hdr, []byte(c.body), now)
			c.check(t, data, err)
		})
	}
}

// GraphQL responses and their rate-limit headers are decoded without panics, and a rate limit
// never asks for a negative or absurd wait.
func FuzzGraphQL(f *testing.F) {
	f.Add(200, "", "", `{"data":{"organization":{"projectV2":{"items":{"nodes":[]}}}}}`)
	f.Add(403, "60", "", `{"message":"secondary rate limit"}`)
	f.Add(200, "", "1700000030", `{"errors":[{"type":"RATE_LIMITED","message":"x"}]}`)
	f.Add(429, "Wed, 21 Oct 2015 07:28:00 GMT", "", `{}`)
	f.Add(502, "", "", `<html>`)
	now := time.Unix(1_700_000_000, 0)
	f.Fuzz(func(t *testing.T, status int, retryAfter, reset, body string) {
		h := http.Header{}
		h.Set("Retry-After", retryAfter)
		h.Set("X-Ratelimit-Reset", reset)
		h.Set("X-Ratelimit-Remaining", "0")
		_, err := GraphQL(status, h, []byte(body), now)
		var rl *RateLimitError
		if errors.As(err, &rl) && (rl.RetryAfter < 0 || rl.RetryAfter > 24*time.Hour) {
			t.Fatalf("wait %s from retry-after %q reset %q", rl.RetryAfter, retryAfter, reset)
		}
		RateFromHeaders(h)
	})
}
