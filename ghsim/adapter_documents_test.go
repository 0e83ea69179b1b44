package ghsim_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/ralph-gate/ralph-gate/ghboard"
	"github.com/ralph-gate/ralph-gate/ghsim"
)

// Every document ralph-gate's adapter (ghboard) sends validates against GitHub's schema and runs on
// ghsim without touching an unimplemented field. Placeholder ids in the adapter's example
// variables are replaced by real ones of the same kind.
func TestGhboardDocuments(t *testing.T) {
	b, err := os.ReadFile("testdata/seed.yaml")
	if err != nil {
		t.Fatal(err)
	}
	seed, err := ghsim.ParseSeed(b)
	if err != nil {
		t.Fatal(err)
	}
	seed.App.PrivateKeyFile, seed.App.WebhookURL = "", ""
	srv, err := ghsim.New(seed, ghsim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	url, err := srv.Start(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()

	st := srv.State()
	is2, _ := st.Issue("app", 2)
	is7, _ := st.Issue("app", 7)
	real := map[string]string{"PVTI_": is2.ItemID, "I_": is2.NodeID, "IC_": is7.Comments[0].NodeID}
	var ids struct {
		Data struct {
			Organization struct {
				ProjectV2 struct {
					ID    string
					Field struct {
						ID      string
						Options []struct{ ID string }
					}
				}
			}
		}
	}
	post(t, url, `{ organization(login: "acme") { projectV2(number: 1) { id field(name: "Workflow State") { ... on ProjectV2SingleSelectField { id options { id } } } } } }`, nil, &ids)
	p := ids.Data.Organization.ProjectV2
	real["PVT_"], real["PVTSSF_"] = p.ID, p.Field.ID

	docs := ghboard.Documents()
	if len(docs) == 0 {
		t.Fatal("ghboard lists no documents")
	}
	for _, d := range docs {
		t.Run(d.Name, func(t *testing.T) {
			if err := ghsim.ValidateDocument(d.Query, d.Variables); err != nil {
				t.Fatalf("invalid against GitHub's schema: %v", err)
			}
			vars := map[string]any{}
			for k, v := range d.Variables {
				vars[k] = v
				s, ok := v.(string)
				if !ok {
					continue
				}
				for _, prefix := range []string{"PVTSSF_", "PVTI_", "PVT_", "IC_", "I_"} { // longest first
					if strings.HasPrefix(s, prefix) {
						vars[k] = real[prefix]
						break
					}
				}
				if strings.Contains(strings.ToLower(k), "option") {
					vars[k] = p.Field.Options[1].ID
				}
			}
			var out struct {
				Errors []struct {
					Type    string
					Message string
				}
			}
			post(t, url, d.Query, vars, &out)
			for _, e := range out.Errors {
				if e.Type != "NOT_FOUND" && e.Type != "UNPROCESSABLE" {
					t.Fatalf("%s: %s", e.Type, e.Message)
				}
			}
		})
	}
}

func post(t *testing.T, url, query string, vars map[string]any, out any) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req, _ := http.NewRequest("POST", url+"/api/graphql", strings.NewReader(string(body)))
	req.Header.Set("Authorization", "bearer alice-token")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		t.Fatalf("%d %s", res.StatusCode, b)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
}
