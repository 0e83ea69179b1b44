package main

import (
	"os"
	"regexp"
	"strconv"
	"sync"
	"testing"
)

// The demo's automation reaches the audit log every time: its cascade (step 5) and its
// convergence (step 6) are audited `automated` with their cause in every run, never left as
// "ignored … our own write" (2 runs in 8 used to lose one). The runs go at once, each with its
// own simulator, app and store: RALPH_GATE_DEMO_RUNS sets how many (10; 2 under -short).
func TestDemoAuditsEveryAutomatedMove(t *testing.T) {
	t.Parallel()
	runs := 10
	if testing.Short() {
		runs = 2
	}
	if v := os.Getenv("RALPH_GATE_DEMO_RUNS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			t.Fatalf("RALPH_GATE_DEMO_RUNS=%q: want a positive number", v)
		}
		runs = n
	}
	want := []*regexp.Regexp{
		regexp.MustCompile(`automated #2 +ralph-gate\[bot\] \(app\) "Research Needed" → "Ready for Plan": cascade: parent #1 moved to Ready for Plan`),
		regexp.MustCompile(`automated #3 +ralph-gate\[bot\] \(app\) "Backlog" → "Ready for Plan": cascade: parent #1 moved to Ready for Plan`),
		regexp.MustCompile(`automated #9 +ralph-gate\[bot\] \(app\) "Research Needed" → "Ready for Plan": convergence: every child of #9`),
	}
	// At once in goroutines of this test (t.Parallel would run only as many as the machine has
	// cores): a demo waits for GitHub's delivery window far more than it computes.
	type result struct {
		code     int
		out, err string
	}
	results := make([]result, runs)
	var wg sync.WaitGroup
	for i := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i].code, results[i].out, results[i].err = runCLI(t, "", "demo")
		}()
	}
	wg.Wait()
	for i, r := range results {
		if r.code != exitOK {
			t.Errorf("run %d: demo exited %d\nstderr:\n%s", i+1, r.code, r.err)
			continue
		}
		for _, re := range want {
			if !re.MatchString(r.out) {
				t.Errorf("run %d: the audit log printed by the demo lacks %s:\n%s", i+1, re, r.out)
			}
		}
	}
}
