package hostedcontrolplane

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/components"
	"hypershift.dev/internal/hostedref"
	"hypershift.dev/internal/runtime"
	"hypershift.dev/internal/testenv"
	"hypershift.dev/internal/version"
)

// TestRestoreParts: the restore's files carry the URL and the request
// Secret's keys, but never a URL or file root of the Secret's (the
// tenant's); etcd counts as restored only once every member runs, or once
// the control plane has completed a version.
func TestRestoreParts(t *testing.T) {
	files := restoreFiles("s3://b/a.bak", map[string][]byte{
		"key": []byte("k"), "AWS_ACCESS_KEY_ID": []byte("id"), "url": []byte("ignored"), "file-root": []byte("/"),
	})
	var paths []string
	for _, f := range files {
		paths = append(paths, f.Path+"="+string(f.Content))
		if !f.Secret {
			t.Errorf("restore file %s is not secret", f.Path)
		}
	}
	if got := strings.Join(paths, ","); got != "url=s3://b/a.bak,AWS_ACCESS_KEY_ID=id,key=k" {
		t.Errorf("restore files %s", got)
	}

	specs := []runtime.Spec{
		{Name: "etcd-0", Component: components.Etcd},
		{Name: "etcd-1", Component: components.Etcd},
		{Name: "kube-apiserver", Component: components.KubeAPIServer},
	}
	for _, tt := range []struct {
		name     string
		statuses []runtime.InstanceStatus
		want     bool
	}{
		{"no status yet (operator restarted)", nil, false},
		{"one member starting", []runtime.InstanceStatus{{Name: "etcd-0", Phase: runtime.Running}, {Name: "etcd-1", Phase: runtime.Starting}}, false},
		{"a member in back-off (its restore fails)", []runtime.InstanceStatus{{Name: "etcd-0", Phase: runtime.Running}, {Name: "etcd-1", Phase: runtime.BackOff}}, false},
		{"every member runs", []runtime.InstanceStatus{{Name: "etcd-0", Phase: runtime.Running}, {Name: "etcd-1", Phase: runtime.Running}, {Name: "kube-apiserver", Phase: runtime.Starting}}, true},
	} {
		if got := etcdRunning(specs, tt.statuses); got != tt.want {
			t.Errorf("%s: etcdRunning = %v, want %v", tt.name, got, tt.want)
		}
	}
	if etcdRunning(specs[2:], []runtime.InstanceStatus{{Name: "kube-apiserver", Phase: runtime.Running}}) {
		t.Error("etcdRunning without etcd specs")
	}

	hcp := &hypershiftv1alpha1.HostedControlPlane{}
	if hasRun(hcp) {
		t.Error("a control plane without a version has run")
	}
	hcp.Status.VersionHistory = []hypershiftv1alpha1.VersionHistory{{Version: "v1.37.1", State: hypershiftv1alpha1.PartialVersion}}
	if hasRun(hcp) {
		t.Error("a control plane with only a partial version has run")
	}
	hcp.Status.VersionHistory[0].State = hypershiftv1alpha1.CompletedVersion
	if !hasRun(hcp) {
		t.Error("a control plane with a completed version has not run")
	}

	rs := &runtime.Restore{}
	setRestore(specs, rs)
	if specs[0].Restore != rs || specs[1].Restore != rs || specs[2].Restore != nil {
		t.Errorf("setRestore gave %v %v %v, want the etcd members only", specs[0].Restore, specs[1].Restore, specs[2].Restore)
	}
}

// TestRestoreSecretOnlyFromTheOwningCluster: a restore request's Secret is
// read only from the namespace of the HostedCluster that owns the
// HostedControlPlane, checked by labels, UID, namespace and name. A
// HostedControlPlane made by hand — in its maker's namespace, or naming a
// cluster with the wrong UID, or no cluster — cannot have the operator read
// a Secret of another namespace, and neither can a request that names one.
func TestRestoreSecretOnlyFromTheOwningCluster(t *testing.T) {
	env := testenv.Start(t)
	ctx, c := t.Context(), env.Client
	for _, ns := range []string{"clusters", "clusters-a", "mallory", "victim"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	hc := hypershiftv1alpha1.NewHostedCluster("clusters", "a", hypershiftv1alpha1.SimulatedPlatform, version.KubernetesVersion)
	if err := c.Create(ctx, hc); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "clusters", Name: "backup-key"}, Data: map[string][]byte{"key": []byte("the owner's")}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "victim", Name: "backup-key"}, Data: map[string][]byte{"key": []byte("another tenant's")}},
	} {
		if err := c.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	owned := map[string]string{
		hostedref.ClusterNamespaceLabel: "clusters", hostedref.ClusterNameLabel: "a", hostedref.ClusterUIDLabel: string(hc.UID),
	}
	withUID := func(uid string) map[string]string {
		l := map[string]string{}
		for k, v := range owned {
			l[k] = v
		}
		l[hostedref.ClusterUIDLabel] = uid
		return l
	}
	r := &Reconciler{Client: c}
	for _, tc := range []struct {
		name, ns, hcpName, reqNamespace, want string
		labels                                map[string]string
	}{
		{"the owner's control plane", "clusters-a", "a", "clusters", "", owned},
		{"the owner's control plane, a request naming another namespace", "clusters-a", "a", "victim", "read only from the namespace of HostedCluster clusters/a", owned},
		{"made by hand in its maker's namespace", "mallory", "a", "clusters", "not at clusters-a/a", owned},
		{"made by hand, asking for another tenant's Secret", "mallory", "a", "victim", "not at clusters-a/a", owned},
		{"labelled with another UID", "clusters-a", "a", "clusters", "not its control plane", withUID("0d5c2a3e-0000-4000-8000-000000000000")},
		{"no labels", "mallory", "x", "victim", "no HostedCluster owns it", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hcp := &hypershiftv1alpha1.HostedControlPlane{ObjectMeta: metav1.ObjectMeta{Namespace: tc.ns, Name: tc.hcpName, Labels: tc.labels}}
			secret, err := r.restoreSecret(ctx, hcp, &hypershiftv1alpha1.RestoreRequest{URL: "s3://b/a.bak", Secret: "backup-key", Namespace: tc.reqNamespace})
			switch {
			case tc.want == "" && (err != nil || string(secret.Data["key"]) != "the owner's"):
				t.Errorf("restoreSecret = %v, %v; want the owner's Secret", secret, err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("restoreSecret = %v, %v; want refused: %q", secret, err, tc.want)
			}
		})
	}
}
