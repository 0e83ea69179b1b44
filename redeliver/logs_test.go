package redeliver

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v89/github"
	"github.com/rs/zerolog"
)

// An idle sweep (nothing failed, or nothing left to redeliver) logs at debug only: the sweeper
// runs every minute. A sweep that redelivers says so at info, and a delivery given up is
// warned about once, not at every sweep.
func TestSweepLogsOnlyWhatItDid(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	type sweep struct {
		deliveries []*github.HookDelivery // newest first
		want       []string               // level and message of each line above debug, in order
	}
	tests := []struct {
		name     string
		attempts int // Options.MaxAttempts
		sweeps   []sweep
	}{
		{
			name: "idle", attempts: 3,
			sweeps: []sweep{
				{deliveries: nil},
				{deliveries: []*github.HookDelivery{delivery(1, "a", 200, now.Add(-time.Minute))}},
				{deliveries: []*github.HookDelivery{delivery(1, "a", 200, now.Add(-time.Minute))}},
			},
		},
		{
			name: "a failure redelivered, then waited for", attempts: 3,
			sweeps: []sweep{
				{deliveries: []*github.HookDelivery{delivery(1, "a", 502, now.Add(-time.Minute))},
					want: []string{"info redelivered a failed webhook", "info redelivery sweep"}},
				{deliveries: []*github.HookDelivery{delivery(1, "a", 502, now.Add(-time.Minute))}},
			},
		},
		{
			name: "given up: warned once", attempts: 1,
			sweeps: []sweep{
				{deliveries: []*github.HookDelivery{delivery(1, "a", 502, now.Add(-time.Minute))},
					want: []string{"info redelivered a failed webhook", "info redelivery sweep"}},
				{deliveries: []*github.HookDelivery{delivery(2, "a", 502, now), delivery(1, "a", 502, now.Add(-time.Minute))},
					want: []string{"warn gave up redelivering a failed webhook: the reconciler will judge its change"}},
				{deliveries: []*github.HookDelivery{delivery(2, "a", 502, now), delivery(1, "a", 502, now.Add(-time.Minute))}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hooks := &fakeHooks{}
			s := New(func(context.Context) (Hooks, error) { return hooks, nil }, memCursors{},
				Options{MaxAttempts: tt.attempts, Confirm: 10 * time.Millisecond, ConfirmPoll: 5 * time.Millisecond}, func() time.Time { return now })
			for i, sw := range tt.sweeps {
				hooks.deliveries = sw.deliveries
				var buf bytes.Buffer
				ctx := zerolog.New(&buf).Level(zerolog.DebugLevel).WithContext(context.Background())
				if _, err := s.Sweep(ctx); err != nil {
					t.Fatalf("sweep %d: %v", i, err)
				}
				var got []string
				debug := 0
				for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
					var line struct{ Level, Message string }
					if err := json.Unmarshal([]byte(l), &line); err != nil {
						t.Fatalf("sweep %d: %v: %q", i, err, l)
					}
					if line.Level == "debug" {
						debug++
						continue
					}
					got = append(got, line.Level+" "+line.Message)
				}
				if strings.Join(got, "\n") != strings.Join(sw.want, "\n") {
					t.Errorf("sweep %d logged\n%s\nabove debug; want\n%s", i, strings.Join(got, "\n"), strings.Join(sw.want, "\n"))
				}
				if len(sw.want) == 0 && debug == 0 {
					t.Errorf("sweep %d logged nothing at all; want its summary at debug", i)
				}
			}
		})
	}
}
