package bootstrap

import (
	"bytes"
	"errors"
	"net/url"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/clientcmd"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/pki"
	"hypershift.dev/internal/testenv"
)

// EnsureJoinInfo publishes kubeadm's cluster-info (the CA, for join's
// signature check) next to the join information, and lets anonymous users
// read both — also on a cluster whose reader Role predates cluster-info.
func TestEnsureJoinInfoPublishesClusterInfo(t *testing.T) {
	env := testenv.Start(t)
	kube := kubernetes.NewForConfigOrDie(env.RESTConfig)
	ctx := t.Context()
	old := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: JoinInfoNamespace, Name: joinInfoReaderRole},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{""}, Resources: []string{"configmaps"},
			ResourceNames: []string{JoinInfoName}, Verbs: []string{"get"},
		}},
	}
	if _, err := kube.RbacV1().Roles(JoinInfoNamespace).Create(ctx, old, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ca, err := pki.NewCA("root-ca")
	if err != nil {
		t.Fatal(err)
	}
	network, err := NetworkOf(hypershiftv1alpha1.NewHostedCluster("clusters", "r", hypershiftv1alpha1.NonePlatform, "").Spec.Networking)
	if err != nil {
		t.Fatal(err)
	}
	if err := EnsureJoinInfo(ctx, kube, "clusters/r", ca.CertPEM, network); err != nil {
		t.Fatal(err)
	}
	info, err := kube.CoreV1().ConfigMaps(JoinInfoNamespace).Get(ctx, JoinInfoName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := ParseNetwork(info.Data); err != nil || got != network {
		t.Errorf("join information's network = %+v, %v; want %+v", got, err, network)
	}
	cm, err := kube.CoreV1().ConfigMaps(JoinInfoNamespace).Get(ctx, ClusterInfoName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := ClusterInfoCA([]byte(cm.Data[ClusterInfoKubeconfig]))
	if err != nil || !bytes.Equal(got, ca.CertPEM) {
		t.Errorf("cluster-info CA %q, %v; want the cluster's", got, err)
	}
	if cfg, err := clientcmd.Load([]byte(cm.Data[ClusterInfoKubeconfig])); err != nil || cfg.Clusters[""] == nil || cfg.Clusters[""].Server != env.RESTConfig.Host {
		t.Errorf("cluster-info kubeconfig %s (%v): want one unnamed cluster with server %s", cm.Data[ClusterInfoKubeconfig], err, env.RESTConfig.Host)
	}
	role, err := kube.RbacV1().Roles(JoinInfoNamespace).Get(ctx, joinInfoReaderRole, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if names := role.Rules[0].ResourceNames; !slices.Contains(names, ClusterInfoName) || !slices.Contains(names, JoinInfoName) {
		t.Errorf("reader Role names %v, want %s and %s", names, JoinInfoName, ClusterInfoName)
	}
	// A second call keeps what the bootstrapsigner added.
	if _, err := kube.CoreV1().ConfigMaps(JoinInfoNamespace).Patch(ctx, ClusterInfoName, "application/merge-patch+json",
		[]byte(`{"data":{"jws-kubeconfig-abcdef":"sig"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := EnsureJoinInfo(ctx, kube, "clusters/r", ca.CertPEM, network); err != nil {
		t.Fatal(err)
	}
	cm, err = kube.CoreV1().ConfigMaps(JoinInfoNamespace).Get(ctx, ClusterInfoName, metav1.GetOptions{})
	if err != nil || cm.Data[ClusterInfoSignaturePrefix+"abcdef"] != "sig" {
		t.Errorf("a second EnsureJoinInfo dropped the signatures: %v %v", cm.Data, err)
	}
	anonymous := kubernetes.NewForConfigOrDie(rest.AnonymousClientConfig(env.RESTConfig))
	for _, name := range []string{ClusterInfoName, JoinInfoName} {
		if _, err := anonymous.CoreV1().ConfigMaps(JoinInfoNamespace).Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("anonymous get %s: %v", name, err)
		}
	}
}

// patchConfigMap sends its idempotent patch again after a timeout (a busy
// API server's TLS handshake, a server timeout), not after a refusal.
func TestPatchConfigMapOutlivesATransientError(t *testing.T) {
	timeout := &url.Error{Op: "Patch", URL: "https://127.0.0.1/", Err: tlsHandshakeTimeout{}}
	for _, tc := range []struct {
		name      string
		errs      []error
		wantCalls int
		wantErr   bool
	}{
		{"a TLS handshake timeout, then an answer", []error{timeout}, 2, false},
		{"a server timeout twice, then an answer", []error{apierrors.NewServerTimeout(corev1.Resource("configmaps"), "patch", 1), apierrors.NewServerTimeout(corev1.Resource("configmaps"), "patch", 1)}, 3, false},
		{"forbidden: not sent again", []error{apierrors.NewForbidden(corev1.Resource("configmaps"), JoinInfoName, errors.New("no"))}, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kube := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: JoinInfoNamespace, Name: JoinInfoName}})
			calls := 0
			kube.PrependReactor("patch", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
				calls++
				if calls <= len(tc.errs) {
					return true, nil, tc.errs[calls-1]
				}
				return false, nil, nil
			})
			err := patchConfigMap(t.Context(), kube, JoinInfoName, map[string]any{"k": "v"})
			if calls != tc.wantCalls || (err != nil) != tc.wantErr {
				t.Fatalf("%d patches, error %v; want %d patches, an error: %v", calls, err, tc.wantCalls, tc.wantErr)
			}
			if !tc.wantErr {
				cm, _ := kube.CoreV1().ConfigMaps(JoinInfoNamespace).Get(t.Context(), JoinInfoName, metav1.GetOptions{})
				if cm.Data["k"] != "v" {
					t.Errorf("the ConfigMap holds %v after the patch", cm.Data)
				}
			}
		})
	}
}

// tlsHandshakeTimeout is what net/http returns when a TLS handshake runs
// out of time.
type tlsHandshakeTimeout struct{}

func (tlsHandshakeTimeout) Error() string   { return "net/http: TLS handshake timeout" }
func (tlsHandshakeTimeout) Timeout() bool   { return true }
func (tlsHandshakeTimeout) Temporary() bool { return true }
