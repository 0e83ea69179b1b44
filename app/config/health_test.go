package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// The health section: 4h and 24h unless set, each checked with its key path.
func TestHealthSection(t *testing.T) {
	def, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	if def.Health.StaleLockAfter != 4*time.Hour || def.Health.HumanWaitAfter != 24*time.Hour {
		t.Fatalf("defaults: %+v; want 4h and 24h", def.Health)
	}
	without := strings.Replace(string(edited(t, "  stale_lock_after: 4h\n", "")), "  human_wait_after: 24h\n", "", 1)
	cfg, err := Parse([]byte(without))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Health != def.Health {
		t.Fatalf("without the keys: %+v, want %+v", cfg.Health, def.Health)
	}

	tests := []struct {
		name, old, new string
		path, message  string // "" path: valid
	}{
		{"a minute", "stale_lock_after: 4h", "stale_lock_after: 1m", "", ""},
		{"ninety days", "human_wait_after: 24h", "human_wait_after: 2160h", "", ""},
		{"under a minute", "stale_lock_after: 4h", "stale_lock_after: 30s", "health.stale_lock_after", "between 1m and 2160h (90 days), got 30s"},
		{"negative", "human_wait_after: 24h", "human_wait_after: -1h", "health.human_wait_after", "got -1h0m0s"},
		{"over ninety days", "human_wait_after: 24h", "human_wait_after: 2161h", "health.human_wait_after", "got 2161h0m0s"},
		{"not a duration", "stale_lock_after: 4h", "stale_lock_after: 4", "health.stale_lock_after", "want a duration"},
		{"unknown key", "stale_lock_after: 4h", "stale_locks_after: 4h", "health.stale_locks_after", "unknown key"},
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
