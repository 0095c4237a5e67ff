package install_test

import (
	"context"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	apimachineryruntime "k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/install"
	"hypershift.dev/internal/testenv"
	"hypershift.dev/internal/version"
)

// hostedCluster is a HostedCluster as unstructured data, so that tests can
// set fields the Go types do not have yet.
func hostedCluster(t *testing.T, name string, publish hypershiftv1alpha1.PublishingStrategyType) *unstructured.Unstructured {
	t.Helper()
	hc := hypershiftv1alpha1.NewHostedCluster("default", name, hypershiftv1alpha1.NonePlatform, version.KubernetesVersion)
	hc.Spec.Services = nil
	m, err := apimachineryruntime.DefaultUnstructuredConverter.ToUnstructured(hc)
	if err != nil {
		t.Fatal(err)
	}
	// Each type with the settings the CRD asks of it.
	strategy := map[string]any{"type": string(publish)}
	switch publish {
	case "NodePort":
		strategy["nodePort"] = map[string]any{"address": "192.0.2.10"}
	case "LoadBalancer":
		strategy["loadBalancer"] = map[string]any{"hostname": "api.example.com"}
	}
	services := []any{map[string]any{"service": "APIServer", "servicePublishingStrategy": strategy}}
	if err := unstructured.SetNestedSlice(m, services, "spec", "services"); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

// relaxCRD lets the HostedCluster CRD admit every publishing strategy type
// (its own rule on the type refuses Route, and before the kube runtime
// refused all but HostPort) and spec.etcd.managed.storage (where the CRD
// does not declare it yet). The policies must refuse what their runtime
// cannot run themselves, whatever the CRD says.
func relaxCRD(t *testing.T, c client.Client) {
	t.Helper()
	ctx := t.Context()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(ctx, client.ObjectKey{Name: "hostedclusters.hypershift.dev"}, crd); err != nil {
		t.Fatal(err)
	}
	preserve := true
	open := apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &preserve}
	for i := range crd.Spec.Versions {
		spec := crd.Spec.Versions[i].Schema.OpenAPIV3Schema.Properties["spec"]
		services := spec.Properties["services"]
		strategy := services.Items.Schema.Properties["servicePublishingStrategy"]
		typ := strategy.Properties["type"]
		typ.XValidations = nil
		strategy.Properties["type"] = typ
		services.Items.Schema.Properties["servicePublishingStrategy"] = strategy
		spec.Properties["services"] = services
		etcd := spec.Properties["etcd"]
		managed, ok := etcd.Properties["managed"]
		if !ok {
			managed = apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{}}
		}
		if _, ok := managed.Properties["storage"]; !ok {
			managed.Properties["storage"] = open
		}
		etcd.Properties["managed"] = managed
		spec.Properties["etcd"] = etcd
		crd.Spec.Versions[i].Schema.OpenAPIV3Schema.Properties["spec"] = spec
	}
	if err := c.Update(ctx, crd); err != nil {
		t.Fatalf("relax the HostedCluster CRD: %v", err)
	}
}

// applyRuntimePolicy installs the policy of runtime, replacing the other.
func applyRuntimePolicy(t *testing.T, c client.Client, runtime string) {
	t.Helper()
	objs, err := install.ObjectsFor(install.Options{Runtime: runtime})
	if err != nil {
		t.Fatal(err)
	}
	var policy []client.Object
	for _, obj := range objs {
		if obj.GetName() == install.RuntimePolicyName || obj.GetName() == install.NodeReleasePolicyName {
			policy = append(policy, obj)
		}
	}
	if len(policy) != 4 {
		t.Fatalf("%d objects named %s or %s, want each policy and its binding", len(policy), install.RuntimePolicyName, install.NodeReleasePolicyName)
	}
	if err := install.Apply(t.Context(), c, policy, func(string, string, install.Result) {}); err != nil {
		t.Fatal(err)
	}
}

// refusedWith creates obj until the API server refuses it with want (a
// new policy takes a moment to be enforced), then checks nothing was made.
func refusedWith(t *testing.T, c client.Client, obj *unstructured.Unstructured, want string) {
	t.Helper()
	testenv.Eventually(t, 30*time.Second, obj.GetName()+" refused with "+want, func() (bool, error) {
		err := c.Create(context.Background(), obj.DeepCopy())
		if err == nil {
			// Admitted before the policy was enforced: remove and retry.
			_ = c.Delete(context.Background(), obj.DeepCopy())
			return false, nil
		}
		return strings.Contains(err.Error(), want), err
	})
}

func admitted(t *testing.T, c client.Client, obj *unstructured.Unstructured) {
	t.Helper()
	if err := c.Create(t.Context(), obj.DeepCopy()); err != nil {
		t.Fatalf("create %s: %v, want it admitted", obj.GetName(), err)
	}
}

// TestRuntimePolicies: each runtime's policy refuses, naming the field and
// the fix, what that runtime cannot run, and admits what it can; a
// cluster made under one runtime can still be updated (its finalizers
// removed) under the other's policy as long as its spec stays.
func TestRuntimePolicies(t *testing.T) {
	env := testenv.Start(t)
	c := env.Client
	relaxCRD(t, c)

	// testenv installs what `hypershift up` does: the process policy.
	refusedWith(t, c, hostedCluster(t, "nodeport", "NodePort"),
		"spec.services[].servicePublishingStrategy.type: APIServer=NodePort is not supported: the process runtime publishes the API server on a port of the management host: use HostPort")
	refusedWith(t, c, hostedCluster(t, "lb", "LoadBalancer"), "APIServer=LoadBalancer is not supported")
	storage := hostedCluster(t, "storage", "HostPort")
	if err := unstructured.SetNestedField(storage.Object, map[string]any{"type": "PersistentVolume"}, "spec", "etcd", "managed", "storage"); err != nil {
		t.Fatal(err)
	}
	refusedWith(t, c, storage, "spec.etcd.managed.storage is not supported: the process runtime keeps etcd's data in the operator's data dir; remove spec.etcd.managed.storage")
	volumes := hostedCluster(t, "volumes", "HostPort")
	if err := unstructured.SetNestedField(volumes.Object, hostStorage(), "spec", "platform"); err != nil {
		t.Fatal(err)
	}
	refusedWith(t, c, volumes, "spec.platform.host.storageDriver type Manual is not supported: the process runtime's machines are not pods of a management cluster")
	old := hostedCluster(t, "made-under-process", "HostPort")
	admitted(t, c, old)
	// Real nodes get their kubelet from the installation's releases.
	refusedWith(t, c, nonePool("real-old", "v1.34.0"),
		"spec.kubernetesVersion: v1.34.0 of platform None NodePool real-old is not available for real nodes: this installation has no release of it to hand its nodes; use "+version.KubernetesVersion)
	admitted(t, c, nonePool("real", version.KubernetesVersion))
	admitted(t, c, nodePool("default", "simulated-old", "nobody", "v1.34.0"))

	applyRuntimePolicy(t, c, install.RuntimeKube)
	refusedWith(t, c, hostedCluster(t, "hostport", "HostPort"),
		"spec.services[].servicePublishingStrategy.type: APIServer=HostPort is not supported: the kube runtime publishes through Services: use NodePort or LoadBalancer")
	refusedWith(t, c, hostedCluster(t, "route", "Route"), "APIServer=Route is not supported")
	admitted(t, c, hostedCluster(t, "nodeport", "NodePort"))
	admitted(t, c, hostedCluster(t, "lb", "LoadBalancer"))
	storageKube := hostedCluster(t, "storage-kube", "NodePort")
	if err := unstructured.SetNestedField(storageKube.Object, map[string]any{"type": "PersistentVolume"}, "spec", "etcd", "managed", "storage"); err != nil {
		t.Fatal(err)
	}
	admitted(t, c, storageKube)
	volumesKube := hostedCluster(t, "volumes-kube", "NodePort")
	if err := unstructured.SetNestedField(volumesKube.Object, hostStorage(), "spec", "platform"); err != nil {
		t.Fatal(err)
	}
	admitted(t, c, volumesKube)
	idle := hostedCluster(t, "idle", "NodePort")
	if err := unstructured.SetNestedField(idle.Object, "30m", "spec", "hibernation", "idleAfter"); err != nil {
		t.Fatal(err)
	}
	refusedWith(t, c, idle, "spec.hibernation.idleAfter is not supported: the kube runtime cannot hold a request while the control plane sleeps")
	asleep := hostedCluster(t, "asleep", "NodePort")
	if err := unstructured.SetNestedField(asleep.Object, true, "spec", "hibernation", "enabled"); err != nil {
		t.Fatal(err)
	}
	admitted(t, c, asleep)
	// No release server on the kube runtime: real nodes run hypershift's
	// own kubelet.
	refusedWith(t, c, nonePool("real-kube", "v1.36.3"),
		"spec.kubernetesVersion: v1.36.3 of platform None NodePool real-kube is not available for real nodes: on the kube runtime real nodes run the kubelet compiled into hypershift")
	admitted(t, c, nonePool("real-kube", version.KubernetesVersion))
	fileRestore := hostedCluster(t, "file-restore", "NodePort")
	fileRestore.SetAnnotations(map[string]string{"hypershift.dev/restore-from": `{"url":"file:///var/backups/a.bak","secret":"a-restore"}`})
	refusedWith(t, c, fileRestore, "metadata.annotations[hypershift.dev/restore-from]: a file:// archive is not supported on the kube runtime")
	s3Restore := hostedCluster(t, "s3-restore", "NodePort")
	s3Restore.SetAnnotations(map[string]string{"hypershift.dev/restore-from": `{"url":"s3://backups/a.bak?region=x","secret":"a-restore"}`})
	admitted(t, c, s3Restore)
	noServices := hostedCluster(t, "no-services", "NodePort")
	unstructured.RemoveNestedField(noServices.Object, "spec", "services")
	refusedWith(t, c, noServices, "spec.services needs an APIServer entry of type NodePort or LoadBalancer")

	// The HostPort cluster made before: a metadata change passes, a spec
	// change is judged.
	cur := &unstructured.Unstructured{}
	cur.SetGroupVersionKind(old.GroupVersionKind())
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(old), cur); err != nil {
		t.Fatal(err)
	}
	cur.SetFinalizers([]string{"example.com/test"})
	if err := c.Update(t.Context(), cur); err != nil {
		t.Fatalf("metadata update of a cluster made under the process runtime: %v, want it admitted", err)
	}
	if err := unstructured.SetNestedField(cur.Object, "2099-01-01T00:00:00Z", "spec", "pausedUntil"); err != nil {
		t.Fatal(err)
	}
	if err := c.Update(t.Context(), cur); err == nil || !strings.Contains(err.Error(), "APIServer=HostPort is not supported") {
		t.Fatalf("spec update keeping HostPort under the kube policy: %v, want it refused", err)
	}
	cur.SetFinalizers(nil)
	unstructured.RemoveNestedField(cur.Object, "spec", "pausedUntil")
	if err := c.Update(t.Context(), cur); err != nil {
		t.Fatalf("remove the finalizer: %v", err)
	}
}

// nonePool is a platform None NodePool of a cluster that does not exist (so
// only the release policy judges its version).
func nonePool(name, version string) *unstructured.Unstructured {
	u := nodePool("default", name, "nobody", version)
	if err := unstructured.SetNestedField(u.Object, "None", "spec", "platform", "type"); err != nil {
		panic(err)
	}
	return u
}

// hostStorage is platform Host with a guest class mapped to the management
// cluster's, as unstructured data.
func hostStorage() map[string]any {
	return map[string]any{"type": "Host", "host": map[string]any{"storageDriver": map[string]any{
		"type": "Manual", "manual": map[string]any{"storageClassMapping": []any{
			map[string]any{"infraStorageClassName": "fast", "guestStorageClassName": "standard"},
		}},
	}}}
}
