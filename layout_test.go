package ralphgate_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// layer is one package's row of the layering table: what it may import directly, besides
// the standard library. Only non-test imports are checked (go list's Imports, not
// TestImports).
type layer struct {
	// internal lists the packages of this module it may import, relative to the module
	// root ("." is the root package).
	internal []string
	// external lists the modules (not packages) outside the standard library it may import
	// from.
	external []string
}

// Modules outside the standard library, named once so the rows stay short.
const (
	goGitHub      = "github.com/google/go-github/v89"
	httpcache     = "github.com/gregjones/httpcache"
	pgx           = "github.com/jackc/pgx/v5"
	mcpSDK        = "github.com/modelcontextprotocol/go-sdk"
	githubapp     = "github.com/palantir/go-githubapp"
	prometheus    = "github.com/prometheus/client_golang"
	river         = "github.com/riverqueue/river"
	riverdriver   = "github.com/riverqueue/river/riverdriver"
	riverpgxv5    = "github.com/riverqueue/river/riverdriver/riverpgxv5"
	riversqlite   = "github.com/riverqueue/river/riverdriver/riversqlite"
	rivertype     = "github.com/riverqueue/river/rivertype"
	zerolog       = "github.com/rs/zerolog"
	gqlparser     = "github.com/vektah/gqlparser/v2"
	yaml          = "gopkg.in/yaml.v3"
	moderncSQLite = "modernc.org/sqlite"
	xoauth2       = "golang.org/x/oauth2"
	xtime         = "golang.org/x/time"
)

// layering pins the direct imports of every package of the module. It is the intended
// layering: a package that imports something its row does not allow fails the test, and so
// does a row (or an entry of a row) that no longer matches the code, so the table stays exact.
// Changing the layering means changing this table, on purpose, in review.
var layering = map[string]layer{
	// The default configuration, embedded so the binary works without any file.
	".": {},
	// Wiring: configuration, GitHub clients, store, durable queue, webhook handlers and
	// HTTP routes, run until shutdown. The only place that knows every adapter.
	"app": {
		internal: []string{"app/config", "enforce", "ghboard", "handlers", "health", "internal/drain", "jobs", "mcpserver", "metrics", "payload", "policy", "redeliver", "store", "web", "webauth"},
		external: []string{goGitHub, httpcache, mcpSDK, githubapp, riverpgxv5, riversqlite, zerolog},
	},
	// Decodes, defaults and validates the configuration file.
	"app/config": {
		internal: []string{".", "internal/dsn", "policy"},
		external: []string{yaml},
	},
	// Benchmarks against the built-in GitHub simulator, in one process.
	"bench": {
		internal: []string{"app", "app/config", "enforce", "ghboard", "ghsim", "sandbox", "store"},
	},
	// Command ghsim: the GitHub simulator as its own process.
	"cmd/ghsim": {
		internal: []string{"ghsim"},
	},
	// Command ralph-gate: the GitHub App and its tools (validate, evaluate, demo, bench…).
	"cmd/ralph-gate": {
		internal: []string{"app", "app/config", "bench", "enforce", "ghboard", "health", "policy", "sandbox", "store"},
		external: []string{goGitHub, mcpSDK, githubapp, yaml, zerolog},
	},
	// The use cases: observe a Workflow State change, ask policy, act (revert, explain,
	// record). Declares its ports; knows no GitHub client, no HTTP, no SQL.
	"enforce": {
		internal: []string{"internal/drain", "marker", "policy"},
		external: []string{zerolog},
	},
	// The GitHub adapter: implements enforce.Board with GitHub's GraphQL API.
	"ghboard": {
		internal: []string{"enforce", "internal/spend", "payload"},
	},
	// An in-memory GitHub (REST, GraphQL, signed webhooks, faults) for tests, demo and
	// benchmarks.
	"ghsim": {
		external: []string{gqlparser, yaml},
	},
	// One thin handler per webhook event.
	"handlers": {
		internal: []string{"enforce", "payload"},
		external: []string{zerolog},
	},
	// The board health report: each enforced project's health computed from the store's
	// records and the reconciler's snapshot (declares the port it reads).
	"health": {
		internal: []string{"enforce", "policy"},
	},
	// The reference judge of a true history of moves, for the history suites.
	// Tells a file path from a PostgreSQL connection string and redacts one (config, store).
	"internal/dsn": {},
	// Waits for work under way to end, or a shutdown's deadline (app, enforce).
	"internal/drain": {},
	// Counts the GitHub requests made on behalf of one piece of work (a façade tool call).
	"internal/spend": {},
	"internal/oracle": {
		internal: []string{"policy"},
	},
	// Durable webhook work with River: insert at intake, process with retries.
	"jobs": {
		internal: []string{"enforce"},
		external: []string{river, riverdriver, rivertype, zerolog},
	},
	// Reads and writes the hidden machine-readable markers in the app's comments.
	"marker": {},
	// The MCP façade for agents: typed tools mapped to enforce use cases.
	"mcpserver": {
		internal: []string{"enforce", "health", "internal/spend", "mcpserver/toolspec", "policy"},
		external: []string{mcpSDK, zerolog, xtime},
	},
	// The MCP contract: tool names, descriptions, typed input and output, input validation.
	"mcpserver/toolspec": {
		internal: []string{"policy"},
	},
	// Prometheus series and the adapters that feed them.
	"metrics": {
		internal: []string{"internal/spend"},
		external: []string{prometheus},
	},
	// Decodes what GitHub sends: webhook payloads and GraphQL response envelopes.
	"payload": {
		external: []string{goGitHub},
	},
	// The workflow brain: state machine, intents, commands, decisions, plans, ranking.
	"policy": {},
	// The redelivery sweeper.
	"redeliver": {
		external: []string{goGitHub, zerolog},
	},
	// ralph-gate against the built-in simulator in one process: demo, end-to-end tests,
	// benchmarks.
	"sandbox": {
		internal: []string{"app", "app/config", "enforce", "ghboard", "ghsim"},
	},
	// Persistence (Postgres or SQLite): item records, audit log, observations, violation
	// comments, reconciler cursors.
	"store": {
		internal: []string{"enforce", "internal/dsn"},
		external: []string{pgx, moderncSQLite, zerolog},
	},
	// The board health pages: server-rendered HTML of health reports and audit decisions.
	"web": {
		internal: []string{"enforce", "health", "policy", "store"},
		external: []string{zerolog},
	},
	// The sign-in of the board health pages: GitHub's OAuth web flow (go-githubapp's oauth2),
	// signed session cookies, organization membership checked with the App's installations.
	"webauth": {
		external: []string{goGitHub, githubapp, zerolog, xoauth2},
	},
}

// listedPackage is the part of `go list -json` this test reads.
type listedPackage struct {
	ImportPath string
	Standard   bool
	DepOnly    bool
	Imports    []string
	Module     *struct {
		Path string
		Main bool
	}
	Error *struct{ Err string }
}

// goList runs `go list -deps -json` on patterns and returns every package it prints, in
// order, with dependencies before the packages that import them.
func goList(t *testing.T, patterns ...string) []listedPackage {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH")
	}
	args := append([]string{"list", "-deps", "-json=ImportPath,Standard,DepOnly,Imports,Module,Error"}, patterns...)
	cmd := exec.Command("go", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	var pkgs []listedPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decoding go list output: %v", err)
		}
		if p.Error != nil {
			t.Fatalf("go list: %s: %s", p.ImportPath, p.Error.Err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// graph is the module's packages and everything they depend on, as go list reports them.
type graph struct {
	module string                    // the main module's path
	byPath map[string]*listedPackage // every package, by import path
	own    []string                  // the module's packages, relative to the module root
}

func loadGraph(t *testing.T, patterns ...string) graph {
	t.Helper()
	pkgs := goList(t, patterns...)
	g := graph{byPath: make(map[string]*listedPackage, len(pkgs))}
	for i := range pkgs {
		p := &pkgs[i]
		g.byPath[p.ImportPath] = p
		if p.Module != nil && p.Module.Main {
			g.module = p.Module.Path
		}
	}
	if g.module == "" {
		t.Fatal("go list reported no package of the main module")
	}
	for _, p := range pkgs {
		if g.isOwn(p.ImportPath) && !p.DepOnly {
			g.own = append(g.own, g.rel(p.ImportPath))
		}
	}
	slices.Sort(g.own)
	return g
}

// isOwn reports whether an import path is a package of the main module.
func (g graph) isOwn(path string) bool {
	p := g.byPath[path]
	return p != nil && p.Module != nil && p.Module.Main
}

// rel is a package of the main module relative to the module root ("." for the root).
func (g graph) rel(path string) string {
	if path == g.module {
		return "."
	}
	return strings.TrimPrefix(path, g.module+"/")
}

// abs is the import path of a package named relative to the module root.
func (g graph) abs(rel string) string {
	if rel == "." {
		return g.module
	}
	return g.module + "/" + rel
}

// isStd reports whether an import path is in the standard library ("C" counts: cgo).
func (g graph) isStd(path string) bool {
	if path == "C" {
		return true
	}
	p := g.byPath[path]
	return p != nil && p.Standard
}

// moduleOf is the module an imported package belongs to ("" for the standard library).
func (g graph) moduleOf(path string) string {
	p := g.byPath[path]
	if p == nil || p.Module == nil {
		return ""
	}
	return p.Module.Path
}

// imports returns a module package's direct imports split into module-internal packages
// (relative) and external modules, both sorted and without duplicates.
func (g graph) imports(rel string) (internal, external []string) {
	p := g.byPath[g.abs(rel)]
	for _, imp := range p.Imports {
		switch {
		case g.isStd(imp):
		case g.isOwn(imp):
			internal = append(internal, g.rel(imp))
		default:
			mod := g.moduleOf(imp)
			if mod == "" {
				mod = imp // unknown to go list: name the package itself
			}
			external = append(external, mod)
		}
	}
	slices.Sort(internal)
	slices.Sort(external)
	return slices.Compact(internal), slices.Compact(external)
}

// chain names how from reaches to through direct imports ("a → b → c"), or "" if it does not.
func (g graph) chain(from, to string) string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		if cur == to {
			var path []string
			for n := to; n != ""; n = prev[n] {
				if g.isOwn(n) {
					path = append(path, g.rel(n))
				} else {
					path = append(path, n)
				}
			}
			slices.Reverse(path)
			return strings.Join(path, " → ")
		}
		p := g.byPath[cur]
		if p == nil {
			continue
		}
		for _, imp := range p.Imports {
			if _, seen := prev[imp]; !seen {
				prev[imp] = cur
				queue = append(queue, imp)
			}
		}
	}
	return ""
}

// isSQLOrRiverDriver reports whether a module is a SQL driver or a River driver.
func isSQLOrRiverDriver(module string) bool {
	for _, s := range []string{"pgx", "sqlite", "lib/pq"} {
		if strings.Contains(module, s) {
			return true
		}
	}
	return module == riverdriver || strings.HasPrefix(module, riverdriver+"/")
}

func TestLayout(t *testing.T) {
	g := loadGraph(t, "./...")

	t.Run("every package imports only what its row allows", func(t *testing.T) {
		for _, rel := range g.own {
			row, ok := layering[rel]
			if !ok {
				internal, external := g.imports(rel)
				t.Errorf("package %s has no row in the layering table of layout_test.go; add one "+
					"with a comment saying what it is for (it imports internal %q, external %q)",
					rel, internal, external)
				continue
			}
			internal, external := g.imports(rel)
			checkRow(t, rel, "module-internal package", internal, row.internal)
			checkRow(t, rel, "external module", external, row.external)
		}
	})

	t.Run("every row names an existing package", func(t *testing.T) {
		for rel, row := range layering {
			if !slices.Contains(g.own, rel) {
				t.Errorf("the layering table has a row for %s, which is no longer a package of "+
					"the module; remove the row", rel)
			}
			for _, dep := range row.internal {
				if !g.isOwn(g.abs(dep)) {
					t.Errorf("the row of %s allows importing %s, which is no longer a package "+
						"of the module", rel, dep)
				}
			}
		}
	})

	t.Run("policy, marker and internal/oracle import only the standard library", func(t *testing.T) {
		// Pure packages: no I/O, no third-party code. Among themselves they may import only
		// what they import today.
		pure := map[string][]string{
			"policy":          nil,
			"marker":          nil,
			"internal/oracle": {"policy"},
		}
		for _, rel := range slices.Sorted(maps.Keys(pure)) {
			siblings := pure[rel]
			p := g.byPath[g.abs(rel)]
			if p == nil {
				t.Errorf("package %s no longer exists; update this rule", rel)
				continue
			}
			for _, imp := range p.Imports {
				switch {
				case g.isStd(imp):
				case g.isOwn(imp) && slices.Contains(siblings, g.rel(imp)):
				case g.isOwn(imp) && len(siblings) == 0:
					t.Errorf("%s must import only the standard library, but imports %s of this module",
						rel, g.rel(imp))
				case g.isOwn(imp):
					t.Errorf("%s must import only the standard library and %s, but imports %s",
						rel, strings.Join(siblings, ", "), g.rel(imp))
				default:
					t.Errorf("%s must import only the standard library, but imports %s (module %s)",
						rel, imp, g.moduleOf(imp))
				}
			}
		}
	})

	t.Run("enforce depends on no SQL, HTTP, GitHub client or River", func(t *testing.T) {
		enforce := g.abs("enforce")
		deps := goList(t, "./enforce")
		found := map[string][]string{} // why → the forbidden packages, nearest first
		var whys []string
		for _, p := range deps {
			mod := ""
			if p.Module != nil {
				mod = p.Module.Path
			}
			var why string
			switch {
			case p.ImportPath == "database/sql" || strings.HasPrefix(p.ImportPath, "database/sql/"):
				why = "database/sql"
			case p.ImportPath == "net/http" || strings.HasPrefix(p.ImportPath, "net/http/"):
				why = "net/http"
			case strings.Contains(mod, "pgx") || strings.Contains(mod, "sqlite") || strings.Contains(mod, "lib/pq"):
				why = "a SQL driver"
			case strings.Contains(mod, "go-github"):
				why = "a GitHub client (go-github)"
			case mod == river || strings.HasPrefix(mod, river+"/"):
				why = "River"
			default:
				continue
			}
			if _, seen := found[why]; !seen {
				whys = append(whys, why)
			}
			found[why] = append(found[why], p.ImportPath)
		}
		for _, why := range whys {
			pkgs := found[why]
			// Name the shortest way in; the rest usually follows from it.
			slices.SortStableFunc(pkgs, func(a, b string) int {
				return len(strings.Split(g.chain(enforce, a), " → ")) - len(strings.Split(g.chain(enforce, b), " → "))
			})
			t.Errorf("enforce must not depend on %s, but does: %s (%d forbidden package(s) in all: %s)",
				why, g.chain(enforce, pkgs[0]), len(pkgs), strings.Join(pkgs, ", "))
		}
	})

	t.Run("enforce does not import adapters or wiring", func(t *testing.T) {
		enforce := g.abs("enforce")
		for _, rel := range []string{"store", "ghboard", "app", "handlers", "jobs", "mcpserver"} {
			if c := g.chain(enforce, g.abs(rel)); c != "" {
				t.Errorf("enforce must not import %s, directly or not, but does: %s", rel, c)
			}
		}
	})

	t.Run("only store, jobs and app import SQL or River drivers", func(t *testing.T) {
		allowed := []string{"store", "jobs", "app"}
		for _, rel := range g.own {
			if slices.Contains(allowed, rel) {
				continue
			}
			for _, imp := range g.byPath[g.abs(rel)].Imports {
				if mod := g.moduleOf(imp); !g.isOwn(imp) && isSQLOrRiverDriver(mod) {
					t.Errorf("only %q may import SQL or River drivers, but %s imports %s (module %s)",
						allowed, rel, imp, mod)
				}
			}
		}
	})
}

// checkRow fails for every import not allowed by a row, and for every entry of the row that
// the package no longer imports.
func checkRow(t *testing.T, pkg, kind string, got, allowed []string) {
	t.Helper()
	for _, imp := range got {
		if !slices.Contains(allowed, imp) {
			t.Errorf("%s imports %s %s, which its row in layout_test.go does not allow; "+
				"if the layering changes on purpose, add it to the row", pkg, kind, imp)
		}
	}
	for _, a := range allowed {
		if !slices.Contains(got, a) {
			t.Errorf("the row of %s in layout_test.go allows %s %s, which %s no longer imports; "+
				"remove it so the table stays exact", pkg, kind, a, pkg)
		}
	}
}
