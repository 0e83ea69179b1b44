package config

import "time"

// Reconcile tunes the reconciler: a periodic pass over every enforced project that finds
// values no webhook told ralph-gate about (lost webhooks, changes made while it was down, a
// board it has never seen) and handles them like a webhook.
type Reconcile struct {
	// Interval between passes (a Go duration).
	Interval time.Duration `yaml:"interval"`
	// BudgetShare is the share of GitHub's hourly rate limit a pass may spend per rate-limit
	// window; when it is spent the pass pauses and the next one resumes where it stopped.
	BudgetShare float64 `yaml:"budget_share"`
	// Settle leaves items whose value changed more recently than this to their webhooks.
	Settle time.Duration `yaml:"settle"`
}

// Redelivery tunes the redelivery sweeper, which asks GitHub to redeliver failed webhooks.
type Redelivery struct {
	// Interval between sweeps.
	Interval time.Duration `yaml:"interval"`
	// MaxAge: failures older than this are left alone (GitHub keeps them 3 days).
	MaxAge time.Duration `yaml:"max_age"`
	// MaxPerSweep bounds the redeliveries one sweep requests.
	MaxPerSweep int `yaml:"max_per_sweep"`
	// MaxAttempts bounds the redeliveries of one delivery.
	MaxAttempts int `yaml:"max_attempts"`
}

// reconcileDefaults fills the reconcile and redelivery sections (called from applyDefaults).
// Zero values take the defaults: both always run, they are what keeps the promise when a
// webhook is lost.
func (c *Config) reconcileDefaults() {
	if c.Reconcile.Interval == 0 {
		c.Reconcile.Interval = 10 * time.Minute
	}
	if c.Reconcile.BudgetShare == 0 {
		c.Reconcile.BudgetShare = 0.2
	}
	if c.Reconcile.Settle == 0 {
		c.Reconcile.Settle = time.Minute
	}
	if c.Redelivery.Interval == 0 {
		c.Redelivery.Interval = time.Minute
	}
	if c.Redelivery.MaxAge == 0 {
		c.Redelivery.MaxAge = 72 * time.Hour
	}
	if c.Redelivery.MaxPerSweep == 0 {
		c.Redelivery.MaxPerSweep = 50
	}
	if c.Redelivery.MaxAttempts == 0 {
		c.Redelivery.MaxAttempts = 3
	}
}

// validateReconcile checks the reconcile and redelivery sections (called from
// validateService).
func (c Config) validateReconcile() Problems {
	var problems Problems
	add := func(path, msg string) { problems = append(problems, Problem{Path: path, Message: msg}) }
	if c.Reconcile.Interval < time.Second {
		add("reconcile.interval", "must be at least 1s, got "+c.Reconcile.Interval.String())
	}
	if c.Reconcile.BudgetShare <= 0 || c.Reconcile.BudgetShare > 1 {
		add("reconcile.budget_share", "must be more than 0 and at most 1")
	}
	if c.Reconcile.Settle < 0 || c.Reconcile.Settle > time.Hour {
		add("reconcile.settle", "must be between 0s and 1h, got "+c.Reconcile.Settle.String())
	}
	if c.Redelivery.Interval < time.Second {
		add("redelivery.interval", "must be at least 1s, got "+c.Redelivery.Interval.String())
	}
	if c.Redelivery.MaxAge <= 0 || c.Redelivery.MaxAge > 72*time.Hour {
		add("redelivery.max_age", "must be more than 0 and at most 72h (GitHub keeps deliveries 3 days), got "+c.Redelivery.MaxAge.String())
	}
	if c.Redelivery.MaxPerSweep < 1 || c.Redelivery.MaxPerSweep > 1000 {
		add("redelivery.max_per_sweep", "must be between 1 and 1000")
	}
	if c.Redelivery.MaxAttempts < 1 || c.Redelivery.MaxAttempts > 20 {
		add("redelivery.max_attempts", "must be between 1 and 20")
	}
	return problems
}
