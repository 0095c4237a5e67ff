package clusterapi_test

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/version"
)

// hostedControlPlaneContract: a HostedControlPlane is a control plane in
// Cluster API's v1beta2 contract. Its CRD carries the contract label and
// its status the fields Cluster API reads (the HostedControlPlane
// controller sets them: clusterAPIContract); the status is written here as
// that controller writes it, so what is checked is that Cluster API's own
// Cluster controller finds and reads them through our CRD's schema: it
// takes ownership of the HostedControlPlane, and reports the Cluster's
// control plane initialized and Available.
func hostedControlPlaneContract(t *testing.T, c client.Client, mgr *manager) {
	ctx := t.Context()
	const name = "hosted"
	hc := hypershiftv1alpha1.NewHostedCluster(namespace, name, hypershiftv1alpha1.NonePlatform, version.KubernetesVersion)
	hcp := &hypershiftv1alpha1.HostedControlPlane{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: hypershiftv1alpha1.HostedControlPlaneSpec{
			KubernetesVersion: hc.Spec.KubernetesVersion, Networking: hc.Spec.Networking, Etcd: hc.Spec.Etcd, Platform: hc.Spec.Platform,
		},
	}
	if err := c.Create(ctx, hcp); err != nil {
		t.Fatal(err)
	}
	hcp.Status.Version = version.KubernetesVersion
	hcp.Status.ExternalManagedControlPlane = ptr.To(true)
	hcp.Status.Initialization.ControlPlaneInitialized = ptr.To(true)
	meta.SetStatusCondition(&hcp.Status.Conditions, metav1.Condition{
		Type: hypershiftv1alpha1.Available.String(), Status: metav1.ConditionTrue,
		Reason: hypershiftv1alpha1.AsExpectedReason.String(), Message: "The control plane serves",
	})
	if err := c.Status().Update(ctx, hcp); err != nil {
		t.Fatal(err)
	}

	cluster := object(clusterGV, "Cluster", name, map[string]any{
		"spec": map[string]any{
			"clusterNetwork": map[string]any{
				"pods":     map[string]any{"cidrBlocks": []any{"10.244.0.0/16"}},
				"services": map[string]any{"cidrBlocks": []any{"10.96.0.0/12"}},
			},
			"controlPlaneEndpoint": map[string]any{"host": "127.0.0.1", "port": int64(6443)},
			"controlPlaneRef": map[string]any{
				"apiGroup": hypershiftv1alpha1.GroupVersion.Group, "kind": "HostedControlPlane", "name": name,
			},
		},
	})
	if err := c.Create(ctx, cluster); err != nil {
		t.Fatal(err)
	}

	mgr.eventually(t, 30*time.Second, "the Cluster to own its HostedControlPlane and report it initialized and Available", func() (bool, error) {
		got := &hypershiftv1alpha1.HostedControlPlane{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(hcp), got); err != nil {
			return false, err
		}
		owned := false
		for _, ref := range got.OwnerReferences {
			owned = owned || (ref.Kind == "Cluster" && ref.Name == name)
		}
		if !owned {
			return false, fmt.Errorf("HostedControlPlane owners %v, want the Cluster", got.OwnerReferences)
		}
		cl := named(clusterGV, "Cluster", name)
		if err := c.Get(ctx, client.ObjectKeyFromObject(cl), cl); err != nil {
			return false, err
		}
		if ok, _, _ := unstructured.NestedBool(cl.Object, "status", "initialization", "controlPlaneInitialized"); !ok {
			return false, fmt.Errorf("Cluster status %v: control plane not initialized", cl.Object["status"])
		}
		conds, _, _ := unstructured.NestedSlice(cl.Object, "status", "conditions")
		for _, raw := range conds {
			if cond, ok := raw.(map[string]any); ok && cond["type"] == "ControlPlaneAvailable" {
				if cond["status"] != "True" {
					return false, fmt.Errorf("ControlPlaneAvailable %v", cond)
				}
				return true, nil
			}
		}
		return false, fmt.Errorf("Cluster conditions %v: no ControlPlaneAvailable", conds)
	})
}

// joinConfigContract: a JoinConfig is a bootstrap config in Cluster API's
// v1beta2 contract. Its status is written here as the JoinConfig
// controller writes it (internal/controller/joinconfig, tested there with
// a real hosted cluster); Cluster API's own Machine controller takes
// ownership of it and copies status.dataSecretName into the Machine, once
// the Cluster's control plane (the HostedControlPlane of the subtest
// before) is initialized.
func joinConfigContract(t *testing.T, c client.Client, mgr *manager) {
	ctx := t.Context()
	const cluster, name = "hosted", "hosted-m1"
	jc := &hypershiftv1alpha1.JoinConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{clusterNameLabel: cluster}},
		Spec:       hypershiftv1alpha1.JoinConfigSpec{NodePool: "workers"},
	}
	if err := c.Create(ctx, jc); err != nil {
		t.Fatal(err)
	}
	jc.Status.DataSecretName = ptr.To(name)
	jc.Status.Initialization.DataSecretCreated = ptr.To(true)
	if err := c.Status().Update(ctx, jc); err != nil {
		t.Fatal(err)
	}
	for _, o := range []*unstructured.Unstructured{
		object(fixtureGV, "FixtureInfraMachine", name, map[string]any{"spec": map[string]any{"size": "small"}}),
		object(clusterGV, "Machine", name, map[string]any{
			"metadata": map[string]any{"labels": map[string]any{clusterNameLabel: cluster}},
			"spec": map[string]any{
				"clusterName": cluster,
				"bootstrap": map[string]any{"configRef": map[string]any{
					"apiGroup": hypershiftv1alpha1.GroupVersion.Group, "kind": "JoinConfig", "name": name,
				}},
				"infrastructureRef": map[string]any{"apiGroup": fixtureGroup, "kind": "FixtureInfraMachine", "name": name},
			},
		}),
	} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	mgr.eventually(t, 30*time.Second, "the Machine to own its JoinConfig and take its data Secret", func() (bool, error) {
		got := &hypershiftv1alpha1.JoinConfig{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(jc), got); err != nil {
			return false, err
		}
		if ref := metav1.GetControllerOf(got); ref == nil || ref.Kind != "Machine" || ref.Name != name {
			return false, fmt.Errorf("JoinConfig controlled by %+v, want the Machine", ref)
		}
		m := named(clusterGV, "Machine", name)
		if err := c.Get(ctx, client.ObjectKeyFromObject(m), m); err != nil {
			return false, err
		}
		if secret, _, _ := unstructured.NestedString(m.Object, "spec", "bootstrap", "dataSecretName"); secret != name {
			return false, fmt.Errorf("Machine spec.bootstrap %v", m.Object["spec"].(map[string]any)["bootstrap"])
		}
		return true, nil
	})
}
