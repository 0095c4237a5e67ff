package clusterapi_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/controller/nodepool/platform"
	"hypershift.dev/internal/controller/nodepool/platform/clusterapi"
	"hypershift.dev/internal/controller/nodepool/platform/host"
	"hypershift.dev/internal/testenv"
	"hypershift.dev/internal/version"
)

// oldVersion is a kubelet version a minor older than the control
// plane's, within the skew a NodePool may have.
var oldVersion = fmt.Sprintf("v1.%d.0", utilversion.MustParseSemantic(version.KubernetesVersion).Minor()-1)

// TestPlatform drives the Host platform's Cluster API part against a real
// API server with Cluster API's CRDs, and no Cluster API controller: what
// it writes for a pool, what it leaves alone, what it reports of the
// Machines a test makes in Cluster API's place, and how a pool goes. Each
// case has a HostedCluster of its own.
func TestPlatform(t *testing.T) {
	f := setUp(t)
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, f *fixture)
	}{
		{"WritesEveryObject", writesEveryObject},
		{"AutoRepair", autoRepair},
		{"LeavesOthersObjects", leavesOthersObjects},
		{"WaitsForClusterAPI", waitsForClusterAPI},
		{"Deleting", deleting},
		{"Machines", machines},
		{"MachineStatus", machineStatus},
		{"MachineVersionsBounded", machineVersionsBounded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t, f)
		})
	}
}

// writesEveryObject: a Reconcile writes the Cluster, its HostCluster and
// kubeconfig Secret, and each pool's JoinConfigTemplate,
// HostMachineTemplate and MachineDeployment whole, labelled with their
// owner's UID; a later one rewrites what changed and drops what the pool
// no longer asks for.
func writesEveryObject(t *testing.T, f *fixture) {
	cl := f.cluster(t, "writes", "dev")
	m := host.New(f.c, started)
	// tuned: a rolling update of an int and a percentage, a drain timeout.
	tuned := f.nodePool(t, cl, "tuned", func(np *hypershiftv1alpha1.NodePool) {
		np.Spec.Management.Replace = &hypershiftv1alpha1.ReplaceUpgrade{RollingUpdate: &hypershiftv1alpha1.RollingUpdate{
			MaxSurge: ptr.To(intstr.FromInt32(2)), MaxUnavailable: ptr.To(intstr.FromString("25%")),
		}}
		np.Spec.NodeDrainTimeout = &metav1.Duration{Duration: 90 * time.Second}
	})
	// plain: none of them, and autoscaled.
	plain := f.nodePool(t, cl, "plain", func(np *hypershiftv1alpha1.NodePool) {
		np.Spec.Replicas = nil
		np.Spec.AutoScaling = &hypershiftv1alpha1.NodePoolAutoScaling{Min: 1, Max: 4}
	})
	cl.hc.Status.ControlPlaneEndpoint = hypershiftv1alpha1.APIEndpoint{Host: "10.0.0.1", Port: 6443}

	tp := poolOf(cl, tuned, version.KubernetesVersion)
	r := reconcile(t, m, tp, 3)
	if r.Problem != "" || r.Machines != 0 || !r.Busy {
		t.Errorf("report of a pool of no machines that wants 3: %+v, want Busy and no problem", r)
	}
	if len(tp.requeues) == 0 {
		t.Error("a busy pool asked for no requeue")
	}
	pp := poolOf(cl, plain, oldVersion)
	reconcile(t, m, pp, 1)

	// What the HostedCluster's pools share.
	c := f.get(t, clusterGVK, cl.ns, "dev")
	wantOwner(t, c, cl.hc.UID)
	wantField(t, c, map[string]any{"apiGroup": "hypershift.dev", "kind": "HostedControlPlane", "name": "dev"}, "spec", "controlPlaneRef")
	wantField(t, c, map[string]any{"apiGroup": "hypershift.dev", "kind": "HostCluster", "name": "dev"}, "spec", "infrastructureRef")
	wantField(t, c, map[string]any{"host": "10.0.0.1", "port": int64(6443)}, "spec", "controlPlaneEndpoint")
	wantOwner(t, f.get(t, hostClusterGVK, cl.ns, "dev"), cl.hc.UID)
	secret := f.get(t, secretGVK, cl.ns, "dev-kubeconfig")
	wantOwner(t, secret, cl.hc.UID)
	wantKubeconfig := func(want []byte) {
		t.Helper()
		s := &corev1.Secret{}
		must(t, f.c.Get(t.Context(), client.ObjectKey{Namespace: cl.ns, Name: "dev-kubeconfig"}, s))
		if s.Type != clusterapi.SecretType {
			t.Errorf("Secret dev-kubeconfig: type %q, want %q", s.Type, clusterapi.SecretType)
		}
		if string(s.Data["value"]) != string(want) || len(s.Data) != 1 {
			t.Errorf("Secret dev-kubeconfig: data %q, want only value = the admin kubeconfig %q", s.Data, want)
		}
	}
	wantKubeconfig(adminKubeconfig(t, "first"))

	// Each pool's objects.
	for _, np := range []*hypershiftv1alpha1.NodePool{tuned, plain} {
		wantOwner(t, f.get(t, joinConfigTemplGVK, cl.ns, np.Name), np.UID)
		wantField(t, f.get(t, joinConfigTemplGVK, cl.ns, np.Name), np.Name, "spec", "template", "spec", "nodePool")
		wantOwner(t, f.get(t, hostMachineTemplGVK, cl.ns, np.Name), np.UID)
		md := f.get(t, machineDeploymentGVK, cl.ns, np.Name)
		wantOwner(t, md, np.UID)
		wantField(t, md, "dev", "spec", "clusterName")
		wantField(t, md, map[string]any{clusterapi.ClusterNameLabel: "dev", clusterapi.DeploymentNameLabel: np.Name}, "spec", "selector", "matchLabels")
		wantField(t, md, map[string]any{"apiGroup": "hypershift.dev", "kind": "JoinConfigTemplate", "name": np.Name}, "spec", "template", "spec", "bootstrap", "configRef")
		wantField(t, md, map[string]any{"apiGroup": "hypershift.dev", "kind": "HostMachineTemplate", "name": np.Name}, "spec", "template", "spec", "infrastructureRef")
		wantField(t, md, "RollingUpdate", "spec", "rollout", "strategy", "type")
	}
	md := f.get(t, machineDeploymentGVK, cl.ns, "tuned")
	wantField(t, md, int64(3), "spec", "replicas")
	wantField(t, md, version.KubernetesVersion, "spec", "template", "spec", "version")
	wantField(t, md, map[string]any{"maxSurge": int64(2), "maxUnavailable": "25%"}, "spec", "rollout", "strategy", "rollingUpdate")
	wantField(t, md, map[string]any{"nodeDrainTimeoutSeconds": int64(90)}, "spec", "template", "spec", "deletion")
	if a := md.GetAnnotations(); a[clusterapi.AutoscalerMinAnnotation] != "" || a[clusterapi.AutoscalerMaxAnnotation] != "" {
		t.Errorf("MachineDeployment tuned of a pool without autoScaling: annotations %v", a)
	}
	md = f.get(t, machineDeploymentGVK, cl.ns, "plain")
	wantField(t, md, int64(1), "spec", "replicas")
	wantField(t, md, oldVersion, "spec", "template", "spec", "version")
	wantField(t, md, map[string]any{"maxSurge": int64(1), "maxUnavailable": int64(0)}, "spec", "rollout", "strategy", "rollingUpdate")
	wantField(t, md, nil, "spec", "template", "spec", "deletion")
	if a := md.GetAnnotations(); a[clusterapi.AutoscalerMinAnnotation] != "1" || a[clusterapi.AutoscalerMaxAnnotation] != "4" {
		t.Errorf("MachineDeployment plain of a pool autoscaled from 1 to 4: annotations %v", a)
	}

	// Written whole: what the pools no longer ask for goes, a new
	// admin kubeconfig reaches its copy.
	f.update(t, tuned, func(np *hypershiftv1alpha1.NodePool) {
		np.Spec.Management.Replace = nil
		np.Spec.NodeDrainTimeout = nil
	})
	f.update(t, plain, func(np *hypershiftv1alpha1.NodePool) {
		np.Spec.AutoScaling = nil
		np.Spec.Replicas = ptr.To[int32](2)
	})
	renewed := adminKubeconfig(t, "renewed")
	f.setAdminKubeconfig(t, cl, renewed)
	reconcile(t, m, poolOf(cl, tuned, version.KubernetesVersion), 5)
	reconcile(t, m, poolOf(cl, plain, version.KubernetesVersion), 2)
	md = f.get(t, machineDeploymentGVK, cl.ns, "tuned")
	wantField(t, md, int64(5), "spec", "replicas")
	wantField(t, md, map[string]any{"maxSurge": int64(1), "maxUnavailable": int64(0)}, "spec", "rollout", "strategy", "rollingUpdate")
	wantField(t, md, nil, "spec", "template", "spec", "deletion")
	md = f.get(t, machineDeploymentGVK, cl.ns, "plain")
	wantField(t, md, int64(2), "spec", "replicas")
	wantField(t, md, version.KubernetesVersion, "spec", "template", "spec", "version")
	if a := md.GetAnnotations(); a[clusterapi.AutoscalerMinAnnotation] != "" || a[clusterapi.AutoscalerMaxAnnotation] != "" {
		t.Errorf("MachineDeployment plain of a pool no longer autoscaled: annotations %v", a)
	}
	wantKubeconfig(renewed)
}

// autoRepair: a pool with autoRepair has a MachineHealthCheck with the
// default timeouts or its annotation's; Validate refuses an annotation out
// of bounds; without autoRepair the MachineHealthCheck goes.
func autoRepair(t *testing.T, f *fixture) {
	cl := f.cluster(t, "repair", "dev")
	m := host.New(f.c, started)
	np := f.nodePool(t, cl, "workers", func(np *hypershiftv1alpha1.NodePool) { np.Spec.Management.AutoRepair = true })
	p := poolOf(cl, np, version.KubernetesVersion)
	must(t, m.Validate(p.Pool))
	reconcile(t, m, p, 1)

	conditions := func(seconds int64) []any {
		return []any{
			map[string]any{"type": "Ready", "status": "False", "timeoutSeconds": seconds},
			map[string]any{"type": "Ready", "status": "Unknown", "timeoutSeconds": seconds},
		}
	}
	mhc := f.get(t, machineHealthCheckGVK, cl.ns, "workers")
	wantOwner(t, mhc, np.UID)
	wantField(t, mhc, "dev", "spec", "clusterName")
	wantField(t, mhc, map[string]any{clusterapi.ClusterNameLabel: "dev", clusterapi.DeploymentNameLabel: "workers"}, "spec", "selector", "matchLabels")
	wantField(t, mhc, int64(600), "spec", "checks", "nodeStartupTimeoutSeconds")
	wantField(t, mhc, conditions(300), "spec", "checks", "unhealthyNodeConditions")

	for _, tc := range []struct{ value, refused string }{
		{"30s", ""}, {"24h", ""}, {"10s", "10s"}, {"25h", "25h"}, {"bogus", "bogus"},
	} {
		np.Annotations = map[string]string{clusterapi.MachineHealthCheckTimeoutAnnotation: tc.value}
		err := m.Validate(p.Pool)
		testenv.ExpectError(t, err, tc.refused)
		if err != nil && !strings.Contains(err.Error(), clusterapi.MachineHealthCheckTimeoutAnnotation) {
			t.Errorf("Validate with %s: %v does not name the annotation", tc.value, err)
		}
	}

	f.update(t, np, func(np *hypershiftv1alpha1.NodePool) {
		np.Annotations = map[string]string{clusterapi.MachineHealthCheckTimeoutAnnotation: "30s"}
	})
	reconcile(t, m, poolOf(cl, np, version.KubernetesVersion), 1)
	wantField(t, f.get(t, machineHealthCheckGVK, cl.ns, "workers"), conditions(30), "spec", "checks", "unhealthyNodeConditions")

	f.update(t, np, func(np *hypershiftv1alpha1.NodePool) { np.Spec.Management.AutoRepair = false })
	reconcile(t, m, poolOf(cl, np, version.KubernetesVersion), 1)
	f.absent(t, machineHealthCheckGVK, cl.ns, "workers")
	f.get(t, machineDeploymentGVK, cl.ns, "workers")
}

// leavesOthersObjects: an object of a pool's name that was not made for
// the pool — no owner label, or another owner's — is reported and left
// exactly as it is by Reconcile, Cleanup and Delete.
func leavesOthersObjects(t *testing.T, f *fixture) {
	cl := f.cluster(t, "others", "dev")
	m := host.New(f.c, started)
	ctx := t.Context()

	// A MachineDeployment of pool md's name, made by someone else.
	mdPool := f.nodePool(t, cl, "md", nil)
	theirs := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"clusterName": "dev",
		"replicas":    int64(7),
		"selector":    map[string]any{"matchLabels": map[string]any{"app": "theirs"}},
		"template": map[string]any{
			"metadata": map[string]any{"labels": map[string]any{"app": "theirs"}},
			"spec": map[string]any{
				"clusterName": "dev",
				"version":     oldVersion,
				"bootstrap":   map[string]any{"configRef": map[string]any{"apiGroup": "example.com", "kind": "Config", "name": "theirs"}},
				"infrastructureRef": map[string]any{
					"apiGroup": "example.com", "kind": "Machine", "name": "theirs",
				},
			},
		},
	}}}
	theirs.SetGroupVersionKind(machineDeploymentGVK)
	theirs.SetNamespace(cl.ns)
	theirs.SetName("md")
	// Labelled for another owner: a pool of the same name deleted since.
	theirs.SetLabels(map[string]string{"app": "theirs", clusterapi.OwnerLabel: "0b7c7b0e-0000-4000-8000-000000000000"})
	must(t, f.c.Create(ctx, theirs))

	// A JoinConfigTemplate of pool jct's name, without the label.
	jctPool := f.nodePool(t, cl, "jct", nil)
	theirJCT := &hypershiftv1alpha1.JoinConfigTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: cl.ns, Name: "jct", Labels: map[string]string{"app": "theirs"}},
		Spec: hypershiftv1alpha1.JoinConfigTemplateSpec{Template: hypershiftv1alpha1.JoinConfigTemplateResource{
			Spec: hypershiftv1alpha1.JoinConfigSpec{NodePool: "another"},
		}},
	}
	must(t, f.c.Create(ctx, theirJCT))

	// unchanged: the object is as it was read before, to the byte.
	unchanged := func(before *unstructured.Unstructured) {
		t.Helper()
		after := f.get(t, before.GroupVersionKind(), before.GetNamespace(), before.GetName())
		if !reflect.DeepEqual(after.Object, before.Object) {
			t.Errorf("%s %s/%s was changed:\nbefore %v\nafter  %v", before.GetKind(), before.GetNamespace(), before.GetName(), before.Object, after.Object)
		}
	}
	mdBefore := f.get(t, machineDeploymentGVK, cl.ns, "md")
	jctBefore := f.get(t, joinConfigTemplGVK, cl.ns, "jct")

	for _, tc := range []struct {
		p    *pool
		kind string
	}{
		{poolOf(cl, mdPool, version.KubernetesVersion), "MachineDeployment"},
		{poolOf(cl, jctPool, version.KubernetesVersion), "JoinConfigTemplate"},
	} {
		r := reconcile(t, m, tc.p, 2)
		name := tc.kind + " " + cl.ns + "/" + tc.p.NodePool.Name
		if !strings.Contains(r.Problem, name) || !strings.Contains(r.Problem, "not made for this pool") {
			t.Errorf("pool %s: Problem %q, want one naming %s, not made for this pool", tc.p.NodePool.Name, r.Problem, name)
		}
	}
	unchanged(mdBefore)
	unchanged(jctBefore)
	// Pool jct stopped at its first object; pool md wrote those before
	// its MachineDeployment.
	f.absent(t, hostMachineTemplGVK, cl.ns, "jct")
	f.absent(t, machineDeploymentGVK, cl.ns, "jct")
	wantOwner(t, f.get(t, joinConfigTemplGVK, cl.ns, "md"), mdPool.UID)
	wantOwner(t, f.get(t, hostMachineTemplGVK, cl.ns, "md"), mdPool.UID)

	// Cleanup and Delete remove the pools' own objects only.
	for _, np := range []*hypershiftv1alpha1.NodePool{mdPool, jctPool} {
		must(t, m.Cleanup(ctx, poolOf(cl, np, version.KubernetesVersion).Pool))
	}
	f.absent(t, joinConfigTemplGVK, cl.ns, "md")
	f.absent(t, hostMachineTemplGVK, cl.ns, "md")
	unchanged(mdBefore)
	unchanged(jctBefore)
	for _, np := range []*hypershiftv1alpha1.NodePool{mdPool, jctPool} {
		must(t, m.Delete(ctx, poolOf(cl, np, "").Pool))
	}
	unchanged(mdBefore)
	unchanged(jctBefore)

	// In another cluster, a kubeconfig Secret of its name made by someone
	// else is not given the admin kubeconfig, and nothing after it is
	// written.
	cl2 := f.cluster(t, "others2", "dev")
	must(t, f.c.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: cl2.ns, Name: "dev-kubeconfig"},
		Data:       map[string][]byte{"value": []byte("theirs")},
	}))
	secretBefore := f.get(t, secretGVK, cl2.ns, "dev-kubeconfig")
	np := f.nodePool(t, cl2, "workers", nil)
	r := reconcile(t, m, poolOf(cl2, np, version.KubernetesVersion), 1)
	if name := "Secret " + cl2.ns + "/dev-kubeconfig"; !strings.Contains(r.Problem, name) {
		t.Errorf("Problem %q, want one naming %s", r.Problem, name)
	}
	unchanged(secretBefore)
	f.absent(t, clusterGVK, cl2.ns, "dev")
	f.absent(t, machineDeploymentGVK, cl2.ns, "workers")
}

// waitsForClusterAPI: while Cluster API does not run, Reconcile writes
// nothing and says so, and Delete removes nothing; a platform that runs no
// Cluster API refuses every pool.
func waitsForClusterAPI(t *testing.T, f *fixture) {
	cl := f.cluster(t, "waits", "dev")
	np := f.nodePool(t, cl, "workers", func(np *hypershiftv1alpha1.NodePool) { np.Spec.Management.AutoRepair = true })
	starts := 0
	m := host.New(f.c, func(ctx context.Context) error {
		if ctx == nil {
			t.Error("Start called without a context")
		}
		starts++
		return errors.New("its manager is not ready yet")
	})
	p := poolOf(cl, np, version.KubernetesVersion)
	must(t, m.Validate(p.Pool))
	r := reconcile(t, m, p, 2)
	if starts != 1 {
		t.Errorf("Start called %d times, want 1", starts)
	}
	if !strings.HasPrefix(r.Problem, "Waiting for Cluster API") || !strings.Contains(r.Problem, "its manager is not ready yet") {
		t.Errorf("Problem %q, want Waiting for Cluster API: the error", r.Problem)
	}
	if !r.Busy {
		t.Error("a pool waiting for Cluster API is not Busy")
	}
	if len(p.requeues) == 0 || p.requeues[0] <= 0 {
		t.Errorf("requeues %v, want one", p.requeues)
	}
	f.absent(t, clusterGVK, cl.ns, "dev")
	f.absent(t, hostClusterGVK, cl.ns, "dev")
	f.absent(t, secretGVK, cl.ns, "dev-kubeconfig")
	f.absent(t, joinConfigTemplGVK, cl.ns, "workers")
	f.absent(t, hostMachineTemplGVK, cl.ns, "workers")
	f.absent(t, machineDeploymentGVK, cl.ns, "workers")
	f.absent(t, machineHealthCheckGVK, cl.ns, "workers")

	// Once it runs the objects are written; Delete waits for it again.
	reconcile(t, host.New(f.c, started), poolOf(cl, np, version.KubernetesVersion), 2)
	before := f.get(t, machineDeploymentGVK, cl.ns, "workers")
	err := m.Delete(t.Context(), poolOf(cl, np, "").Pool)
	testenv.ExpectError(t, err, "its manager is not ready yet")
	if after := f.get(t, machineDeploymentGVK, cl.ns, "workers"); after.GetResourceVersion() != before.GetResourceVersion() {
		t.Error("Delete changed the MachineDeployment while Cluster API does not run")
	}
	f.get(t, machineHealthCheckGVK, cl.ns, "workers")

	none := host.New(f.c, nil)
	testenv.ExpectError(t, none.Validate(p.Pool), "does not run Cluster API")
	other := *cl.hc
	other.Spec.Platform.Type = hypershiftv1alpha1.NonePlatform
	p.HostedCluster = &other
	testenv.ExpectError(t, m.Validate(p.Pool), "cannot join HostedCluster")
}

// deleting: a pool being deleted (no version known) scales to 0 keeping
// its MachineDeployment's version; Delete removes the pool's objects,
// and returns an error until its Machines are gone.
func deleting(t *testing.T, f *fixture) {
	cl := f.cluster(t, "deleting", "dev")
	m := host.New(f.c, started)
	ctx := t.Context()
	np := f.nodePool(t, cl, "going", func(np *hypershiftv1alpha1.NodePool) { np.Spec.Management.AutoRepair = true })
	stays := f.nodePool(t, cl, "stays", nil)
	reconcile(t, m, poolOf(cl, np, oldVersion), 2)
	reconcile(t, m, poolOf(cl, stays, version.KubernetesVersion), 1)
	mdVersion := func(name string) any {
		return field(f.get(t, machineDeploymentGVK, cl.ns, name), "spec", "template", "spec", "version")
	}

	// A held version keeps the MachineDeployment's.
	held := poolOf(cl, np, version.KubernetesVersion)
	held.VersionHeld = true
	reconcile(t, m, held, 2)
	if v := mdVersion("going"); v != oldVersion {
		t.Errorf("a held version: MachineDeployment version %v, want %s kept", v, oldVersion)
	}

	// Being deleted: no version is known.
	p := poolOf(cl, np, "")
	p.Deleting = true
	reconcile(t, m, p, 0)
	md := f.get(t, machineDeploymentGVK, cl.ns, "going")
	wantField(t, md, int64(0), "spec", "replicas")
	wantField(t, md, oldVersion, "spec", "template", "spec", "version")

	// A pool deleted before it had a MachineDeployment gets its own
	// version.
	early := f.nodePool(t, cl, "early", func(np *hypershiftv1alpha1.NodePool) { np.Spec.KubernetesVersion = oldVersion })
	reconcile(t, m, poolOf(cl, early, ""), 0)
	if v := mdVersion("early"); v != oldVersion {
		t.Errorf("a pool deleted before its MachineDeployment: version %v, want its spec.kubernetesVersion %s", v, oldVersion)
	}

	// Its Machines, as Cluster API would have left them, and one of
	// the pool that stays.
	for _, name := range []string{"going-a", "going-b"} {
		f.machine(t, cl, "going", name, oldVersion, "", nil)
	}
	f.machine(t, cl, "stays", "stays-a", version.KubernetesVersion, "node-stays-a", nil)
	staysBefore := map[string]string{}
	for _, k := range []struct{ kind, name string }{{"MachineDeployment", "stays"}, {"JoinConfigTemplate", "stays"}, {"HostMachineTemplate", "stays"}} {
		staysBefore[k.kind] = f.get(t, gvkOf(k.kind), cl.ns, k.name).GetResourceVersion()
	}
	err := m.Delete(ctx, p.Pool)
	testenv.ExpectError(t, err, "waiting for the 2 machines")
	for _, k := range []string{"MachineDeployment", "MachineHealthCheck", "JoinConfigTemplate", "HostMachineTemplate"} {
		f.absent(t, gvkOf(k), cl.ns, "going")
	}
	// The cluster's objects and another pool's stay.
	for kind, rv := range staysBefore {
		if got := f.get(t, gvkOf(kind), cl.ns, "stays").GetResourceVersion(); got != rv {
			t.Errorf("%s stays of another pool was changed by Delete", kind)
		}
	}
	f.get(t, clusterGVK, cl.ns, "dev")
	f.get(t, hostClusterGVK, cl.ns, "dev")
	f.get(t, secretGVK, cl.ns, "dev-kubeconfig")

	// Still there: an error again.
	testenv.ExpectError(t, m.Delete(ctx, p.Pool), "waiting for the 2 machines")
	f.deleteMachine(t, cl, "going-a")
	testenv.ExpectError(t, m.Delete(ctx, p.Pool), "waiting for the 1 machines")
	f.deleteMachine(t, cl, "going-b")
	must(t, m.Delete(ctx, p.Pool))
	f.get(t, machineDeploymentGVK, cl.ns, "stays")

	// Without its HostedCluster there is nothing of the pool's to find.
	orphan := poolOf(cl, np, "")
	orphan.HostedCluster = nil
	must(t, m.Delete(ctx, orphan.Pool))
}

// machines: Machines names the Nodes of the pool's HostMachines; the
// report counts the pool's Machines, names those whose Node has not
// registered and the Nodes being drained, and says what a rollout does.
func machines(t *testing.T, f *fixture) {
	cl := f.cluster(t, "machines", "dev")
	m := host.New(f.c, started)
	ctx := t.Context()
	np := f.nodePool(t, cl, "workers", nil)
	p := poolOf(cl, np, version.KubernetesVersion)
	reconcile(t, m, p, 3)

	// HostMachines: the pool's, one without a provider ID yet, another
	// pool's, and one of the pool's labels in another namespace.
	hostMachine := func(ns, name, poolName, providerID string) {
		must(t, f.c.Create(ctx, &hypershiftv1alpha1.HostMachine{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{
				clusterapi.ClusterNameLabel: "dev", clusterapi.DeploymentNameLabel: poolName,
			}},
			Spec: hypershiftv1alpha1.HostMachineSpec{ProviderID: providerID},
		}))
	}
	hostMachine(cl.ns, "workers-a", "workers", hypershiftv1alpha1.HostProviderIDPrefix+"node-a")
	hostMachine(cl.ns, "workers-b", "workers", hypershiftv1alpha1.HostProviderIDPrefix+"node-b")
	hostMachine(cl.ns, "workers-c", "workers", "")
	hostMachine(cl.ns, "others-a", "others", hypershiftv1alpha1.HostProviderIDPrefix+"others-a")
	hostMachine(cl.hc.Namespace, "workers-x", "workers", hypershiftv1alpha1.HostProviderIDPrefix+"elsewhere")
	names, err := m.Machines(p.Pool)
	must(t, err)
	slices.Sort(names)
	if want := []string{"node-a", "node-b"}; !slices.Equal(names, want) {
		t.Errorf("Machines = %q, want %q", names, want)
	}

	// Another provider's IDs, which a HostMachine cannot hold: a provider
	// whose machines are Cluster API's own Machines.
	foreign := *m
	foreign.Infra.Group, foreign.Infra.Version, foreign.Infra.MachineKind = clusterapi.Group, clusterapi.Version, "Machine"
	withID := func(id string) func(u *unstructured.Unstructured) {
		return func(u *unstructured.Unstructured) {
			must(t, unstructured.SetNestedField(u.Object, id, "spec", "providerID"))
		}
	}
	f.machine(t, cl, "ids", "ids-host", version.KubernetesVersion, "", withID(hypershiftv1alpha1.HostProviderIDPrefix+"node-h"))
	f.machine(t, cl, "ids", "ids-aws", version.KubernetesVersion, "", withID("aws:///us-east-1a/i-0123456789"))
	f.machine(t, cl, "ids", "ids-kind", version.KubernetesVersion, "", withID("kind://docker/dev/node-k"))
	ids := f.nodePool(t, cl, "ids", nil)
	names, err = foreign.Machines(poolOf(cl, ids, version.KubernetesVersion).Pool)
	must(t, err)
	if want := []string{"node-h"}; !slices.Equal(names, want) {
		t.Errorf("Machines of Machines with other providers' IDs = %q, want %q", names, want)
	}

	// The pool's Machines: one up to date, two not registered yet (one
	// whose infrastructure failed, one waiting), one of the old version
	// and one being deleted; and another pool's.
	f.machine(t, cl, "workers", "workers-ready", version.KubernetesVersion, "node-ready", nil)
	newB := f.machine(t, cl, "workers", "workers-new-b", version.KubernetesVersion, "", nil)
	newA := f.machine(t, cl, "workers", "workers-new-a", version.KubernetesVersion, "", nil)
	f.machine(t, cl, "workers", "workers-old", oldVersion, "node-old", nil)
	gone := f.machine(t, cl, "workers", "workers-gone", oldVersion, "node-gone", func(u *unstructured.Unstructured) {
		u.SetFinalizers([]string{"test.hypershift.dev/keep"})
	})
	must(t, f.c.Delete(ctx, gone))
	f.machine(t, cl, "others", "others-1", oldVersion, "", nil)
	f.setConditions(t, newA, metav1.Condition{
		Type: "InfrastructureReady", Status: metav1.ConditionFalse, Reason: "ProvisioningFailed", Message: "userdata exited 1",
	})
	f.setConditions(t, newB, metav1.Condition{
		Type: "BootstrapConfigReady", Status: metav1.ConditionFalse, Reason: "WaitingForControlPlaneInitialized", Message: "waiting",
	})
	f.setConditions(t, f.get(t, hostClusterGVK, cl.ns, "dev"), metav1.Condition{
		Type: "Ready", Status: metav1.ConditionFalse, Reason: "NoMachineNetwork", Message: "no machine network",
	})

	p = poolOf(cl, np, version.KubernetesVersion)
	r := reconcile(t, m, p, 3)
	if r.Machines != 5 {
		t.Errorf("Machines %d, want the pool's 5", r.Machines)
	}
	if want := []string{"workers-new-a", "workers-new-b"}; !slices.Equal(r.Unregistered, want) {
		t.Errorf("Unregistered %q, want %q", r.Unregistered, want)
	}
	if want := []string{"node-gone"}; !slices.Equal(r.Draining, want) {
		t.Errorf("Draining %q, want %q", r.Draining, want)
	}
	if want := "Replacing 1 of 5 machines with machines of " + version.KubernetesVersion; r.Rollout != want {
		t.Errorf("Rollout %q, want %q", r.Rollout, want)
	}
	if want := "HostCluster dev: no machine network; Machine workers-new-a: InfrastructureReady ProvisioningFailed: userdata exited 1"; r.Problem != want {
		t.Errorf("Problem %q, want %q", r.Problem, want)
	}
	if !r.Busy || len(p.requeues) == 0 {
		t.Errorf("Busy %v, requeues %v: want busy and a requeue", r.Busy, p.requeues)
	}

	// A pool whose Machines are all there, registered and up to date is
	// not busy.
	calm := f.nodePool(t, cl, "calm", nil)
	f.machine(t, cl, "calm", "calm-1", version.KubernetesVersion, "node-calm-1", nil)
	cp := poolOf(cl, calm, version.KubernetesVersion)
	r = reconcile(t, m, cp, 1)
	if r.Busy || r.Rollout != "" || len(r.Unregistered) > 0 || len(r.Draining) > 0 || r.Machines != 1 || len(cp.requeues) > 0 {
		t.Errorf("report of a pool of its one up-to-date machine: %+v, requeues %v; want not busy", r, cp.requeues)
	}

	// One being deleted is enough to keep it busy.
	leaving := f.machine(t, cl, "calm", "calm-2", version.KubernetesVersion, "node-calm-2", func(u *unstructured.Unstructured) {
		u.SetFinalizers([]string{"test.hypershift.dev/keep"})
	})
	must(t, f.c.Delete(ctx, leaving))
	cp = poolOf(cl, calm, version.KubernetesVersion)
	r = reconcile(t, m, cp, 2)
	if !r.Busy || len(cp.requeues) == 0 || !slices.Equal(r.Draining, []string{"node-calm-2"}) {
		t.Errorf("report of a pool of a machine and one being deleted: %+v, requeues %v; want busy, draining node-calm-2", r, cp.requeues)
	}

	// Let the deleted Machines go.
	for _, name := range []string{"workers-gone", "calm-2"} {
		u := f.get(t, machineGVK, cl.ns, name)
		u.SetFinalizers(nil)
		must(t, f.c.Update(ctx, u))
	}
}

// machineStatus: during a Replace rollout, the report counts a Machine
// ready only when Cluster API says it is Ready, it is not being deleted
// and its Node is bound to the pool and Ready; it names the registered
// Machines that are not, and the Nodes that are not healthy; its versions
// are those of every Machine's Node, the one being deleted too.
func machineStatus(t *testing.T, f *fixture) {
	cl := f.cluster(t, "status", "dev")
	m := host.New(f.c, started)
	ctx := t.Context()
	np := f.nodePool(t, cl, "workers", nil)
	reconcile(t, m, poolOf(cl, np, version.KubernetesVersion), 3)

	ready := metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Ready"}
	notReady := metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: "NotReady"}
	healthy := metav1.Condition{Type: "NodeHealthy", Status: metav1.ConditionTrue, Reason: "NodeHealthy"}
	pressure := metav1.Condition{Type: "NodeHealthy", Status: metav1.ConditionFalse, Reason: "NodeNotHealthy"}
	keep := func(u *unstructured.Unstructured) { u.SetFinalizers([]string{"test.hypershift.dev/keep"}) }
	for _, mc := range []struct {
		name, version, node string
		conds               []metav1.Condition
		edit                func(u *unstructured.Unstructured)
	}{
		{"workers-new", version.KubernetesVersion, "node-new", []metav1.Condition{ready, healthy}, nil},
		// Cluster API has not seen its Node go NotReady yet.
		{"workers-lagging", version.KubernetesVersion, "node-lagging", []metav1.Condition{ready, healthy}, nil},
		// Its Node is Ready, with disk pressure.
		{"workers-pressure", version.KubernetesVersion, "node-pressure", []metav1.Condition{notReady, pressure}, nil},
		// Its Node is not bound to the pool.
		{"workers-unbound", version.KubernetesVersion, "node-unbound", []metav1.Condition{ready, healthy}, nil},
		{"workers-old", oldVersion, "node-old", []metav1.Condition{ready, healthy}, nil},
		// Being deleted, its Node still Ready.
		{"workers-leaving", oldVersion, "node-leaving", []metav1.Condition{ready, healthy}, keep},
		{"workers-unregistered", version.KubernetesVersion, "", nil, nil},
	} {
		u := f.machine(t, cl, "workers", mc.name, mc.version, mc.node, mc.edit)
		if len(mc.conds) > 0 {
			f.setConditions(t, u, mc.conds...)
		}
		if mc.node != "" {
			f.setKubeletVersion(t, u, mc.version)
		}
	}
	must(t, f.c.Delete(ctx, f.get(t, machineGVK, cl.ns, "workers-leaving")))

	p := poolOf(cl, np, version.KubernetesVersion)
	p.Nodes = map[string]*corev1.Node{}
	for _, n := range []*corev1.Node{
		node("node-new", true), node("node-lagging", false), node("node-pressure", true),
		node("node-old", true), node("node-leaving", true),
	} {
		p.Nodes[n.Name] = n
	}
	r := reconcile(t, m, p, 3)
	st := r.MachineStatus
	if st == nil {
		t.Fatal("no MachineStatus in the report of a pool of Machines")
	}
	if st.Ready != 2 || st.Registered != 5 {
		t.Errorf("Ready %d of %d registered, want 2 (workers-new, workers-old) of 5", st.Ready, st.Registered)
	}
	if want := []string{"workers-lagging", "workers-pressure", "workers-unbound"}; !slices.Equal(st.NotReady, want) {
		t.Errorf("NotReady %q, want %q", st.NotReady, want)
	}
	if want := []string{"node-lagging", "node-pressure", "node-unbound"}; !slices.Equal(st.Unhealthy, want) {
		t.Errorf("Unhealthy %q, want %q", st.Unhealthy, want)
	}
	if want := []string{oldVersion, version.KubernetesVersion}; !slices.Equal(st.Versions, want) || st.OtherVersions != 0 {
		t.Errorf("Versions %q and %d others, want %q", st.Versions, st.OtherVersions, want)
	}
	if r.Rollout == "" {
		t.Error("no Rollout reported with a Machine of the old version")
	}

	// Reported while Cluster API does not run, too: the Machines as they
	// were last written.
	waiting := host.New(f.c, func(context.Context) error { return errors.New("not ready") })
	r = reconcile(t, waiting, p, 3)
	if r.MachineStatus == nil || r.MachineStatus.Ready != 2 || r.Machines != 7 {
		t.Errorf("while Cluster API does not run: Machines %d, MachineStatus %+v; want 7 Machines, 2 ready", r.Machines, r.MachineStatus)
	}

	u := f.get(t, machineGVK, cl.ns, "workers-leaving")
	u.SetFinalizers(nil)
	must(t, f.c.Update(ctx, u))
}

// machineVersionsBounded: the kubelet versions a pool's Machines report
// are node-reported, so the report keeps MaxVersions of them, each cut to
// MaxVersionLength bytes of the characters a version has, and counts the
// others.
func machineVersionsBounded(t *testing.T, f *fixture) {
	cl := f.cluster(t, "bounded", "dev")
	m := host.New(f.c, started)
	np := f.nodePool(t, cl, "workers", nil)
	reconcile(t, m, poolOf(cl, np, version.KubernetesVersion), 1)
	reported := []string{
		"v1.30.0", "v1.31.0", "v1.32.0", "v1.33.0", "v1.34.0", "v1.35.0",
		"v1.29.0\n" + strings.Repeat("x", 300), // sorts first
	}
	for i, v := range reported {
		name := fmt.Sprintf("workers-%d", i)
		f.setKubeletVersion(t, f.machine(t, cl, "workers", name, version.KubernetesVersion, "node-"+name, nil), v)
	}
	r := reconcile(t, m, poolOf(cl, np, version.KubernetesVersion), 1)
	st := r.MachineStatus
	if st == nil || len(st.Versions) != platform.MaxVersions || st.OtherVersions != len(reported)-platform.MaxVersions {
		t.Fatalf("MachineStatus %+v: want %d versions and %d others", st, platform.MaxVersions, len(reported)-platform.MaxVersions)
	}
	first := st.Versions[0]
	if len(first) > platform.MaxVersionLength || !strings.HasPrefix(first, "v1.29.0?xxx") || !strings.HasSuffix(first, "…") {
		t.Errorf("a version of 308 bytes with a newline reported as %q (%d bytes), want it cut to %d bytes, the newline a ?",
			first, len(first), platform.MaxVersionLength)
	}
	if want := []string{"v1.30.0", "v1.31.0", "v1.32.0", "v1.33.0"}; !slices.Equal(st.Versions[1:], want) {
		t.Errorf("Versions %q, want the cut one then %q", st.Versions, want)
	}
}

// deleteMachine deletes a Machine, as Cluster API does once its machine
// is gone.
func (f *fixture) deleteMachine(t *testing.T, cl *cluster, name string) {
	t.Helper()
	must(t, f.c.Delete(t.Context(), f.get(t, machineGVK, cl.ns, name)))
}

// gvkOf is the kind of a pool's object of that name.
func gvkOf(kind string) schema.GroupVersionKind {
	switch kind {
	case "JoinConfigTemplate", "HostMachineTemplate":
		return hypershiftv1alpha1.GroupVersion.WithKind(kind)
	default:
		return capiGVK(kind)
	}
}
