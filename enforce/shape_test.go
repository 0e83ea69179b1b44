package enforce

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
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
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		t.Fatal("no non-test .go file found in the enforce directory")
	}
	return fset, files
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
