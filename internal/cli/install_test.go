package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"hypershift.dev/internal/golden"
	"hypershift.dev/internal/install"
)

// TestInstallRenderGolden pins `hypershift install --render` with defaults.
// The CRD documents come first and are the embedded CRDs with install's label added (pinned
// by config/crd itself), so the golden file holds what follows them.
func TestInstallRenderGolden(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	got, err := run(t, "--data-dir", t.TempDir(), "install", "--render")
	if err != nil {
		t.Fatal(err)
	}
	crds, err := install.CRDs()
	if err != nil {
		t.Fatal(err)
	}
	objs := make([]client.Object, 0, len(crds))
	for _, c := range crds {
		// Added to the CRD's own labels (Cluster API's contract label on
		// its kinds).
		if c.Labels == nil {
			c.Labels = map[string]string{}
		}
		c.Labels[install.ManagedByLabel] = install.ManagedBy
		objs = append(objs, c)
	}
	wantCRDs, err := install.Render(objs)
	if err != nil {
		t.Fatal(err)
	}
	rest, ok := strings.CutPrefix(got, string(wantCRDs))
	if !ok {
		t.Fatalf("--render does not start with the embedded CRDs:\n%.2000s", got)
	}
	golden.Check(t, filepath.Join("testdata", "install-render.yaml"), []byte(rest))
}

// TestInstallFlagsValidatedFirst: bad flags are refused, naming the flag,
// before any cluster is contacted (there is none here).
func TestInstallFlagsValidatedFirst(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--namespace", "Not_A_Namespace"}, `--namespace "Not_A_Namespace" is not a valid namespace name`},
		{[]string{"--image", "UPPER::bad"}, `--image "UPPER::bad" is not an image reference`},
		{[]string{"--replicas", "-1"}, "--replicas -1: the operator needs at least 1"},
		{[]string{"--storage-class", "no/slash"}, `--storage-class "no/slash" is not a valid StorageClass name`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			_, err := run(t, append([]string{"--data-dir", t.TempDir(), "install"}, tt.args...)...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want it to contain %q", err, tt.want)
			}
		})
	}
}
