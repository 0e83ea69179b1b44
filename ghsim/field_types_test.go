package ghsim

import (
	"strings"
	"testing"

	"github.com/google/go-github/v89/github"

	decode "github.com/ralph-gate/ralph-gate/payload"
)

// A seed declares text and number fields beside single-select ones, with values.
func TestSeedTextAndNumberFields(t *testing.T) {
	base := `org: acme
app: {id: 1, slug: s, installation_id: 2}
users: [{login: alice}]
repos: [app]
projects:
  - number: 1
    fields:
      Workflow State: [Backlog, Done]
      Notes: text
      Points: number
`
	s, err := ParseSeed([]byte(base + `issues:
  - {repo: app, number: 1, title: One, project: 1, fields: {Workflow State: Backlog, Notes: "to do", Points: 2.5}}
`))
	if err != nil {
		t.Fatal(err)
	}
	f := s.Projects[0].Fields
	if len(f) != 3 || f[0].Type != "" || f[1].Type != FieldText || f[2].Type != FieldNumber || len(f[1].Options) != 0 {
		t.Fatalf("fields %+v", f)
	}
	for _, bad := range []string{
		`  - {repo: app, number: 1, title: One, project: 1, fields: {Points: many}}`,
		`  - {repo: app, number: 1, title: One, project: 1, fields: {Notes: [a]}}`,
	} {
		if _, err := ParseSeed([]byte(base + "issues:\n" + bad + "\n")); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
	s.Projects[0].Fields = append(s.Projects[0].Fields, SeedField{Name: "Odd", Type: "date"})
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), `unknown field type "date"`) {
		t.Fatalf("a date field: %v", err)
	}
}

const fieldsQuery = `query { organization(login: "acme") { projectV2(number: 1) {
  notes: field(name: "Notes") { __typename ... on ProjectV2Field { id name dataType } }
  points: field(name: "Points") { __typename ... on ProjectV2Field { id name dataType } } } } }`

const setValueMutation = `mutation($p: ID!, $i: ID!, $f: ID!, $v: ProjectV2FieldValue!) {
  updateProjectV2ItemFieldValue(input: {projectId: $p, itemId: $i, fieldId: $f, value: $v}) {
    projectV2Item { id
      notes: fieldValueByName(name: "Notes") { __typename ... on ProjectV2ItemFieldTextValue { text field { ... on ProjectV2Field { name } } } }
      points: fieldValueByName(name: "Points") { __typename ... on ProjectV2ItemFieldNumberValue { number } } } } }`

// Editing a text or number field sends the projects_v2_item "edited" payload GitHub documents
// for it: field_type text or number, and from/to the field's string or number (null for no
// value), valid against GitHub's published schema; the app's decoder reads it as a change of
// a field that is not a single-select field.
func TestTextAndNumberFieldEditsSendDocumentedPayloads(t *testing.T) {
	seed := testSeed(t)
	seed.Projects[0].Fields = append(seed.Projects[0].Fields, SeedField{Name: "Notes", Type: FieldText}, SeedField{Name: "Points", Type: FieldNumber})
	seed.Issues[0].Fields = map[string]string{"Workflow State": "Backlog", "Notes": "draft"}
	rc := newReceiver(t)
	s := startSim(t, seed, Options{WebhookURL: rc.URL})
	b := s.board("alice-token")
	p := dig(s.gqlOK("alice-token", fieldsQuery, nil), "organization", "projectV2")
	notes, points := dig(p, "notes", "id").(string), dig(p, "points", "id").(string)
	if dig(p, "notes", "__typename") != "ProjectV2Field" || dig(p, "notes", "dataType") != "TEXT" || dig(p, "points", "dataType") != "NUMBER" ||
		!strings.HasPrefix(notes, "PVTF_") {
		t.Fatalf("fields: %v", p)
	}
	set := func(field string, v map[string]any) map[string]any {
		return s.gqlOK("alice-token", setValueMutation, map[string]any{"p": b.project, "i": b.items[1], "f": field, "v": v})
	}
	d := set(notes, map[string]any{"text": "ready"}) // from the seeded "draft"
	if got := dig(d, "updateProjectV2ItemFieldValue", "projectV2Item", "notes"); dig(got, "text") != "ready" || dig(got, "field", "name") != "Notes" {
		t.Fatalf("notes: %v", got)
	}
	set(points, map[string]any{"number": 3}) // from no value
	d = set(points, map[string]any{"number": 5})
	if got := dig(d, "updateProjectV2ItemFieldValue", "projectV2Item", "points", "number"); got != float64(5) {
		t.Fatalf("points: %v", got)
	}
	set(points, map[string]any{"number": 5}) // the same value: nothing changes, nothing is sent
	s.gqlOK("alice-token", `mutation($p: ID!, $i: ID!, $f: ID!) { clearProjectV2ItemFieldValue(input: {projectId: $p, itemId: $i, fieldId: $f}) { projectV2Item { id } } }`,
		map[string]any{"p": b.project, "i": b.items[1], "f": notes})
	// A value of another type than the field's is refused.
	for _, c := range []struct {
		field string
		v     map[string]any
	}{{points, map[string]any{"text": "x"}}, {notes, map[string]any{"number": 1}}, {notes, map[string]any{"singleSelectOptionId": b.options["Done"]}},
		{b.field, map[string]any{"text": "Done"}}} {
		if out := s.gql("alice-token", setValueMutation, map[string]any{"p": b.project, "i": b.items[1], "f": c.field, "v": c.v}); len(out.Errors) == 0 {
			t.Errorf("%v on %s accepted", c.v, c.field)
		}
	}
	s.waitIdle()

	type change struct {
		field, typ string
		from, to   any
	}
	want := []change{{"Notes", "text", "draft", "ready"}, {"Points", "number", nil, float64(3)}, {"Points", "number", float64(3), float64(5)}, {"Notes", "text", "ready", nil}}
	got := rc.all()
	if len(got) != len(want) {
		t.Fatalf("got %d webhooks, want %d", len(got), len(want))
	}
	schemas := loadSchemas(t, "testdata/payloads/openapi-webhooks-12.1.0_projects-v2-item-edited_schema.json", "testdata/webhook-components.json")
	for i, w := range got {
		pl := decodePayload(t, w.body)
		if errs := schemas.validate("webhook-projects-v2-item-edited", pl); len(errs) > 0 {
			t.Fatalf("webhook %d does not match the published schema:\n%s\n%s", i, strings.Join(errs, "\n"), w.body)
		}
		fv := dig(pl, "changes", "field_value").(map[string]any)
		if fv["field_name"] != want[i].field || fv["field_type"] != want[i].typ || fv["from"] != want[i].from || fv["to"] != want[i].to ||
			fv["project_number"] != float64(1) || !strings.HasPrefix(fv["field_node_id"].(string), "PVTF_") || dig(pl, "action") != "edited" {
			t.Fatalf("webhook %d: field_value %v, want %+v", i, fv, want[i])
		}
		if ev, err := github.ParseWebHook("projects_v2_item", w.body); err != nil || ev.(*github.ProjectV2ItemEvent).GetChanges().GetFieldValue().GetFieldType() != want[i].typ {
			t.Fatalf("go-github: %v", err)
		}
		fc, err := decode.ProjectsV2Item(w.body)
		if single, known := fc.SingleSelect(); err != nil || fc.Ignore != "" || single || !known || fc.Field != want[i].field {
			t.Fatalf("webhook %d: the app's decoder read %+v, %v", i, fc, err)
		}
	}
	if is, _ := s.State().Issue("app", 1); is.Fields["Points"] != "5" || is.Fields["Workflow State"] != "Backlog" {
		t.Fatalf("state: %v", is.Fields)
	} else if _, ok := is.Fields["Notes"]; ok {
		t.Fatalf("a cleared text value is still in the state: %v", is.Fields)
	}
}
