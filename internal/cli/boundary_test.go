package cli

import (
	"bytes"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The CLI stays a client of the packages that do the work: its commands
// read flags, call one function and print. It imports few of hypershift's
// packages (a command that needs a new one is a sign its logic belongs
// behind one it has), none of the controllers, and no file grows past 300
// lines. The commands that run a process on this host are
// internal/entrypoint's.
func TestCLIStaysThin(t *testing.T) {
	const maxImports, maxLines = 12, 300
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	imported := map[string]bool{}
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		if n := bytes.Count(src, []byte("\n")); n > maxLines {
			t.Errorf("%s has %d lines, more than %d: move what is not flags and printing to the package that owns it", name, n, maxLines)
		}
		f, err := parser.ParseFile(fset, name, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(path, "hypershift.dev/internal/controller/") {
				t.Errorf("%s imports %s: the CLI reads the API, not the controllers", name, path)
			}
			if strings.HasPrefix(path, "hypershift.dev/") {
				imported[path] = true
			}
		}
	}
	if checked < 10 {
		t.Fatalf("checked %d files: run from the package directory", checked)
	}
	if len(imported) > maxImports {
		paths := make([]string, 0, len(imported))
		for p := range imported {
			paths = append(paths, p)
		}
		sort.Strings(paths)
		t.Errorf("internal/cli imports %d hypershift.dev packages, more than %d:\n%s", len(imported), maxImports, strings.Join(paths, "\n"))
	}
}
