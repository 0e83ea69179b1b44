package config

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/CONFIGURATION.md")

func TestConfigurationReference(t *testing.T) {
	got, err := Reference()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join("..", "..", "docs", "CONFIGURATION.md")
	if *update {
		if err := os.WriteFile(file, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is out of date with the Config struct or config.yml's comments: run\n  go test ./app/config -run TestConfigurationReference -update", file)
	}
}

// Every key of the Config struct appears in the reference, and every section is documented
// in config.yml.
func TestReferenceCoversEveryKey(t *testing.T) {
	got, err := Reference()
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"server.port", "github.app.private_key", "store.dsn", "projects[].owner",
		"enforcement.workers", "logging.format", "actors.agents", "workflow.states[].kind",
		"workflow.intents[].targets", "workflow.gates.wip_limits", "workflow.automation.max_cascade_depth", "workflow.extends", "policy.repository", "policy.path"} {
		if !strings.Contains(string(got), "| `"+key+"` |") {
			t.Errorf("the reference lacks %s", key)
		}
	}
	// The merge of a workflow section into the default is documented after the workflow's keys.
	if _, after, ok := strings.Cut(string(got), "## `workflow`"); !ok || !strings.Contains(after, "\n### How a workflow section extends the default\n") {
		t.Error("the reference does not say how a workflow section extends the default, after the workflow's keys")
	}
	// So are the organizations' policy files, after the policy section's keys.
	if _, after, ok := strings.Cut(string(got), "## `policy`"); !ok || !strings.Contains(after, "\n### Policy in the organization's repository\n") {
		t.Error("the reference does not describe the organizations' policy files, after the policy section's keys")
	}
	for _, section := range []string{"server", "github", "store", "projects", "policy", "enforcement", "logging", "actors", "workflow"} {
		if !strings.Contains(string(got), "## `"+section+"`\n\n") || strings.Contains(string(got), "## `"+section+"`\n\n|") {
			t.Errorf("section %s has no description in config.yml", section)
		}
	}
}
