package bench

import (
	"bufio"
	"bytes"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"
)

// percentile is the nearest-rank percentile (p in (0,100]) of durations, in milliseconds; NaN
// when there are none.
func percentile(ds []time.Duration, p float64) float64 {
	if len(ds) == 0 {
		return math.NaN()
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	rank = min(max(rank, 1), len(s))
	return ms(s[rank-1])
}

func ms(d time.Duration) float64 { return round(float64(d)/float64(time.Millisecond), 2) }

func round(v float64, places int) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	f := math.Pow(10, float64(places))
	return math.Round(v*f) / f
}

// ratio is a/b rounded, or NaN when b is zero.
func ratio(a, b float64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return round(a/b, 2)
}

// Machine describes where a run happened: the figures mean little without it.
type Machine struct {
	CPUs       int    `json:"cpus"`
	CPUModel   string `json:"cpu_model,omitempty"`
	MemTotalMB int    `json:"mem_total_mb,omitempty"`
	GOOS       string `json:"goos"`
	GOARCH     string `json:"goarch"`
	GoVersion  string `json:"go_version"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	// LoadAvg is /proc/loadavg's 1-minute figure at the start and at the end of the run: other
	// work on a shared machine shows here, and in the tail latencies.
	LoadAvgStart float64 `json:"load_avg_start"`
	LoadAvgEnd   float64 `json:"load_avg_end"`
	Commit       string  `json:"commit,omitempty"`
	Modified     bool    `json:"commit_modified,omitempty"`
}

func machine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, GoVersion: runtime.Version(),
		GOMAXPROCS: runtime.GOMAXPROCS(0)}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	m.LoadAvgStart = loadAvg()
	if kb, ok := procField("/proc/meminfo", "MemTotal"); ok {
		m.MemTotalMB = int(kb / 1024)
	}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				m.Commit = s.Value
			case "vcs.modified":
				m.Modified = s.Value == "true"
			}
		}
	}
	return m
}

// procField reads a "Name:   123 kB" line of a /proc file, in kB.
func procField(path, name string) (int64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || k != name {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			return 0, false
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		return n, err == nil
	}
	return 0, false
}

// peakRSSMB is this process's peak resident set size (VmHWM), in MB; NaN where /proc is absent.
func peakRSSMB() float64 {
	kb, ok := procField("/proc/self/status", "VmHWM")
	if !ok {
		return math.NaN()
	}
	return round(float64(kb)/1024, 1)
}

// resetPeakRSS starts a new VmHWM measurement (Linux ≥ 4.0); false when it cannot, and the peak
// then counts from the process start.
func resetPeakRSS() bool {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}

// loadAvg is the 1-minute load average (0 where /proc is absent).
func loadAvg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}
