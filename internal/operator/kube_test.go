package operator

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/install"
	"hypershift.dev/internal/runtime"
	"hypershift.dev/internal/runtime/kube"
	"hypershift.dev/internal/testenv"
	"hypershift.dev/internal/version"
)

// TestKubeModeWithInstalledRBAC: the operator of the kube runtime, as the
// service account `hypershift install` makes and with exactly the RBAC it
// grants, takes the leader Lease, syncs its caches and brings a
// NodePort-published HostedCluster to its control-plane namespace, PKI and
// HostedControlPlane; its Cluster API starter reads install's Deployment
// of Cluster API's manager. Its /metrics, served as install serves it, answers
// only a token bound to the installed metrics-reader ClusterRole: 401
// without one, 403 for another service account.
// The API server authorizes with RBAC, so a missing rule fails this.
func TestKubeModeWithInstalledRBAC(t *testing.T) {
	env := testenv.Start(t)
	objs, err := install.ObjectsFor(install.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := install.Apply(t.Context(), env.Client, objs, func(string, string, install.Result) {}); err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(env.RESTConfig)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + install.DefaultNamespace + ":" + install.OperatorName,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + install.DefaultNamespace, "system:authenticated"},
	}
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	opts := WithKubeRuntime(Options{
		RESTConfig: cfg, MetricsBindAddress: metricsAddr, MetricsSecure: true, HealthProbeBindAddress: "0",
		LeaderElection: true, LeaderElectionNamespace: install.DefaultNamespace,
		AllowRepeatedControllers: true,
	}, kube.Options{Image: "hypershift.dev/hypershift:test", MachineImage: "hypershift.dev/hypershift-machine:test", MaxMachines: 4})
	made := false
	newRuntime := opts.NewRuntime
	opts.NewRuntime = func(mgr ctrl.Manager) (runtime.Runtime, error) {
		made = true
		return newRuntime(mgr)
	}
	var clusterAPI func(context.Context) error
	newClusterAPI := opts.NewClusterAPI
	opts.NewClusterAPI = func(mgr ctrl.Manager) func(context.Context) error {
		clusterAPI = newClusterAPI(mgr)
		return clusterAPI
	}
	var machines runtime.Machines
	newMachines := opts.NewMachines
	opts.NewMachines = func(mgr ctrl.Manager) runtime.Machines {
		machines = newMachines(mgr)
		return machines
	}
	mgr, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if machines == nil {
		t.Fatal("New did not make the kube runtime's machines through Options.NewMachines")
	}
	if !made || clusterAPI == nil {
		t.Fatal("New did not make the runtime and the Cluster API starter through Options.NewRuntime and NewClusterAPI")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("operator: %v", err)
		}
	})
	select {
	case <-mgr.Elected():
	case err := <-done:
		t.Fatalf("operator stopped before it was elected: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("operator not elected leader within a minute: can it get and create its Lease?")
	}
	syncCtx, cancelSync := context.WithTimeout(ctx, time.Minute)
	defer cancelSync()
	if !mgr.GetCache().WaitForCacheSync(syncCtx) {
		t.Fatal("operator caches did not sync: can it list and watch everything it reads?")
	}

	hc := hypershiftv1alpha1.NewHostedCluster("default", "rbac", hypershiftv1alpha1.NonePlatform, version.KubernetesVersion)
	// Published as the kube runtime can: refused by the controller unless
	// the kube mode says what its runtime supports.
	hc.Spec.Services = []hypershiftv1alpha1.ServicePublishingStrategyMapping{{
		Service: hypershiftv1alpha1.APIServer,
		ServicePublishingStrategy: hypershiftv1alpha1.ServicePublishingStrategy{
			Type:     hypershiftv1alpha1.NodePort,
			NodePort: &hypershiftv1alpha1.NodePortPublishingStrategy{Address: "192.0.2.10"},
		},
	}}
	if err := env.Client.Create(t.Context(), hc); err != nil {
		t.Fatal(err)
	}
	ns := "default-rbac"
	testenv.Eventually(t, time.Minute, "the operator's namespace, PKI and HostedControlPlane of default/rbac", func() (bool, error) {
		cur := &hypershiftv1alpha1.HostedCluster{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(hc), cur); err != nil {
			return false, err
		}
		if len(cur.Finalizers) == 0 {
			return false, nil
		}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{}); err != nil {
			return false, err
		}
		secrets := &corev1.SecretList{}
		if err := env.Client.List(ctx, secrets, client.InNamespace(ns)); err != nil || len(secrets.Items) == 0 {
			return false, err
		}
		return true, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: hc.Name}, &hypershiftv1alpha1.HostedControlPlane{})
	})

	installedClusterAPIRead(t, env, clusterAPI)
	machinesWithOperatorRBAC(t, machines, ns)
	metricsOnlyToReaders(t, env, "https://"+metricsAddr+"/metrics")
}

// installedClusterAPIRead: the kube mode's Cluster API starter reads
// install's Deployment in the operator's namespace, with the operator's
// RBAC and through its cache: none (install ran without Cluster API's
// directory here) is an error naming it, an available one is ready.
func installedClusterAPIRead(t *testing.T, env *testenv.Env, clusterAPI func(context.Context) error) {
	t.Helper()
	ctx := t.Context()
	if err := clusterAPI(ctx); err == nil || !strings.Contains(err.Error(), "no Deployment hypershift/"+install.ClusterAPIName) {
		t.Errorf("Cluster API starter without its Deployment: %v, want an error naming hypershift/%s", err, install.ClusterAPIName)
	}
	labels := map[string]string{"app.kubernetes.io/name": install.ClusterAPIName}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: install.DefaultNamespace, Name: install.ClusterAPIName},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: "hypershift.dev/hypershift:test"}}},
			},
		},
	}
	if err := env.Client.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	d.Status.Replicas, d.Status.ReadyReplicas, d.Status.AvailableReplicas = 1, 1, 1
	if err := env.Client.Status().Update(ctx, d); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, "the Cluster API starter to find the available Deployment", func() (bool, error) {
		return clusterAPI(ctx) == nil, nil
	})
}

// machinesWithOperatorRBAC: with the operator's RBAC and cache, a machine
// of the control-plane namespace ns is made (its namespace, service
// account, userdata Secret and pod), counted, and deleted with its
// namespace.
func machinesWithOperatorRBAC(t *testing.T, machines runtime.Machines, ns string) {
	t.Helper()
	ctx := t.Context()
	ref := runtime.MachineRef{Namespace: ns, Cluster: "cluster-uid", Name: "m1", Owner: "owner", ProviderID: "hypershift-host://m1"}
	if _, err := machines.Create(ctx, ref, []byte("#!/bin/sh\n")); err != nil {
		t.Fatalf("make a machine pod with the operator's RBAC: %v", err)
	}
	testenv.Eventually(t, 30*time.Second, "the machine pod in the operator's cache", func() (bool, error) {
		n, err := machines.Count(ctx)
		return n == 1, err
	})
	testenv.Eventually(t, 30*time.Second, "the machine to be deleted with the operator's RBAC", func() (bool, error) {
		return machines.Delete(ctx, ref)
	})
}

// metricsOnlyToReaders: url answers 401 without a token, 403 to a service
// account not bound to install.MetricsReaderName, and the operator's
// series to one that is.
func metricsOnlyToReaders(t *testing.T, env *testenv.Env, url string) {
	t.Helper()
	ctx := t.Context()
	kube := kubernetes.NewForConfigOrDie(env.RESTConfig)
	token := func(name string) string {
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
		if _, err := kube.CoreV1().ServiceAccounts("default").Create(ctx, sa, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		tok, err := kube.CoreV1().ServiceAccounts("default").CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tok.Status.Token
	}
	reader, stranger := token("prometheus"), token("stranger")
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "prometheus-reads-hypershift"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: install.MetricsReaderName},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "default", Name: "prometheus"}},
	}
	if err := env.Client.Create(ctx, binding); err != nil {
		t.Fatal(err)
	}
	// The self-signed serving certificate is not what is tested here.
	httpClient := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	get := func(token string) (int, string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return 0, "", err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := httpClient.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return resp.StatusCode, string(body), err
	}
	testenv.Eventually(t, time.Minute, "the metrics reader's GET /metrics answered", func() (bool, error) {
		code, body, err := get(reader)
		return err == nil && code == http.StatusOK && strings.Contains(body, "controller_runtime_reconcile_total"), nil
	})
	for _, tc := range []struct {
		who, token string
		want       int
	}{{"no token", "", http.StatusUnauthorized}, {"a service account not bound to the reader role", stranger, http.StatusForbidden}} {
		if code, body, err := get(tc.token); err != nil || code != tc.want {
			t.Errorf("GET /metrics with %s: %d %.200s, %v; want %d", tc.who, code, body, err, tc.want)
		}
	}
}
