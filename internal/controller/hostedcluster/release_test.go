package hostedcluster_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/install"
	"hypershift.dev/internal/operator/operatortest"
	"hypershift.dev/internal/testenv"
	"hypershift.dev/internal/version"
)

// releaseVersion is the release make build builds beside the binary.
const releaseVersion = "v1.36.3"

// TestHostedClusterRunsItsRelease: a cluster of another release runs the
// API server, controller manager and scheduler from that release's binary
// (its API server says so), etcd from hypershift's.
func TestHostedClusterRunsItsRelease(t *testing.T) {
	env, root := operatortest.Setup(t, "clusters")
	rel, ok := operatortest.Releases(t).Lookup(releaseVersion)
	if !ok {
		t.Fatalf("release %s not built beside %s: run make build", releaseVersion, testenv.Binary(t))
	}
	c := env.Client
	ctx := t.Context()
	hc := hypershiftv1alpha1.NewHostedCluster("clusters", "old", hypershiftv1alpha1.NonePlatform, releaseVersion)
	if err := c.Create(ctx, hc); err != nil {
		t.Fatal(err)
	}
	// A NodePool, so that the control plane runs its scheduler too.
	pool := &hypershiftv1alpha1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Namespace: "clusters", Name: "old"},
		Spec: hypershiftv1alpha1.NodePoolSpec{
			ClusterName: "old",
			Platform:    hypershiftv1alpha1.NodePoolPlatform{Type: hypershiftv1alpha1.NonePlatform},
		},
	}
	if err := c.Create(ctx, pool); err != nil {
		t.Fatal(err)
	}
	operatortest.WaitAvailable(t, c, hc)
	if hc.Status.Version != releaseVersion {
		t.Errorf("status.version %q, want %s", hc.Status.Version, releaseVersion)
	}
	if got := serverVersion(t, hostedClient(ctx, t, c, hc)); got != releaseVersion {
		t.Errorf("hosted API server reports %s, want %s", got, releaseVersion)
	}
	cpDir := filepath.Join(root, "clusters-old")
	// The scheduler may follow the pool a pass after Available.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(cpDir, "kube-scheduler", "pid.json")); err == nil || time.Now().After(deadline) {
			break
		}
	}
	for instance, want := range map[string]string{
		"kube-apiserver": rel.Binary, "kube-controller-manager": rel.Binary, "kube-scheduler": rel.Binary,
		"etcd-0": testenv.Binary(t),
	} {
		if got := executable(t, filepath.Join(cpDir, instance, "pid.json")); got != want {
			t.Errorf("%s runs %s, want %s", instance, got, want)
		}
	}
}

// TestHostedClusterOfUnavailableRelease: a version the operator has no
// release of is refused at admission and, for an object stored without the
// admission policy, by the controller, naming those it has; nothing is
// started.
func TestHostedClusterOfUnavailableRelease(t *testing.T) {
	env, _ := operatortest.Setup(t, "clusters")
	c := env.Client
	ctx := t.Context()
	hc := hypershiftv1alpha1.NewHostedCluster("clusters", "ancient", hypershiftv1alpha1.NonePlatform, "v1.20.0")
	// The operator writes the policy as it starts, and the API server
	// enforces it once its informer has it: until then a dry run passes.
	const refused = "spec.kubernetesVersion: v1.20.0 is not available in this installation"
	testenv.Eventually(t, 30*time.Second, "create at v1.20.0 refused by the runtime admission policy", func() (bool, error) {
		err := c.Create(ctx, hc.DeepCopy(), client.DryRunAll)
		if err == nil {
			return false, errors.New("a dry-run create was accepted")
		}
		return strings.Contains(err.Error(), refused), err
	})
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: install.RuntimePolicyName}}
	if err := c.Delete(ctx, binding); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, "created once the policy is unbound", func() (bool, error) {
		return c.Create(ctx, hc) == nil, nil
	})
	cond := waitRefused(t, c, hc, "")
	for _, want := range []string{"spec.kubernetesVersion v1.20.0 is not available", version.KubernetesVersion, releaseVersion} {
		if !strings.Contains(cond.Message, want) {
			t.Errorf("message %q lacks %q", cond.Message, want)
		}
	}
	if err := c.Get(ctx, client.ObjectKey{Name: "clusters-ancient"}, &corev1.Namespace{}); err == nil {
		t.Error("control-plane namespace created for a version that cannot run")
	}
}

// executable returns the program of the process a pid file records.
func executable(t *testing.T, pidFile string) string {
	t.Helper()
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		PID int `json:"pid"`
	}
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatalf("%s: %v", pidFile, err)
	}
	exe, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(rec.PID), "exe"))
	if err != nil {
		t.Fatal(err)
	}
	return exe
}
