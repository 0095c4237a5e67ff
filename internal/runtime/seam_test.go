package runtime

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// What a runtime can do is asked of it (Capabilities, and methods every
// runtime implements), never of its type: the controllers and the operator
// hold no type assertion on a runtime, so a new runtime is one more
// implementation of the interface and nothing else changes.
func TestNoTypeAssertionOnARuntime(t *testing.T) {
	fset := token.NewFileSet()
	checked := 0
	for _, root := range []string{"../controller", "../operator"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			checked++
			imports := importNames(f)
			ast.Inspect(f, func(n ast.Node) bool {
				if a, ok := n.(*ast.TypeAssertExpr); ok && (namesARuntime(a.X, imports) || namesARuntime(a.Type, imports)) {
					t.Errorf("%s: type assertion on a runtime; ask runtime.Capabilities or add a method every runtime implements", fset.Position(a.Pos()))
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if checked < 50 {
		t.Fatalf("checked %d files; run from the package directory", checked)
	}
}

// namesARuntime matches a runtime value (r.Runtime, o.NodeRuntime, rt)
// and a type of this package or of a runtime's (runtime.X, *kube.Runtime),
// by the names the file imports them under.
func namesARuntime(e ast.Expr, imports map[string]string) bool {
	for {
		switch x := e.(type) {
		case *ast.ParenExpr:
			e = x.X
			continue
		case *ast.StarExpr:
			e = x.X
			continue
		}
		break
	}
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name == "rt"
	case *ast.SelectorExpr:
		if strings.HasSuffix(x.Sel.Name, "Runtime") && imports[exprName(x.X)] == "" {
			return true // a field: r.Runtime, opts.NodeRuntime
		}
		path := imports[exprName(x.X)]
		return path == "hypershift.dev/internal/runtime" || strings.HasPrefix(path, "hypershift.dev/internal/runtime/")
	}
	return false
}

func exprName(e ast.Expr) string {
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// importNames maps the names a file's imports go by to their paths.
func importNames(f *ast.File) map[string]string {
	out := map[string]string{}
	for _, imp := range f.Imports {
		path := strings.Trim(imp.Path.Value, `"`)
		name := filepath.Base(path)
		if imp.Name != nil {
			name = imp.Name.Name
		}
		out[name] = path
	}
	return out
}

// What differs between runtimes is a capability the controllers ask for
// by name (Capabilities: RollsComponents, HostFiles, …), not whether the
// instances are pods: any read of Pods under internal/controller fails
// (method calls named Pods, client-go's, are not reads). Restoring an etcd
// member, the last such read, is the runtime's (runtime.Spec.Restore).
func TestNoPodsReadInTheControllers(t *testing.T) {
	fset := token.NewFileSet()
	err := filepath.WalkDir("../controller", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		called := map[ast.Expr]bool{}
		ast.Inspect(f, func(n ast.Node) bool {
			if c, ok := n.(*ast.CallExpr); ok {
				called[c.Fun] = true
			}
			return true
		})
		ast.Inspect(f, func(n ast.Node) bool {
			if s, ok := n.(*ast.SelectorExpr); ok && s.Sel.Name == "Pods" && !called[s] {
				t.Errorf("%s: a read of Pods; ask the runtime's Capabilities for what differs", fset.Position(s.Pos()))
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// No runtime depends on the renderer: what a runtime needs of a component
// comes with the request (Ports' upstream defaults) or the Spec
// (OperatorPorts, StopLast), so a new component changes no runtime.
func TestRuntimesDoNotImportTheRenderer(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "./...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 50 {
		t.Fatalf("go list -deps gave %d packages: run from the package directory", len(deps))
	}
	for _, d := range deps {
		if d == "hypershift.dev/internal/components" || strings.HasPrefix(d, "hypershift.dev/internal/components/") {
			t.Errorf("a runtime imports %s", d)
		}
	}
}
