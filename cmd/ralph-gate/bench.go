package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/ralph-gate/ralph-gate/app/config"
	"github.com/ralph-gate/ralph-gate/bench"
)

// runBench measures ralph-gate against the built-in GitHub simulator (docs/BENCHMARKS.md).
func runBench(ctx context.Context, args []string, s streams) int {
	fs := newFlags("bench", s)
	quick := fs.Bool("quick", false, "smaller counts: a smoke run well under a minute (CI)")
	asJSON := fs.Bool("json", false, "print one JSON object instead of the table")
	rtt := fs.Duration("rtt", 0, "latency the simulator adds to every GitHub API request (default 50ms)")
	rate := fs.Int("rate", 0, "webhooks per second in the acknowledgement phase (default 100)")
	acks := fs.Int("webhooks", 0, "webhooks sent in the acknowledgement phase (default 1000; quick 200)")
	samples := fs.Int("samples", 0, "illegal moves timed for the revert and comment latency (default 60; quick 12)")
	burst := fs.Int("burst", 0, "moves in the burst (default 1000; quick 200)")
	concurrency := fs.Int("concurrency", 0, "users moving at once during the burst (default 32)")
	reconcile := fs.String("reconcile", "", "comma-separated board sizes to reconcile (default 1000,10000; quick 1000)")
	workers := fs.Int("workers", 0, "enforcement.workers (default: the configuration's, 8)")
	storm := fs.Int("storm", -1, "items one actor moves at once in the storm phase; 0 skips it (default 500; quick 50)")
	stormTimeout := fs.Duration("storm-timeout", 0, "how long the storm is waited for before what it reached is reported (default 5m; quick 30s)")
	secondary := fs.Bool("secondary-limits", true, "have the simulator enforce GitHub's secondary rate limits (--secondary-limits=false: off)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file (go tool pprof)")
	window := fs.Duration("reorder-window", 0, "enforcement.reorder_window (default 2s, the simulator world's; the configuration's default is 5s)")
	verbose := fs.Bool("verbose", false, "show the app's warnings on stderr too (errors are always shown)")
	if code, ok := parseFlags(fs, args, s); !ok {
		return code
	}
	if *rtt < 0 {
		return fail(s, "bench", exitUsage, fmt.Sprintf("--rtt %s is negative", *rtt), "give the latency to add to every API request, such as --rtt 50ms, or --rtt 0 for none")
	}
	if *storm < -1 {
		return fail(s, "bench", exitUsage, fmt.Sprintf("--storm %d is negative", *storm), "give how many items the storm moves, such as --storm 500, or --storm 0 for none")
	}
	if *window < 0 {
		return fail(s, "bench", exitUsage, fmt.Sprintf("--reorder-window %s is negative", *window), "give how long GitHub may take to deliver a change, such as --reorder-window 5s")
	}
	if *stormTimeout < 0 {
		return fail(s, "bench", exitUsage, fmt.Sprintf("--storm-timeout %s is negative", *stormTimeout), "give how long to wait for the storm, such as --storm-timeout 5m")
	}
	o := bench.Defaults(*quick)
	if *rtt > 0 {
		o.RTT = *rtt
	}
	o.Rate, o.AckWebhooks, o.LatencySamples, o.BurstEvents, o.BurstConcurrency, o.Workers =
		pick(*rate, o.Rate), pick(*acks, o.AckWebhooks), pick(*samples, o.LatencySamples), pick(*burst, o.BurstEvents),
		pick(*concurrency, o.BurstConcurrency), *workers
	if *storm >= 0 {
		o.Storm = *storm
	}
	if *stormTimeout > 0 {
		o.StormTimeout = *stormTimeout
	}
	o.NoSecondaryLimits, o.ReorderWindow = !*secondary, *window
	if *reconcile != "" {
		o.ReconcileSizes = nil
		for _, f := range strings.Split(*reconcile, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				return fail(s, "bench", exitUsage, fmt.Sprintf("--reconcile: %q is not a positive number of items", f), "give board sizes separated by commas, such as --reconcile 1000,10000")
			}
			o.ReconcileSizes = append(o.ReconcileSizes, n)
		}
	}
	o.Progress, o.Version = s.err, version
	level := "error"
	if *verbose {
		level = "warn"
	}
	ctx = newLogger(s.err, config.Logging{Level: level, Format: "console"}).WithContext(ctx)

	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return fail(s, "bench", exitError, "cannot write the CPU profile: "+err.Error(), "give --cpuprofile a file in a writable directory")
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fail(s, "bench", exitError, "cannot start the CPU profile: "+err.Error(), "run without --cpuprofile")
		}
		defer pprof.StopCPUProfile()
	}
	began := time.Now()
	res, err := bench.Run(ctx, o)
	if err != nil {
		return fail(s, "bench", exitError, fmt.Sprintf("%v (after %s)", err, time.Since(began).Round(time.Second)), "run it again with --verbose to see the app's warnings")
	}
	if res.Machine.Commit == "" && version != "dev" {
		// Builds without VCS stamping still name what was measured: the -ldflags version.
		res.Machine.Commit = version
	}
	if *asJSON {
		enc := json.NewEncoder(s.out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return fail(s, "bench", exitError, "cannot write the results: "+err.Error(), "")
		}
		return exitOK
	}
	res.WriteTable(s.out)
	return exitOK
}

func pick(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}
