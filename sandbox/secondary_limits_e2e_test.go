package sandbox

import (
	"context"
	"testing"
	"time"

	"github.com/ralph-gate/ralph-gate/ghsim"
)

// TestSecondaryLimitsOption: Options.SecondaryLimits turns on the simulator's model of
// GitHub's secondary rate limits (off by default), and the app still reverts and explains
// an illegal move under it.
func TestSecondaryLimitsOption(t *testing.T) {
	t.Parallel()
	own := ghsim.SecondaryLimits{Enabled: true, ContentPerMinute: 40}
	for _, tc := range []struct {
		name    string
		opts    Options
		enabled bool
		perMin  int
	}{
		{name: "off by default", opts: Options{}},
		{name: "on", opts: Options{SecondaryLimits: true}, enabled: true, perMin: 80},
		{name: "the simulator's own limits kept", opts: Options{SecondaryLimits: true, SimOptions: ghsim.Options{SecondaryLimits: own}}, enabled: true, perMin: 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			sb, err := Start(ctx, tc.opts)
			if err != nil {
				t.Fatalf("sandbox: %v", err)
			}
			t.Cleanup(func() { sb.Close() })
			l := sb.Sim.GetSecondaryLimits()
			if l.Enabled != tc.enabled || (tc.enabled && (l.ContentPerMinute != tc.perMin || l.ContentPerHour != 500)) {
				t.Fatalf("secondary limits %+v, want enabled %v with %d a minute", l, tc.enabled, tc.perMin)
			}
			if !tc.enabled {
				return
			}
			e := &env{t: t, sb: sb}
			e.move("agent-1", 3, "In Progress")
			e.settle()
			e.wantState(3, "Backlog")
			if len(e.comments(3)) == 0 {
				t.Error("the illegal move was not explained")
			}
			if st := sb.Sim.SecondaryStats(); st.Answers != 0 {
				t.Errorf("one illegal move met %d secondary-limit answers: %+v", st.Answers, st.ByLimit)
			}
		})
	}
}
