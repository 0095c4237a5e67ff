package install_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/clusterapi"
	"hypershift.dev/internal/datadir"
	"hypershift.dev/internal/install"
	"hypershift.dev/internal/scheme"
	"hypershift.dev/internal/testenv"
	"hypershift.dev/internal/version"
)

// builtClusterAPIDir is the Cluster API directory `make build` wrote beside
// the hypershift binary under test.
func builtClusterAPIDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(filepath.Dir(testenv.Binary(t)), clusterapi.DirName)
	if err := (clusterapi.Manager{Dir: dir}).Check(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// clusterAPIOf are the objects install makes for Cluster API: those of
// opts that an install without Cluster API's directory does not have.
func clusterAPIOf(t *testing.T, opts install.Options) []client.Object {
	t.Helper()
	all, err := install.ObjectsFor(opts)
	if err != nil {
		t.Fatal(err)
	}
	opts.ClusterAPIDir = filepath.Join(t.TempDir(), "missing")
	without, err := install.ObjectsFor(opts)
	if err != nil {
		t.Fatal(err)
	}
	others := map[string]bool{}
	for _, obj := range without {
		others[key(t, obj)] = true
	}
	var out []client.Object
	for _, obj := range all {
		if !others[key(t, obj)] {
			out = append(out, obj)
		}
	}
	return out
}

// key is "Kind namespace/name" of obj.
func key(t *testing.T, obj client.Object) string {
	t.Helper()
	gvk, err := apiutil.GVKForObject(obj, scheme.New())
	if err != nil {
		t.Fatal(err)
	}
	return gvk.Kind + " " + client.ObjectKeyFromObject(obj).String()
}

// TestInstallAndUninstallClusterAPI: install applies Cluster API's CRDs and
// its manager's objects; the manager's ClusterRole aggregates Cluster
// API's and hypershift's provider rules (the cluster-role aggregation
// controller fills it in); a second install changes none of them, the
// aggregated rules included; uninstall removes every one.
func TestInstallAndUninstallClusterAPI(t *testing.T) {
	dir := builtClusterAPIDir(t)
	env := testenv.Start(t)
	ctx := t.Context()
	objs, err := install.ObjectsFor(install.Options{ClusterAPIDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	ours := clusterAPIOf(t, install.Options{ClusterAPIDir: dir})
	// 6 CRDs, ServiceAccount, 3 ClusterRoles, ClusterRoleBinding, Role,
	// RoleBinding, Deployment.
	if len(ours) != 14 {
		var keys []string
		for _, obj := range ours {
			keys = append(keys, key(t, obj))
		}
		t.Fatalf("install's Cluster API objects: %v, want 14", keys)
	}
	apply := func() map[string]install.Result {
		results := map[string]install.Result{}
		if err := install.Apply(ctx, env.Client, objs, func(kind, key string, r install.Result) { results[kind+" "+key] = r }); err != nil {
			t.Fatal(err)
		}
		return results
	}
	apply()
	if err := install.WaitCRDs(ctx, env.Client, objs); err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{}
	testenv.Eventually(t, 30*time.Second, "the manager's ClusterRole aggregated", func() (bool, error) {
		if err := env.Client.Get(ctx, client.ObjectKey{Name: "hypershift-cluster-api-manager"}, role); err != nil {
			return false, err
		}
		return allows(role.Rules, "hypershift.dev", "hostmachines", "create") && allows(role.Rules, "cluster.x-k8s.io", "machines", "create"), nil
	})
	rules := len(role.Rules)

	for k, r := range apply() {
		if r != install.Unchanged {
			t.Errorf("second install: %s %s", k, r)
		}
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(role), role); err != nil {
		t.Fatal(err)
	}
	if len(role.Rules) != rules {
		t.Errorf("after a second install the manager's ClusterRole has %d rules, %d before", len(role.Rules), rules)
	}

	var removed []string
	if err := install.Uninstall(ctx, env.Client, true, time.Minute, func(kind, key string) { removed = append(removed, kind+" "+key) }); err != nil {
		t.Fatal(err)
	}
	for _, obj := range ours {
		k := key(t, obj)
		if !slices.Contains(removed, k) {
			t.Errorf("uninstall did not report removing %s (removed %v)", k, removed)
		}
		gvk, err := apiutil.GVKForObject(obj, scheme.New())
		if err != nil {
			t.Fatal(err)
		}
		cur := &unstructured.Unstructured{}
		cur.SetGroupVersionKind(gvk)
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), cur); client.IgnoreNotFound(err) != nil || err == nil {
			t.Errorf("%s after uninstall: %v, want not found", k, err)
		}
	}
}

// TestClusterAPIManagerWithInstalledRBAC runs the built Cluster API manager
// with its Deployment's arguments (but a loopback health address) as the
// ServiceAccount install makes, with exactly the RBAC install grants, on a
// pool of hypershift's kinds as the NodePool controller writes them: it
// takes its leader Lease in the install's namespace, owns the Cluster's
// HostedControlPlane and HostCluster, makes a Machine whose HostMachine and
// JoinConfig it clones from their templates, and deletes them when the
// MachineDeployment is scaled to 0; its log has no "forbidden". The API
// server authorizes with RBAC, so a missing rule fails this.
func TestClusterAPIManagerWithInstalledRBAC(t *testing.T) {
	dir := builtClusterAPIDir(t)
	env := testenv.Start(t)
	ctx := t.Context()
	c := env.Client
	objs, err := install.ObjectsFor(install.Options{ClusterAPIDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := install.Apply(ctx, c, objs, func(string, string, install.Result) {}); err != nil {
		t.Fatal(err)
	}
	if err := install.WaitCRDs(ctx, c, objs); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, "the manager's ClusterRole aggregated", func() (bool, error) {
		role := &rbacv1.ClusterRole{}
		if err := c.Get(ctx, client.ObjectKey{Name: "hypershift-cluster-api-manager"}, role); err != nil {
			return false, err
		}
		return allows(role.Rules, "hypershift.dev", "hostmachines", "create") && allows(role.Rules, "cluster.x-k8s.io", "machines", "create"), nil
	})

	var args []string
	for _, obj := range objs {
		if d, ok := obj.(*appsv1.Deployment); ok && d.Name == install.ClusterAPIName {
			for _, a := range d.Spec.Template.Spec.Containers[0].Args {
				if strings.HasPrefix(a, "--health-addr=") {
					a = fmt.Sprintf("--health-addr=127.0.0.1:%d", testenv.FreePort(t))
				}
				args = append(args, a)
			}
		}
	}
	log := runManagerAs(t, clusterapi.Manager{Dir: dir}, env, "system:serviceaccount:"+install.DefaultNamespace+":"+install.ClusterAPIName, args)

	testenv.Eventually(t, time.Minute, "the manager's leader Lease in "+install.DefaultNamespace, func() (bool, error) {
		lease := &coordinationv1.Lease{}
		err := c.Get(ctx, client.ObjectKey{Namespace: install.DefaultNamespace, Name: "hypershift-cluster-api-manager"}, lease)
		return err == nil && lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "", client.IgnoreNotFound(err)
	})

	const ns, name = "clusters-rbac", "rbac"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	hcp := hostedControlPlane(t, c, ns, name)
	hostCluster := &hypershiftv1alpha1.HostCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := c.Create(ctx, hostCluster); err != nil {
		t.Fatal(err)
	}
	hostCluster.Status.Initialization.Provisioned = ptr.To(true)
	if err := c.Status().Update(ctx, hostCluster); err != nil {
		t.Fatal(err)
	}
	for _, obj := range []client.Object{
		&hypershiftv1alpha1.HostMachineTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}},
		&hypershiftv1alpha1.JoinConfigTemplate{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: hypershiftv1alpha1.JoinConfigTemplateSpec{Template: hypershiftv1alpha1.JoinConfigTemplateResource{
				Spec: hypershiftv1alpha1.JoinConfigSpec{NodePool: name},
			}},
		},
		capiObject("Cluster", ns, name, map[string]any{
			"controlPlaneEndpoint": map[string]any{"host": "192.0.2.10", "port": int64(6443)},
			"controlPlaneRef":      map[string]any{"apiGroup": "hypershift.dev", "kind": "HostedControlPlane", "name": name},
			"infrastructureRef":    map[string]any{"apiGroup": "hypershift.dev", "kind": "HostCluster", "name": name},
		}),
		capiObject("MachineDeployment", ns, name, machineDeploymentSpec(name, 1)),
	} {
		if err := c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}

	testenv.Eventually(t, time.Minute, "the Cluster to own its HostedControlPlane and HostCluster, and a Machine with its HostMachine and JoinConfig", func() (bool, error) {
		for _, obj := range []client.Object{&hypershiftv1alpha1.HostedControlPlane{}, &hypershiftv1alpha1.HostCluster{}} {
			if err := c.Get(ctx, client.ObjectKeyFromObject(hcp), obj); err != nil {
				return false, err
			}
			if !ownedBy(obj, "Cluster", name) {
				return false, fmt.Errorf("%T owned by %v, want the Cluster", obj, obj.GetOwnerReferences())
			}
		}
		machines := capiList("Machine")
		if err := c.List(ctx, machines, client.InNamespace(ns)); err != nil || len(machines.Items) != 1 {
			return false, err
		}
		m := machines.Items[0].GetName()
		for _, list := range []client.ObjectList{&hypershiftv1alpha1.HostMachineList{}, &hypershiftv1alpha1.JoinConfigList{}} {
			if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
				return false, err
			}
			items, err := meta.ExtractList(list)
			if err != nil || len(items) != 1 {
				return false, err
			}
			if obj := items[0].(client.Object); metav1.GetControllerOf(obj) == nil || metav1.GetControllerOf(obj).Name != m {
				return false, fmt.Errorf("%T %s controlled by %v, want Machine %s", obj, obj.GetName(), metav1.GetControllerOf(obj), m)
			}
		}
		return true, nil
	})

	md := capiObject("MachineDeployment", ns, name, nil)
	if err := c.Patch(ctx, md, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":0}}`))); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, "the Machine, its HostMachine and JoinConfig deleted", func() (bool, error) {
		for _, list := range []client.ObjectList{capiList("Machine"), &hypershiftv1alpha1.HostMachineList{}, &hypershiftv1alpha1.JoinConfigList{}} {
			if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
				return false, err
			}
			if meta.LenList(list) != 0 {
				return false, nil
			}
		}
		return true, nil
	})
	var forbidden []string
	for _, line := range strings.Split(log.String(), "\n") {
		if strings.Contains(line, "forbidden") {
			forbidden = append(forbidden, line)
		}
	}
	if len(forbidden) > 0 {
		t.Errorf("the manager was refused with the installed RBAC:\n%s", strings.Join(forbidden, "\n"))
	}
}

// hostedControlPlane is a HostedControlPlane whose status says what the
// HostedControlPlane controller says of an Available control plane in
// Cluster API's contract (clusterAPIContract).
func hostedControlPlane(t *testing.T, c client.Client, ns, name string) *hypershiftv1alpha1.HostedControlPlane {
	t.Helper()
	hc := hypershiftv1alpha1.NewHostedCluster(ns, name, hypershiftv1alpha1.HostPlatform, version.KubernetesVersion)
	hcp := &hypershiftv1alpha1.HostedControlPlane{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: hypershiftv1alpha1.HostedControlPlaneSpec{
			KubernetesVersion: hc.Spec.KubernetesVersion, Networking: hc.Spec.Networking, Etcd: hc.Spec.Etcd, Platform: hc.Spec.Platform,
		},
	}
	if err := c.Create(t.Context(), hcp); err != nil {
		t.Fatal(err)
	}
	hcp.Status.Version = version.KubernetesVersion
	hcp.Status.ExternalManagedControlPlane = ptr.To(true)
	hcp.Status.Initialization.ControlPlaneInitialized = ptr.To(true)
	meta.SetStatusCondition(&hcp.Status.Conditions, metav1.Condition{
		Type: hypershiftv1alpha1.Available.String(), Status: metav1.ConditionTrue,
		Reason: hypershiftv1alpha1.AsExpectedReason.String(), Message: "The control plane serves",
	})
	if err := c.Status().Update(t.Context(), hcp); err != nil {
		t.Fatal(err)
	}
	return hcp
}

// machineDeploymentSpec is a MachineDeployment of the HostMachine and
// JoinConfig templates named pool, complete as the NodePool controller
// writes it (no webhook defaults it).
func machineDeploymentSpec(pool string, replicas int64) map[string]any {
	labels := map[string]any{"cluster.x-k8s.io/cluster-name": pool, "cluster.x-k8s.io/deployment-name": pool}
	return map[string]any{
		"clusterName": pool,
		"replicas":    replicas,
		"selector":    map[string]any{"matchLabels": labels},
		"rollout": map[string]any{"strategy": map[string]any{
			"type":          "RollingUpdate",
			"rollingUpdate": map[string]any{"maxSurge": int64(1), "maxUnavailable": int64(0)},
		}},
		"template": map[string]any{
			"metadata": map[string]any{"labels": labels},
			"spec": map[string]any{
				"clusterName":       pool,
				"version":           version.KubernetesVersion,
				"bootstrap":         map[string]any{"configRef": map[string]any{"apiGroup": "hypershift.dev", "kind": "JoinConfigTemplate", "name": pool}},
				"infrastructureRef": map[string]any{"apiGroup": "hypershift.dev", "kind": "HostMachineTemplate", "name": pool},
			},
		},
	}
}

func capiObject(kind, ns, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	if spec != nil {
		u.Object["spec"] = spec
	}
	u.SetAPIVersion("cluster.x-k8s.io/v1beta2")
	u.SetKind(kind)
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

func capiList(kind string) *unstructured.UnstructuredList {
	l := &unstructured.UnstructuredList{}
	l.SetAPIVersion("cluster.x-k8s.io/v1beta2")
	l.SetKind(kind + "List")
	return l
}

func ownedBy(obj client.Object, kind, name string) bool {
	for _, ref := range obj.GetOwnerReferences() {
		if ref.Kind == kind && ref.Name == name {
			return true
		}
	}
	return false
}

// runManagerAs runs m with args against env's API server as user (a
// ServiceAccount's name: it gets that account's groups too), until the
// test ends; the log it returns shows the manager's output so far, and is
// printed when the test fails.
func runManagerAs(t *testing.T, m clusterapi.Manager, env *testenv.Env, user string, args []string) *testenv.SyncBuffer {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(datadir.Layout{Root: env.DataDir}.ManagementKubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	ns := strings.Split(user, ":")[2]
	for _, auth := range cfg.AuthInfos {
		auth.Impersonate = user
		auth.ImpersonateGroups = []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}
	}
	kubeconfig := filepath.Join(t.TempDir(), "manager.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	cmd := m.Command(kubeconfig, "", args...)
	log := &testenv.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("cluster-api-manager's log:\n%s", log.String())
		}
	})
	return log
}
