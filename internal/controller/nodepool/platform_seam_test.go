package nodepool

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
)

// The controller talks to platforms only through the platform.Platform
// interface: no type assertion or type switch on a platform value, and no
// comparison or switch on spec.platform.type, in the controller's code.
// What differs between platforms is a method of the interface; the
// platforms map in platform.go is the one place that reads the type.
func TestControllerDoesNotAskWhichPlatform(t *testing.T) {
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.TypeAssertExpr:
				if mentionsPlatform(n.X) || mentionsPlatform(n.Type) {
					t.Errorf("%s: type assertion on a platform; add a method to platform.Platform instead", fset.Position(n.Pos()))
				}
			case *ast.BinaryExpr:
				if (n.Op == token.EQL || n.Op == token.NEQ) && (isPlatformType(n.X) || isPlatformType(n.Y)) {
					t.Errorf("%s: compares spec.platform.type; add a method to platform.Platform instead", fset.Position(n.Pos()))
				}
			case *ast.SwitchStmt:
				if n.Tag != nil && isPlatformType(n.Tag) {
					t.Errorf("%s: switches on spec.platform.type; register the platform in the platforms map instead", fset.Position(n.Pos()))
				}
			}
			return true
		})
	}
	if checked < 5 {
		t.Fatalf("checked %d files; run from the package directory", checked)
	}
}

// isPlatformType matches x.Platform.Type and hypershiftv1alpha1.<X>Platform.
func isPlatformType(e ast.Expr) bool {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	if inner, ok := sel.X.(*ast.SelectorExpr); ok && inner.Sel.Name == "Platform" && sel.Sel.Name == "Type" {
		return true
	}
	pkg, ok := sel.X.(*ast.Ident)
	return ok && pkg.Name == "hypershiftv1alpha1" && strings.HasSuffix(sel.Sel.Name, "Platform")
}

// mentionsPlatform matches expressions and types that name a platform:
// s.platform, p.impl, *simulatedPlatform, simulated.Platform.
func mentionsPlatform(e ast.Expr) bool {
	if e == nil { // x.(type) in a type switch
		return false
	}
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.Ident:
			lower := strings.ToLower(n.Name)
			found = found || strings.Contains(lower, "platform") || n.Name == "impl"
		case *ast.SelectorExpr:
			found = found || n.Sel.Name == "impl"
		}
		return !found
	})
	return found
}

// What each platform type answers; the phases act on these answers only.
func TestPlatformCapabilities(t *testing.T) {
	r := &Reconciler{}
	cases := []struct {
		typ                               hypershiftv1alpha1.PlatformType
		token, autoscale, autorepair, bad bool
	}{
		{hypershiftv1alpha1.SimulatedPlatform, true, true, true, true}, // no node runtime in r
		{hypershiftv1alpha1.NonePlatform, false, false, false, false},
		{"Other", false, false, false, true},
	}
	for _, tc := range cases {
		p := newPlatform(r, tc.typ)
		s := &scope{np: &hypershiftv1alpha1.NodePool{}, nodes: map[string]*corev1.Node{"a": {}, "b": {}}}
		err := p.validate(s)
		if p.needsToken() != tc.token || p.supportsAutoscaling() != tc.autoscale || p.supportsAutorepair() != tc.autorepair || (err != nil) != tc.bad {
			t.Errorf("%s: token %v autoscale %v autorepair %v validate %v; want %v %v %v invalid=%v",
				tc.typ, p.needsToken(), p.supportsAutoscaling(), p.supportsAutorepair(), err, tc.token, tc.autoscale, tc.autorepair, tc.bad)
		}
	}
	// A None pool without replicas takes the nodes that joined; others none.
	s := &scope{np: &hypershiftv1alpha1.NodePool{}, nodes: map[string]*corev1.Node{"a": {}, "b": {}}}
	if got := newPlatform(r, hypershiftv1alpha1.NonePlatform).unsetReplicas(s); got != 2 {
		t.Errorf("None pool without replicas: %d, want the 2 joined nodes", got)
	}
	if got := newPlatform(r, hypershiftv1alpha1.SimulatedPlatform).unsetReplicas(s); got != 0 {
		t.Errorf("Simulated pool without replicas: %d, want 0", got)
	}
	if err := newPlatform(r, "Other").validate(s); err == nil || !strings.Contains(err.Error(), `platform "Other" is not supported`) {
		t.Errorf("unsupported platform: %v", err)
	}
}
