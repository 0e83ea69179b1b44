package enforce

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// maxParams is the most parameters a function or method of enforce may take; past it, the
// parameters want to be a struct.
const maxParams = 5

// parseOwnFiles parses every non-test .go file of this directory, with comments.
func parseOwnFiles(t *testing.T) (*token.FileSet, []*ast.File) {
	t.Helper()
	fset := token.NewFileSet()
	return fset, parseDir(t, fset, ".")
}

// parseDir parses every non-test .go file of a directory, with comments.
func parseDir(t *testing.T, fset *token.FileSet, dir string) []*ast.File {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		t.Fatalf("no non-test .go file found in %s", dir)
	}
	return files
}

// countParams counts the parameters of a signature: each name counts ("a, b string" is 2),
// an unnamed parameter counts 1; a receiver is not part of ft.Params.
func countParams(ft *ast.FuncType) int {
	n := 0
	if ft.Params == nil {
		return 0
	}
	for _, f := range ft.Params.List {
		if len(f.Names) == 0 {
			n++
		} else {
			n += len(f.Names)
		}
	}
	return n
}

// receiverType is the name of a method's receiver type, without pointer or type parameters.
func receiverType(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return ""
	}
	expr := fd.Recv.List[0].Type
	for {
		switch e := expr.(type) {
		case *ast.StarExpr:
			expr = e.X
		case *ast.IndexExpr:
			expr = e.X
		case *ast.IndexListExpr:
			expr = e.X
		case *ast.ParenExpr:
			expr = e.X
		case *ast.Ident:
			return e.Name
		default:
			return ""
		}
	}
}

// funcName is a function's name, or Type.Method for a method.
func funcName(fd *ast.FuncDecl) string {
	if r := receiverType(fd); r != "" {
		return r + "." + fd.Name.Name
	}
	return fd.Name.Name
}

func hasDoc(cg *ast.CommentGroup) bool {
	return cg != nil && strings.TrimSpace(cg.Text()) != ""
}

// TestShapeParams fails for every function, method or interface method of enforce that
// takes more than maxParams parameters.
func TestShapeParams(t *testing.T) {
	fset, files := parseOwnFiles(t)
	var bad []string
	report := func(pos token.Pos, name string, n int) {
		bad = append(bad, fmt.Sprintf("%s: %s takes %d parameters", fset.Position(pos), name, n))
	}
	for _, f := range files {
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if n := countParams(d.Type); n > maxParams {
					report(d.Pos(), funcName(d), n)
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					ts, ok := spec.(*ast.TypeSpec)
					if !ok {
						continue
					}
					it, ok := ts.Type.(*ast.InterfaceType)
					if !ok {
						continue
					}
					for _, m := range it.Methods.List {
						ft, ok := m.Type.(*ast.FuncType)
						if !ok || len(m.Names) == 0 {
							continue // an embedded interface or a type constraint
						}
						if n := countParams(ft); n > maxParams {
							report(m.Pos(), ts.Name.Name+"."+m.Names[0].Name, n)
						}
					}
				}
			}
		}
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Errorf("%s; at most %d allowed: group them in a struct", b, maxParams)
	}
}

// TestShapeDocs fails for every exported type, function, or exported method of an exported
// type of enforce that has no doc comment.
func TestShapeDocs(t *testing.T) {
	fset, files := parseOwnFiles(t)
	var bad []string
	for _, f := range files {
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				if r := receiverType(d); r != "" && !ast.IsExported(r) {
					continue // not part of the package's API
				}
				if !hasDoc(d.Doc) {
					kind := "function"
					if d.Recv != nil {
						kind = "method"
					}
					bad = append(bad, fset.Position(d.Pos()).String()+": exported "+kind+" "+funcName(d)+" has no doc comment")
				}
			case *ast.GenDecl:
				if d.Tok != token.TYPE {
					continue
				}
				for _, spec := range d.Specs {
					ts := spec.(*ast.TypeSpec)
					if !ts.Name.IsExported() {
						continue
					}
					doc := ts.Doc
					if doc == nil && len(d.Specs) == 1 {
						doc = d.Doc // type T … with its comment above the keyword
					}
					if !hasDoc(doc) {
						bad = append(bad, fset.Position(ts.Pos()).String()+": exported type "+ts.Name.Name+" has no doc comment")
					}
				}
			}
		}
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Error(b)
	}
}

// maxComplexity is the highest cyclomatic complexity a function of the core (enforce, policy,
// redeliver) may have: past it, a function no longer reads in one sitting and wants its phases
// named as functions of their own.
const maxComplexity = 30

// complexity is a function's cyclomatic complexity: 1, plus one per if, for, range, case of a
// switch or select (not the default), && and || (function literals inside it count as its own).
func complexity(fn ast.Node) int {
	n := 1
	ast.Inspect(fn, func(node ast.Node) bool {
		switch x := node.(type) {
		case *ast.IfStmt, *ast.ForStmt, *ast.RangeStmt:
			n++
		case *ast.CaseClause:
			if x.List != nil {
				n++
			}
		case *ast.CommClause:
			if x.Comm != nil {
				n++
			}
		case *ast.BinaryExpr:
			if x.Op == token.LAND || x.Op == token.LOR {
				n++
			}
		}
		return true
	})
	return n
}

// TestShapeComplexity fails for every function of enforce, policy and redeliver above
// maxComplexity.
func TestShapeComplexity(t *testing.T) {
	fset := token.NewFileSet()
	var bad []string
	for _, dir := range []string{".", "../policy", "../redeliver"} {
		for _, f := range parseDir(t, fset, dir) {
			for _, decl := range f.Decls {
				if fd, ok := decl.(*ast.FuncDecl); ok && fd.Body != nil {
					if c := complexity(fd); c > maxComplexity {
						bad = append(bad, fmt.Sprintf("%s: %s has cyclomatic complexity %d", fset.Position(fd.Pos()), funcName(fd), c))
					}
				}
			}
		}
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Errorf("%s; at most %d allowed: name its phases as functions of their own", b, maxComplexity)
	}
}

// TestComplexityCounts pins the count on small functions, so that the bound above cannot pass
// by counting nothing.
func TestComplexityCounts(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want int
	}{
		{"func f() {}", 1},
		{"func f(a, b bool) { if a && b || a {} }", 4},
		{"func f(x int) { switch x { case 1: case 2, 3: default: } }", 3},
		{"func f(xs []int) { for range xs {}; for i := 0; i < 1; i++ {}; _ = func() { if true {} } }", 4},
		{"func f(c chan int) { select { case <-c: default: } }", 2},
	} {
		file, err := parser.ParseFile(token.NewFileSet(), "x.go", "package x\n"+tc.src, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := complexity(file.Decls[0]); got != tc.want {
			t.Errorf("complexity of %q = %d, want %d", tc.src, got, tc.want)
		}
	}
}
