package clustercache_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// One cache per operator: every controller registers an Extension on the
// cache the operator makes, so a hosted cluster has one connection and one
// health check however many controllers talk to it. A second
// clustercache.New outside tests fails here.
func TestOneCachePerOperator(t *testing.T) {
	fset := token.NewFileSet()
	var made []string
	checked := 0
	for _, root := range []string{"..", "../../cmd"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			checked++
			name := ""
			for _, imp := range f.Imports {
				if p, _ := strconv.Unquote(imp.Path.Value); p == "hypershift.dev/internal/clustercache" {
					name = "clustercache"
					if imp.Name != nil {
						name = imp.Name.Name
					}
				}
			}
			if name == "" {
				return nil
			}
			ast.Inspect(f, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok && sel.Sel.Name == "New" {
					if id, ok := sel.X.(*ast.Ident); ok && id.Name == name {
						made = append(made, fset.Position(sel.Pos()).String())
					}
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if checked < 100 {
		t.Fatalf("checked %d files; run from the package directory", checked)
	}
	if len(made) != 1 || !strings.HasPrefix(filepath.ToSlash(made[0]), "../operator/") {
		t.Errorf("clustercache.New outside tests at %v; want one call, in internal/operator (controllers Register an Extension on the operator's cache)", made)
	}
}
