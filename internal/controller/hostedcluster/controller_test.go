package hostedcluster_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/controller/hostedcluster"
	"hypershift.dev/internal/operator/operatortest"
	"hypershift.dev/internal/pki"
	"hypershift.dev/internal/testenv"
	"hypershift.dev/internal/version"
)

func TestHostedClusterLifecycle(t *testing.T) {
	env, root := operatortest.Setup(t, "clusters")
	c := env.Client
	ctx := t.Context()
	hc := &hypershiftv1alpha1.HostedCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "clusters", Name: "life"}}
	if err := c.Create(ctx, hc); err != nil {
		t.Fatal(err)
	}
	operatortest.WaitAvailable(t, c, hc)
	key := client.ObjectKeyFromObject(hc)

	// Status tells where and what.
	if hc.Status.Version != version.KubernetesVersion || hc.Status.ControlPlaneNamespace != "clusters-life" || hc.Status.Endpoint == "" {
		t.Errorf("status version %q, namespace %q, endpoint %q", hc.Status.Version, hc.Status.ControlPlaneNamespace, hc.Status.Endpoint)
	}
	if h := hc.Status.VersionHistory; len(h) != 1 || h[0].Version != version.KubernetesVersion || h[0].State != hypershiftv1alpha1.CompletedVersion || h[0].CompletionTime == nil {
		t.Errorf("version history %+v, want one Completed entry for %s", h, version.KubernetesVersion)
	}
	if c := meta.FindStatusCondition(hc.Status.Conditions, hypershiftv1alpha1.ClusterVersionProgressing.String()); c.Message != "Running "+version.KubernetesVersion {
		t.Errorf("ClusterVersionProgressing %q, want %q", c.Message, "Running "+version.KubernetesVersion)
	}
	if !slices.Contains(hc.Finalizers, hostedcluster.Finalizer) {
		t.Errorf("finalizers %v lack %s", hc.Finalizers, hostedcluster.Finalizer)
	}

	// The PKI lives in the control-plane namespace.
	for _, name := range []string{pki.RootCAName, pki.EtcdCAName, pki.ClientCAName, pki.KubeletCAName, pki.FrontProxyCAName, pki.ServiceAccountKeyName, pki.AdminName} {
		if err := c.Get(ctx, client.ObjectKey{Namespace: "clusters-life", Name: name}, &corev1.Secret{}); err != nil {
			t.Errorf("secret %s: %v", name, err)
		}
	}

	// The admin kubeconfig reaches the hosted API server.
	hosted := hostedClient(ctx, t, c, hc)
	if got := serverVersion(t, hosted); got != version.KubernetesVersion {
		t.Errorf("hosted API server reports %s, want %s", got, version.KubernetesVersion)
	}

	// Key files are private; directories are the owner's.
	cpDir := filepath.Join(root, "clusters-life")
	checkMode(t, filepath.Join(cpDir, "kube-apiserver", "server.key"), 0o600)
	checkMode(t, filepath.Join(cpDir, "kube-apiserver"), 0o700)
	checkMode(t, cpDir, 0o700)

	// pausedUntil stops reconciliation and says so.
	patch := client.MergeFrom(hc.DeepCopy())
	hc.Spec.PausedUntil = ptr.To("true")
	if err := c.Patch(ctx, hc, patch); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, "ReconciliationActive=False", func() (bool, error) {
		err := c.Get(ctx, key, hc)
		cond := meta.FindStatusCondition(hc.Status.Conditions, hypershiftv1alpha1.ReconciliationActive.String())
		return cond != nil && cond.Status == metav1.ConditionFalse && cond.Reason == hypershiftv1alpha1.ReconciliationPausedReason.String(), err
	})
	patch = client.MergeFrom(hc.DeepCopy())
	hc.Spec.PausedUntil = nil
	if err := c.Patch(ctx, hc, patch); err != nil {
		t.Fatal(err)
	}

	// Deleting removes the namespace, the processes and the data.
	if err := c.Delete(ctx, hc); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 2*time.Minute, "HostedCluster gone", func() (bool, error) {
		err := c.Get(ctx, key, hc)
		return apierrors.IsNotFound(err), err
	})
	if err := c.Get(ctx, client.ObjectKey{Name: "clusters-life"}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
		t.Errorf("control-plane namespace still present: %v", err)
	}
	if _, err := os.Stat(cpDir); !os.IsNotExist(err) {
		t.Errorf("control-plane data dir still present: %v", err)
	}
	if _, err := hosted.Discovery().ServerVersion(); err == nil {
		t.Error("hosted API server still answers after deletion")
	}
}

func TestUnsupportedSpecIsReported(t *testing.T) {
	env, _ := operatortest.Setup(t, "clusters")
	c := env.Client
	ctx := t.Context()
	hc := &hypershiftv1alpha1.HostedCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: "clusters", Name: "unmanaged"},
		Spec:       hypershiftv1alpha1.HostedClusterSpec{Etcd: hypershiftv1alpha1.EtcdSpec{ManagementType: hypershiftv1alpha1.Unmanaged}},
	}
	if err := c.Create(ctx, hc); err != nil {
		t.Fatal(err)
	}
	cond := waitRefused(t, c, hc, "")
	if cond.Message != "spec.etcd.managementType Unmanaged is not supported yet: use Managed" {
		t.Errorf("message %q", cond.Message)
	}
	// Nothing was started for it.
	if err := c.Get(ctx, client.ObjectKey{Name: "clusters-unmanaged"}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
		t.Errorf("control-plane namespace created for an invalid cluster: %v", err)
	}
}

func checkMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Error(err)
		return
	}
	if got := info.Mode().Perm(); got != want {
		t.Errorf("%s has mode %v, want %v", path, got, want)
	}
}

// hostedClient is a client of the hosted API server with the cluster's
// admin kubeconfig.
func hostedClient(ctx context.Context, t *testing.T, c client.Client, hc *hypershiftv1alpha1.HostedCluster) *kubernetes.Clientset {
	t.Helper()
	secret := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "clusters", Name: hc.Status.KubeConfig.Name}, secret); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(secret.Data[hc.Status.KubeConfig.Key])
	if err != nil {
		t.Fatal(err)
	}
	hosted, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return hosted
}

func serverVersion(t *testing.T, hosted *kubernetes.Clientset) string {
	t.Helper()
	info, err := hosted.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	return info.GitVersion
}
