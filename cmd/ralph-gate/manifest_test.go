package main

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"gopkg.in/yaml.v3"
)

// The manifest asks for exactly what doctor checks for: one list of permissions and events.
func TestAppManifestMatchesDoctor(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "app.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Name           string            `yaml:"name"`
		URL            string            `yaml:"url"`
		HookAttributes map[string]any    `yaml:"hook_attributes"`
		Public         bool              `yaml:"public"`
		Description    string            `yaml:"description"`
		Permissions    map[string]string `yaml:"default_permissions"`
		Events         []string          `yaml:"default_events"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("app.yml: %v", err)
	}
	if !maps.Equal(m.Permissions, ManifestPermissions()) {
		t.Errorf("app.yml permissions %v, want %v", m.Permissions, ManifestPermissions())
	}
	if !slices.Equal(m.Events, RequiredEvents) {
		t.Errorf("app.yml events %v, doctor requires %v", m.Events, RequiredEvents)
	}
	if m.Name == "" || m.URL == "" || m.HookAttributes["url"] == nil {
		t.Error("app.yml needs name, url and hook_attributes.url")
	}
}
