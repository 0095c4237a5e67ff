package clusterclient

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestManagementFindsTheKubeconfig: --kubeconfig, then $KUBECONFIG, then
// the data dir's management.kubeconfig; with none, an error that says what
// to do.
func TestManagementFindsTheKubeconfig(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	dataDir := t.TempDir()
	m := &Management{DataDir: dataDir}
	if _, err := m.KubeconfigPath(); !errors.Is(err, ErrNoManagementPlane) {
		t.Fatalf("no kubeconfig anywhere: error %v, want ErrNoManagementPlane", err)
	}
	own := m.Layout().ManagementKubeconfig()
	if err := os.WriteFile(own, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		flag, env, want string
	}{
		{want: own},
		{env: "/env/kubeconfig", want: "/env/kubeconfig"},
		{flag: "/flag/kubeconfig", env: "/env/kubeconfig", want: "/flag/kubeconfig"},
	} {
		t.Setenv("KUBECONFIG", tc.env)
		m.Kubeconfig = tc.flag
		if got, err := m.KubeconfigPath(); err != nil || got != tc.want {
			t.Errorf("--kubeconfig %q, $KUBECONFIG %q: %q (%v), want %q", tc.flag, tc.env, got, err, tc.want)
		}
	}
}

// TestManagementCompleteMakesTheDataDirAbsolute: a relative --data-dir
// means the same directory to the processes a command starts elsewhere.
func TestManagementCompleteMakesTheDataDirAbsolute(t *testing.T) {
	base := t.TempDir()
	t.Chdir(base)
	m := &Management{DataDir: "./x/../rel"}
	if err := m.Complete(); err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(base, "rel"); m.DataDir != want || m.Layout().Root != want {
		t.Errorf("data dir %q, layout %q, want %q", m.DataDir, m.Layout().Root, want)
	}
}
