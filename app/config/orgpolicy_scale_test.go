package config

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// A policy file is written by anyone who may push to the organization's repository: what it
// costs to validate grows with its size, never faster, and it gets a short list of problems.

// scaleShape writes a policy file of about size bytes (a little more for the deep ones), of
// one worst-case shape.
type scaleShape struct {
	name  string
	valid bool // the file is valid at every size
	write func(size int) string
}

// fill writes head, then item(0), item(1), … until the text holds size bytes.
func fill(size int, head string, item func(i int) string) string {
	var b strings.Builder
	b.WriteString(head)
	for i := 0; b.Len() < size; i++ {
		b.WriteString(item(i))
	}
	return b.String()
}

func scaleShapes() []scaleShape {
	const project = "projects: [{number: 1}]\n"
	names := func(format string, from, n int) string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf(format, from+i))
		}
		return strings.Join(out, ", ")
	}
	return []scaleShape{
		// The file that took minutes: states naming 20 states each that do not exist, every
		// one a problem with a did-you-mean looked for among all the states.
		{"unknown states", false, func(size int) string {
			return fill(size, project+"workflow:\n  states:\n", func(i int) string {
				return fmt.Sprintf("    - {name: State %d, next: [%s]}\n", i, names("Stat %d", i*20, 20))
			})
		}},
		// As many states as references to states that do not exist.
		{"one unknown state per state", false, func(size int) string {
			return fill(size, project+"workflow:\n  states:\n", func(i int) string {
				return fmt.Sprintf("    - {name: State %d, kind: queue, next: [Stat %d]}\n", i, i)
			})
		}},
		// A chain of states after the default's, as many as the size allows.
		{"many states", false, func(size int) string {
			return fill(size, project+"workflow:\n  initial: [Backlog, S0]\n  states:\n", func(i int) string {
				return fmt.Sprintf("    - {name: S%d, kind: queue, next: [S%d, Done]}\n", i, i+1)
			})
		}},
		// The largest valid file: 400 states after the default's, each reachable and naming
		// 20 others, with a description that grows with the size.
		{"a valid file", true, func(size int) string {
			const states = 400
			var b strings.Builder
			b.WriteString(project + "workflow:\n  initial: [Backlog, S0]\n  states:\n")
			description := strings.Repeat("x", max(size/states-300, 1))
			for i := range states {
				next := names("S%d", i+1, 20)
				if i+20 >= states {
					next = "Done"
				}
				fmt.Fprintf(&b, "    - {name: S%d, kind: queue, next: [%s], description: %s}\n", i, next, description)
			}
			return b.String()
		}},
		// Operator's keys nested as deep as YAML allows, again and again.
		{"deep nesting", false, func(size int) string {
			const depth = 5000
			return fill(size, project+"server:\n", func(i int) string {
				return fmt.Sprintf("  k%d: %s1%s\n", i, strings.Repeat("{a: ", depth), strings.Repeat("}", depth))
			})
		}},
		// Unknown keys, as many as a mapping may hold, each a problem listing the known keys.
		{"unknown keys", false, func(size int) string {
			return fill(size, project+"workflow:\n  states:\n", func(i int) string {
				return fmt.Sprintf("    - {name: State %d, %s}\n", i, names("colour%d: red", 0, 400))
			})
		}},
		// A key given again and again in each mapping: yaml.v3 would compare each with every
		// other, and report every pair.
		{"duplicate keys", false, func(size int) string {
			return fill(size, project+"workflow:\n  states:\n", func(i int) string {
				return fmt.Sprintf("    - {name: State %d%s}\n", i, strings.Repeat(", kind: queue", 400))
			})
		}},
		// Roles owning states that do not exist.
		{"roles", false, func(size int) string {
			return fill(size, project+"actors:\n  roles:\n", func(i int) string {
				return fmt.Sprintf("    r%d: {agents: [a-%d], owns: [%s]}\n", i, i, names("Backlo %d", i*10, 10))
			})
		}},
		// A long role name, which every problem below it would repeat in its key path.
		{"a long key", false, func(size int) string {
			return fill(size, project+"actors:\n  roles:\n    ? "+strings.Repeat("r", size/2)+"\n    :\n", func(i int) string {
				return fmt.Sprintf("      k%d: 1\n", i)
			})
		}},
		// One list of unknown states, named again by every state through an alias.
		{"aliases", false, func(size int) string {
			return fill(size, project+"workflow:\n  states:\n    - {name: State, next: &n ["+names("Stat %d", 0, 1000)+"]}\n", func(i int) string {
				return fmt.Sprintf("    - {name: State %d, next: *n}\n", i)
			})
		}},
	}
}

// The sizes of the benchmark, and the smallest and largest of the scale test: the largest well
// past any real file (config.yml's workflow is 8 KB), and more than half of MaxFileBytes.
var scaleSizes = []int{32 << 10, 128 << 10, 600 << 10}

// mallocs is how many allocations f makes: a count of its work that, unlike its time, does
// not depend on the machine.
func mallocs(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.Mallocs - before.Mallocs
}

// Files of every worst-case shape, of 32 KB and 600 KB: each gets at most MaxProblems problems
// and one saying how many more, each problem short, and the work (counted in allocations) per
// byte of the larger is at most twice that of the smaller. Before validation was made linear,
// 600 KB of unknown states took minutes (and 32 KB of aliases of them one), the allocations
// growing with the square of the size; this test takes a second or two.
func TestForOrganizationScales(t *testing.T) {
	dep := deployment(t)
	for _, shape := range scaleShapes() {
		t.Run(shape.name, func(t *testing.T) {
			var perByte []float64
			for _, size := range []int{scaleSizes[0], scaleSizes[len(scaleSizes)-1]} {
				data := []byte(shape.write(size))
				if len(data) > MaxFileBytes {
					t.Fatalf("%d bytes: more than a policy file may hold", len(data))
				}
				var cfg Config
				var problems Problems
				n := mallocs(func() { cfg, problems = dep.ForOrganization("acme", data) })
				perByte = append(perByte, float64(n)/float64(len(data)))
				if shape.valid != (len(problems) == 0) {
					t.Fatalf("%d bytes: valid %v, problems %v", len(data), shape.valid, problems)
				}
				if len(problems) > MaxProblems+1 {
					t.Errorf("%d bytes: %d problems, want at most %d", len(data), len(problems), MaxProblems+1)
				}
				for _, p := range problems {
					if len(p.Path) > maxProblemText || len(p.Message) > maxProblemText || p.Line < 1 {
						t.Errorf("%d bytes: a problem of %d+%d bytes, line %d", len(data), len(p.Path), len(p.Message), p.Line)
					}
				}
				if shape.valid {
					if _, err := cfg.Machine(); err != nil {
						t.Fatalf("%d bytes: %v", len(data), err)
					}
				}
				t.Logf("%7d bytes: %3d problems, %8d allocations (%.1f a byte)", len(data), len(problems), n, perByte[len(perByte)-1])
			}
			if first, last := perByte[0], perByte[len(perByte)-1]; last > 2*first {
				t.Errorf("%.1f allocations a byte at %d KB, %.1f at %d KB: the work grows faster than the file",
					last, scaleSizes[len(scaleSizes)-1]>>10, first, scaleSizes[0]>>10)
			}
		})
	}
}

// The bounds of a policy file are a refusal, not the fix: validating config.yml, which has
// none, costs as much per byte for 10 000 references to unknown states as for 500.
func TestValidationScalesWithoutBounds(t *testing.T) {
	for _, shape := range scaleShapes()[:2] {
		t.Run(shape.name, func(t *testing.T) {
			var perByte []float64
			for _, size := range []int{32 << 10, 300 << 10} {
				data := []byte(strings.Replace(shape.write(size), "{number: 1}", "{owner: acme, number: 1}", 1))
				var problems Problems
				n := mallocs(func() { _, problems = parse(data) })
				perByte = append(perByte, float64(n)/float64(len(data)))
				if len(problems) < size/200 {
					t.Fatalf("%d bytes: %d problems, want one for each reference to an unknown state", len(data), len(problems))
				}
				t.Logf("%7d bytes: %5d problems, %8d allocations (%.1f a byte)", len(data), len(problems), n, perByte[len(perByte)-1])
			}
			if perByte[1] > 2*perByte[0] {
				t.Errorf("%.1f allocations a byte at 300 KB, %.1f at 32 KB: the work grows faster than the file", perByte[1], perByte[0])
			}
		})
	}
}

// BenchmarkForOrganization measures each shape at each size:
//
//	go test ./app/config -run '^$' -bench BenchmarkForOrganization -benchtime 3x
func BenchmarkForOrganization(b *testing.B) {
	dep := deployment(b)
	for _, shape := range scaleShapes() {
		for _, size := range scaleSizes {
			data := []byte(shape.write(size))
			b.Run(fmt.Sprintf("%s/%dKB", strings.ReplaceAll(shape.name, " ", "_"), size>>10), func(b *testing.B) {
				b.SetBytes(int64(len(data)))
				b.ReportAllocs()
				for b.Loop() {
					dep.ForOrganization("acme", data)
				}
			})
		}
	}
}
