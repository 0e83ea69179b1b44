package sandbox

import (
	"flag"
	"fmt"
	"os"
	"testing"
)

// parallel is how many of the sandbox's tests run at once unless go test is given -parallel.
// They wait far more than they compute (reorder windows, the simulator's deliveries, child
// processes), so go test's default, GOMAXPROCS, would leave a two-CPU machine idle most of
// the run: every top-level test calls t.Parallel but the two that set environment variables,
// TestLargeFamilies, which computes more than it waits, and TestHistoriesEndToEnd, whose timings
// must not stretch.
const parallel = 8

func TestMain(m *testing.M) {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		if err := flag.Set("test.parallel", fmt.Sprint(parallel)); err != nil {
			fmt.Fprintln(os.Stderr, "sandbox: set -test.parallel:", err)
			os.Exit(2)
		}
	}
	os.Exit(m.Run())
}
