package ghsim

import (
	"maps"
	"sync"
	"time"
)

// RequestLog is the record of every /api/ request: totals, counts per operation and the most
// recent entries (oldest first).
type RequestLog struct {
	Total   int            `json:"total"`
	Counts  map[string]int `json:"counts"`
	Entries []RequestEntry `json:"entries"`
}

// RequestEntry is one HTTP request. Operations holds "graphql:request" and one "graphql:<field>"
// per top-level field (aliases counted separately), or one "rest:<METHOD> <route>".
type RequestEntry struct {
	Seq        int       `json:"seq"`
	Time       time.Time `json:"time"`
	Method     string    `json:"method"`
	Path       string    `json:"path"`
	Operation  string    `json:"operation"`
	Operations []string  `json:"operations"`
	Status     int       `json:"status"`
	TokenOwner string    `json:"token_owner"`
	TokenKind  string    `json:"token_kind"`
	Identity   string    `json:"identity"`
	// Fault names the injected fault that answered the request: "error", "secondary_rate_limit",
	// "primary_rate_limit" (also for a genuinely spent budget).
	Fault string `json:"fault,omitempty"`
	// RetryAfter is the retry-after (seconds) this response carried.
	RetryAfter int `json:"retry_after,omitempty"`
	// EarlyRetry marks a request made by an identity before the retry-after it was last given
	// had elapsed (GitHub answers those with another secondary rate limit).
	EarlyRetry bool `json:"early_retry,omitempty"`
	// SecondaryLimit names the modelled secondary limit that refused the request (the Limit*
	// names of secondary.go); empty for an injected fault.
	SecondaryLimit string  `json:"secondary_limit,omitempty"`
	LatencyMS      int     `json:"latency_ms,omitempty"`
	DurationMS     float64 `json:"duration_ms"`
}

const maxLogEntries = 50000

type requestLog struct {
	mu      sync.Mutex
	total   int
	counts  map[string]int
	entries []RequestEntry
}

func newRequestLog() *requestLog { return &requestLog{counts: map[string]int{}} }

func (l *requestLog) add(e RequestEntry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total++
	e.Seq = l.total
	for _, op := range e.Operations {
		l.counts[op]++
	}
	if e.Fault != "" {
		l.counts["fault:"+e.Fault]++
	}
	if e.EarlyRetry {
		l.counts["fault:early_retry"]++
	}
	if e.SecondaryLimit != "" {
		l.counts["secondary_limit:"+e.SecondaryLimit]++
	}
	if len(l.entries) >= maxLogEntries {
		l.entries = append(l.entries[:0:0], l.entries[len(l.entries)-maxLogEntries/2:]...)
	}
	l.entries = append(l.entries, e)
}

// snapshot copies the log; limit < 0 keeps every retained entry.
func (l *requestLog) snapshot(limit int) RequestLog {
	l.mu.Lock()
	defer l.mu.Unlock()
	entries := l.entries
	if limit >= 0 && len(entries) > limit {
		entries = entries[len(entries)-limit:]
	}
	return RequestLog{Total: l.total, Counts: maps.Clone(l.counts), Entries: append([]RequestEntry{}, entries...)}
}

func (l *requestLog) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total, l.counts, l.entries = 0, map[string]int{}, nil
}
