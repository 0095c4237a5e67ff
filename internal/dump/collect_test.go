package dump

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/hostedref"
	"hypershift.dev/internal/kubeconfig"
	"hypershift.dev/internal/pki"
	"hypershift.dev/internal/runtime/process"
	"hypershift.dev/internal/testenv"
	"hypershift.dev/internal/version"
)

// Collect against a real management API server: the cluster's objects,
// its Secrets without values, the log of a crash-looping component (read
// only from the directory its owner marker names as this control plane's),
// an unreachable hosted cluster reported as not collected — and no key
// material anywhere, also where a log quoted a key.
func TestCollect(t *testing.T) {
	env := testenv.Start(t)
	ctx := t.Context()
	c := env.Client
	for _, ns := range []string{"clusters", "clusters-a"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	hc := hypershiftv1alpha1.NewHostedCluster("clusters", "a", hypershiftv1alpha1.SimulatedPlatform, version.KubernetesVersion)
	if err := c.Create(ctx, hc); err != nil {
		t.Fatal(err)
	}
	ca, err := pki.NewCA("dump-test")
	if err != nil {
		t.Fatal(err)
	}
	// The operator's copy, in the control-plane namespace with the
	// cluster's UID: an API server that is not there.
	kc, err := kubeconfig.Render(kubeconfig.Params{Name: "a", Server: "https://127.0.0.1:1", CAPEM: ca.CertPEM, Token: "hosted-admin-token-value"})
	if err != nil {
		t.Fatal(err)
	}
	// The copy beside the HostedCluster, rewritten by a user of its
	// namespace: a command dump must never run with its reader's rights.
	marker := filepath.Join(t.TempDir(), "exec-ran")
	planted := "apiVersion: v1\nkind: Config\nclusters:\n- name: a\n  cluster:\n    server: https://127.0.0.1:1\n    insecure-skip-tls-verify: true\ncontexts:\n- name: a\n  context: {cluster: a, user: a}\ncurrent-context: a\nusers:\n- name: a\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      interactiveMode: Never\n      command: /bin/sh\n      args: [-c, 'touch " + marker + "']\n"
	secrets := []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "clusters-a", Name: "root-ca"}, Data: map[string][]byte{"tls.crt": ca.CertPEM, "tls.key": ca.KeyPEM}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "clusters-a", Name: "admin-kubeconfig", Labels: map[string]string{hostedref.ClusterUIDLabel: string(hc.UID)}}, Data: map[string][]byte{"kubeconfig": kc}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "clusters", Name: "a-admin-kubeconfig", OwnerReferences: []metav1.OwnerReference{{APIVersion: hypershiftv1alpha1.GroupVersion.String(), Kind: "HostedCluster", Name: "a", UID: hc.UID}}}, Data: map[string][]byte{"kubeconfig": []byte(planted)}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "clusters", Name: "unrelated"}, Data: map[string][]byte{"password": []byte("another-clusters-password")}},
	}
	for _, s := range secrets {
		if err := c.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	hc.Status.KubeConfig = &hypershiftv1alpha1.KubeconfigSecretRef{Name: "a-admin-kubeconfig", Key: "kubeconfig"}
	if err := c.Status().Update(ctx, hc); err != nil {
		t.Fatal(err)
	}
	hcp := &hypershiftv1alpha1.HostedControlPlane{
		ObjectMeta: metav1.ObjectMeta{Namespace: "clusters-a", Name: "a"},
		Spec: hypershiftv1alpha1.HostedControlPlaneSpec{
			KubernetesVersion: hc.Spec.KubernetesVersion, Networking: hc.Spec.Networking, Etcd: hc.Spec.Etcd, Platform: hc.Spec.Platform,
		},
	}
	if err := c.Create(ctx, hcp); err != nil {
		t.Fatal(err)
	}
	hcp.Status.Components = []hypershiftv1alpha1.ComponentStatus{
		{Name: "etcd-0", Component: "etcd", Phase: hypershiftv1alpha1.ComponentRunning},
		{Name: "kube-scheduler", Component: "kube-scheduler", Phase: hypershiftv1alpha1.ComponentBackOff, Restarts: 4, LastExitReason: "Error: exit code 1", Message: "bind: address already in use"},
	}
	if err := c.Status().Update(ctx, hcp); err != nil {
		t.Fatal(err)
	}

	root := t.TempDir()
	dir := filepath.Join(root, "clusters-a")
	writeFile(t, filepath.Join(dir, process.OwnerFile), string(hcp.UID)+"\n")
	var log strings.Builder
	for range 300 {
		log.WriteString("I0101 starting\n")
	}
	log.WriteString("E0101 loaded key " + string(ca.KeyPEM) + "\nE0101 failed to listen: bind: address already in use\n")
	writeFile(t, filepath.Join(dir, "kube-scheduler", "kube-scheduler.log"), log.String())
	writeFile(t, filepath.Join(dir, "etcd-0", "etcd-0.log"), "etcd serving\n")

	cs := kubernetes.NewForConfigOrDie(env.RESTConfig)
	b, err := Collect(ctx, Options{Client: c, Clientset: cs, Cluster: client.ObjectKeyFromObject(hc), ProcessRoot: root, LogLines: 20})
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, f := range b.Files {
		files[f.Path] = string(f.Data)
		for _, leaked := range []string{"PRIVATE KEY", strings.Split(string(ca.KeyPEM), "\n")[1], "hosted-admin-token-value", "another-clusters-password"} {
			if strings.Contains(string(f.Data), leaked) {
				t.Errorf("%s contains %q", f.Path, leaked)
			}
		}
	}
	for _, want := range []string{"summary.txt", "management/hostedcluster.yaml", "management/hostedcontrolplane.yaml", "management/nodepools.yaml", "management/secrets.yaml", "management/events.yaml", "components/logs/kube-scheduler.log", "components/logs/etcd-0.log", "problems.txt"} {
		if _, ok := files[want]; !ok {
			t.Errorf("dump has no %s; it has %v", want, keys(files))
		}
	}
	// The last 20 lines: the error, the key's lines (redacted), and
	// some of the 300 lines before them.
	if got := files["components/logs/kube-scheduler.log"]; !strings.Contains(got, "address already in use") || strings.Count(got, "I0101 starting") >= 20 || !strings.Contains(got, "I0101 starting") {
		t.Errorf("scheduler log tail (want its last 20 lines):\n%s", got)
	}
	if s := files["management/secrets.yaml"]; !strings.Contains(s, "root-ca") || !strings.Contains(s, "tls.key (") || strings.Contains(s, "unrelated") {
		t.Errorf("secrets.yaml: want the cluster's Secrets by name and key, not another's:\n%s", s)
	}
	summary := files["summary.txt"]
	for _, want := range []string{"kube-scheduler is BackOff after 4 restarts", "bind: address already in use", "components/logs/kube-scheduler.log", "not reachable"} {
		if !strings.Contains(summary, want) {
			t.Errorf("summary lacks %q:\n%s", want, summary)
		}
	}
	if !strings.Contains(strings.Join(b.Problems, "\n"), "127.0.0.1:1") {
		t.Errorf("the hosted side was not tried through the operator's copy of the kubeconfig: %v", b.Problems)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("dump ran the exec command of the kubeconfig a namespace user planted beside the HostedCluster")
	}

	// A control-plane namespace copy without this cluster's UID is not
	// used.
	cp := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "clusters-a", Name: "admin-kubeconfig"}, cp); err != nil {
		t.Fatal(err)
	}
	cp.Labels[hostedref.ClusterUIDLabel] = "another-cluster"
	if err := c.Update(ctx, cp); err != nil {
		t.Fatal(err)
	}
	b, err = Collect(ctx, Options{Client: c, Clientset: cs, Cluster: client.ObjectKeyFromObject(hc), ProcessRoot: root})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(b.Problems, "\n"); !strings.Contains(got, "not this cluster's UID") || strings.Contains(got, "127.0.0.1:1") {
		t.Errorf("a control-plane copy labelled for another cluster: problems %v, want it refused unread", b.Problems)
	}

	// Another owner's directory of the same name is not read.
	writeFile(t, filepath.Join(dir, process.OwnerFile), "another-uid\n")
	b, err = Collect(ctx, Options{Client: c, Clientset: cs, Cluster: client.ObjectKeyFromObject(hc), ProcessRoot: root})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range b.Files {
		if strings.HasPrefix(f.Path, "components/logs/") {
			t.Errorf("read %s from a directory owned by another control plane", f.Path)
		}
	}
	if !strings.Contains(strings.Join(b.Problems, "\n"), "another-uid") {
		t.Errorf("problems do not name the foreign owner: %v", b.Problems)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
