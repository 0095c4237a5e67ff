package entrypoint

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hypershift.dev/internal/cli"
	"hypershift.dev/internal/components"
)

// run runs the whole command line, as cmd/hypershift makes it, with no
// compiled-in components.
func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	return runWith(t, nil, args...)
}

// runWith runs the whole command line, as cmd/hypershift makes it: the
// commands of internal/cli and those of this package with registry's
// components.
func runWith(t *testing.T, registry components.Registry, args ...string) (string, error) {
	t.Helper()
	cmd, m := cli.NewRootCommand()
	Add(cmd, m, registry)
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

func TestComponentWithoutComponents(t *testing.T) {
	_, err := run(t, "--data-dir", t.TempDir(), "component", "etcd")
	if want := "this binary has no compiled-in components"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want it to contain %q", err, want)
	}
}

// TestDownPurgeRemovesOnlyDataDirs: `down --purge` on a directory that
// hypershift did not make refuses and deletes nothing.
func TestDownPurgeRemovesOnlyDataDirs(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	foreign := t.TempDir()
	keep := filepath.Join(foreign, "someone-elses-file")
	if err := os.WriteFile(keep, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := run(t, "--data-dir", foreign, "down", "--purge")
	if err == nil || !strings.Contains(err.Error(), "is not a hypershift data dir") {
		t.Errorf("down --purge of a foreign directory: error %v, want a refusal", err)
	}
	if _, err := os.Stat(keep); err != nil {
		t.Fatalf("down --purge removed a directory it did not make: %v", err)
	}
}

// TestDataDirIsAbsolute: a relative --data-dir means the same directory to
// every command and to the processes they start from other directories.
func TestDataDirIsAbsolute(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	base := t.TempDir()
	t.Chdir(base)
	out, err := run(t, "--data-dir", "./x/../rel", "down")
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(base, "rel")
	if !strings.Contains(out, "no data dir "+want+"\n") {
		t.Errorf("down output %q, want it to name the data dir as %s", out, want)
	}
}
