package config

import "time"

// Health sets when the board health report (`ralph-gate report`, the board_health tool, the
// health pages) calls an age a problem.
type Health struct {
	// StaleLockAfter: a lock held longer than this is reported as stale.
	StaleLockAfter time.Duration `yaml:"stale_lock_after"`
	// HumanWaitAfter: an item waiting longer than this in a human_gate state is reported.
	HumanWaitAfter time.Duration `yaml:"human_wait_after"`
}

// healthDefaults fills the health section (called from applyDefaults); zero takes the default.
func (c *Config) healthDefaults() {
	if c.Health.StaleLockAfter == 0 {
		c.Health.StaleLockAfter = 4 * time.Hour
	}
	if c.Health.HumanWaitAfter == 0 {
		c.Health.HumanWaitAfter = 24 * time.Hour
	}
}

// validateHealth checks the health section (called from validateService).
func (c Config) validateHealth() Problems {
	var problems Problems
	for _, d := range []struct {
		path string
		v    time.Duration
	}{
		{"health.stale_lock_after", c.Health.StaleLockAfter},
		{"health.human_wait_after", c.Health.HumanWaitAfter},
	} {
		if d.v < time.Minute || d.v > 90*24*time.Hour {
			problems = append(problems, Problem{Path: d.path, Message: "must be between 1m and 2160h (90 days), got " + d.v.String()})
		}
	}
	return problems
}
