package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	"hypershift.dev/internal/testenv"
	"hypershift.dev/internal/version"
)

// releaseVersion is the release make build builds beside the binary.
const releaseVersion = "v1.36.3"

// TestReleases: an install runs the compiled-in Kubernetes and the release
// built beside it; a cluster created at the release's version serves it.
func TestReleases(t *testing.T) {
	ownDirAndPorts(t)
	hs := sharedPlane(t)
	releaseBinary := filepath.Join(filepath.Dir(testenv.Binary(t)), "releases", releaseVersion, "kubernetes")

	out := hs.must("version")
	for _, want := range []string{version.KubernetesVersion + "\tcompiled in", releaseVersion + "\t" + releaseBinary} {
		if !strings.Contains(out, want) {
			t.Errorf("hypershift version lacks %q:\n%s", want, out)
		}
	}
	if help := hs.must("create", "cluster", "--help"); !strings.Contains(help, version.KubernetesVersion+", "+releaseVersion) {
		t.Errorf("create cluster --help does not name the releases:\n%s", help)
	}

	hs.must("create", "cluster", "none", "--name", "old", "--kubernetes-version", releaseVersion, "--wait", "--timeout", "3m")
	kc := hs.adminKubeconfig("old")
	if v := mustKubectl(t, kc, "get", "--raw", "/version"); !strings.Contains(v, `"gitVersion": "`+releaseVersion+`"`) {
		t.Errorf("/version does not report %s:\n%s", releaseVersion, v)
	}
	mustKubectl(t, kc, "create", "namespace", "works")
	// The API server, controller manager and scheduler are processes of the
	// release's binary; etcd is hypershift's.
	instancePID(t, hs.dataDir, "old", "kube-scheduler") // started, maybe a pass after Available
	names := keys(pidsUnder(t, filepath.Join(hs.dataDir, "clusters", "clusters-old")))
	for _, want := range []string{
		releaseBinary + " kube-apiserver ", releaseBinary + " kube-controller-manager ", releaseBinary + " kube-scheduler ", "etcd#",
	} {
		if !containsPrefix(names, want) {
			t.Errorf("no process %q among %v", want, names)
		}
	}
}

func keys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
