package config

import (
	"errors"
	"strings"
	"testing"
)

// The webhook intake's limits: 1 MiB bodies and 16 concurrent reads unless set, both checked
// with the key path in the message.
func TestServerIntakeLimits(t *testing.T) {
	def, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	if def.Server.MaxBodyBytes != 1<<20 || def.Server.MaxConcurrentWebhooks != 16 {
		t.Fatalf("defaults: max_body_bytes %d, max_concurrent_webhooks %d; want 1048576 and 16",
			def.Server.MaxBodyBytes, def.Server.MaxConcurrentWebhooks)
	}
	// A file that leaves them out (as the Helm chart's server section does) gets the same.
	without := strings.Replace(string(edited(t, "  max_body_bytes: 1048576\n", "")), "  max_concurrent_webhooks: 16\n", "", 1)
	if strings.Contains(without, "max_concurrent_webhooks:") {
		t.Fatal("config.yml still sets max_concurrent_webhooks")
	}
	cfg, err := Parse([]byte(without))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Server.MaxBodyBytes != DefaultMaxBodyBytes || cfg.Server.MaxConcurrentWebhooks != DefaultMaxConcurrentWebhooks {
		t.Fatalf("without the keys: max_body_bytes %d, max_concurrent_webhooks %d", cfg.Server.MaxBodyBytes, cfg.Server.MaxConcurrentWebhooks)
	}

	tests := []struct {
		name, old, new string
		path, message  string // "" path: valid
	}{
		{"smallest body", "max_body_bytes: 1048576", "max_body_bytes: 1024", "", ""},
		{"GitHub's cap", "max_body_bytes: 1048576", "max_body_bytes: 26214400", "", ""},
		{"body too small", "max_body_bytes: 1048576", "max_body_bytes: 1023", "server.max_body_bytes", "between 1024 and 26214400"},
		{"body over GitHub's cap", "max_body_bytes: 1048576", "max_body_bytes: 26214401", "server.max_body_bytes", "25 MB"},
		{"body negative", "max_body_bytes: 1048576", "max_body_bytes: -1", "server.max_body_bytes", "got -1"},
		{"one reader", "max_concurrent_webhooks: 16", "max_concurrent_webhooks: 1", "", ""},
		{"most readers", "max_concurrent_webhooks: 16", "max_concurrent_webhooks: 1024", "", ""},
		{"readers negative", "max_concurrent_webhooks: 16", "max_concurrent_webhooks: -1", "server.max_concurrent_webhooks", "between 1 and 1024, got -1"},
		{"too many readers", "max_concurrent_webhooks: 16", "max_concurrent_webhooks: 1025", "server.max_concurrent_webhooks", "got 1025"},
		{"readers not a number", "max_concurrent_webhooks: 16", "max_concurrent_webhooks: many", "server.max_concurrent_webhooks", `want a whole number, got "many"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(edited(t, tt.old, tt.new))
			if tt.path == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var problems Problems
			if !errors.As(err, &problems) {
				t.Fatalf("want Problems at %s, got %v", tt.path, err)
			}
			for _, p := range problems {
				if p.Path == tt.path && strings.Contains(p.Message, tt.message) {
					return
				}
			}
			t.Fatalf("no problem at %s saying %q; got:\n%v", tt.path, tt.message, problems)
		})
	}
}
