package clusterapi

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/controller/nodepool/platform"
	"hypershift.dev/internal/hostedref"
)

// ensureCluster writes what the HostedCluster's pools share: the Cluster,
// its infrastructure cluster and the kubeconfig Secret Cluster API's
// ClusterCache reaches the hosted cluster with.
func (m *Platform) ensureCluster(ctx context.Context, p *platform.Pool, n names) error {
	hc := p.HostedCluster
	labels := map[string]string{ClusterNameLabel: n.cluster}
	if m.Infra.ClusterObjects != nil {
		objs, err := m.Infra.ClusterObjects(ctx, m.Client, p)
		if err != nil {
			return err
		}
		for _, o := range objs {
			if err := m.apply(ctx, o, n.hcUID); err != nil {
				return err
			}
		}
	}
	infraSpec := map[string]any{}
	if m.Infra.ClusterSpec != nil {
		infraSpec = m.Infra.ClusterSpec(p)
	}
	ep := hc.Status.ControlPlaneEndpoint
	if m.Infra.ExternallyManaged && ep.Host != "" {
		infraSpec["controlPlaneEndpoint"] = map[string]any{"host": ep.Host, "port": int64(ep.Port)}
	}
	infra := object(gvk(m.Infra.Group, m.Infra.Version, m.Infra.ClusterKind), n.namespace, n.cluster, labels, map[string]any{"spec": infraSpec})
	if m.Infra.ExternallyManaged {
		infra.SetAnnotations(map[string]string{ManagedByAnnotation: FieldManager})
	}
	if err := m.apply(ctx, infra, n.hcUID); err != nil {
		return err
	}
	if m.Infra.ExternallyManaged {
		if err := m.reportReady(ctx, infra); err != nil {
			return err
		}
	}
	admin, _, err := hostedref.AdminKubeconfig(ctx, m.Client, hc)
	if err != nil {
		return err
	}
	secret := object(corev1.SchemeGroupVersion.WithKind("Secret"), n.namespace, n.cluster+"-kubeconfig", map[string]string{ClusterNameLabel: n.cluster}, map[string]any{
		"type": SecretType,
		"data": map[string]any{"value": base64.StdEncoding.EncodeToString(admin)},
	})
	if err := m.apply(ctx, secret, n.hcUID); err != nil {
		return err
	}
	spec := map[string]any{
		"controlPlaneRef": map[string]any{
			"apiGroup": hypershiftv1alpha1.GroupVersion.Group, "kind": "HostedControlPlane", "name": hostedref.ControlPlaneKey(clientKey(hc)).Name,
		},
		"infrastructureRef": map[string]any{"apiGroup": m.Infra.Group, "kind": m.Infra.ClusterKind, "name": n.cluster},
	}
	if ep.Host != "" {
		spec["controlPlaneEndpoint"] = map[string]any{"host": ep.Host, "port": int64(ep.Port)}
	}
	return m.apply(ctx, object(clusterGVK, n.namespace, n.cluster, labels, map[string]any{"spec": spec}), n.hcUID)
}

// ensurePool writes the pool's templates, MachineDeployment and, with
// autoRepair, its MachineHealthCheck (removed without).
func (m *Platform) ensurePool(ctx context.Context, p *platform.Pool, n names, want int32, version string) error {
	np := p.NodePool
	labels := map[string]string{ClusterNameLabel: n.cluster, PoolLabel: n.pool}
	join := object(joinConfigTemplateGVK, n.namespace, n.pool, labels, map[string]any{
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"nodePool": np.Name}}},
	})
	if err := m.apply(ctx, join, n.npUID); err != nil {
		return err
	}
	machineSpec, template := map[string]any{}, n.pool
	if m.Infra.MachineSpec != nil {
		machineSpec = m.Infra.MachineSpec(p)
		template = TemplateName(n.pool, machineSpec)
	}
	tmpl := object(gvk(m.Infra.Group, m.Infra.Version, m.Infra.MachineTemplateKind), n.namespace, template, labels, map[string]any{
		"spec": map[string]any{"template": map[string]any{"spec": machineSpec}},
	})
	if err := m.apply(ctx, tmpl, n.npUID); err != nil {
		return err
	}
	previous, err := m.deploymentTemplate(ctx, n)
	if err != nil {
		return err
	}
	if err := m.apply(ctx, m.machineDeployment(p, n, labels, want, version, template), n.npUID); err != nil {
		return err
	}
	if m.Infra.MachineSpec != nil {
		if err := m.removeOldTemplates(ctx, n, template, previous); err != nil {
			return err
		}
	}
	if !np.Spec.Management.AutoRepair {
		return m.remove(ctx, machineHealthCheckGVK, n.namespace, n.pool, n.npUID)
	}
	timeout, err := UnhealthyTimeoutOf(np)
	if err != nil {
		return err
	}
	return m.apply(ctx, machineHealthCheck(n, labels, timeout), n.npUID)
}

// machineDeployment is the pool's MachineDeployment, complete: what
// Cluster API's defaulting webhook would add is written here.
func (m *Platform) machineDeployment(p *platform.Pool, n names, labels map[string]string, want int32, version, template string) *unstructured.Unstructured {
	np := p.NodePool
	selector := map[string]any{ClusterNameLabel: n.cluster, DeploymentNameLabel: n.pool}
	templateLabels := map[string]any{ClusterNameLabel: n.cluster, DeploymentNameLabel: n.pool, PoolLabel: n.pool}
	surge, unavailable := rollingUpdate(np)
	spec := map[string]any{
		"clusterName": n.cluster,
		"replicas":    int64(want),
		"selector":    map[string]any{"matchLabels": selector},
		"rollout": map[string]any{"strategy": map[string]any{
			"type":          "RollingUpdate",
			"rollingUpdate": map[string]any{"maxSurge": surge, "maxUnavailable": unavailable},
		}},
		"template": map[string]any{
			"metadata": map[string]any{"labels": templateLabels},
			"spec": map[string]any{
				"clusterName": n.cluster,
				"version":     version,
				"bootstrap": map[string]any{"configRef": map[string]any{
					"apiGroup": hypershiftv1alpha1.GroupVersion.Group, "kind": "JoinConfigTemplate", "name": n.pool,
				}},
				"infrastructureRef": map[string]any{
					"apiGroup": m.Infra.Group, "kind": m.Infra.MachineTemplateKind, "name": template,
				},
			},
		},
	}
	if d := np.Spec.NodeDrainTimeout; d != nil && d.Duration >= time.Second {
		machine := spec["template"].(map[string]any)["spec"].(map[string]any)
		machine["deletion"] = map[string]any{"nodeDrainTimeoutSeconds": int64(d.Duration / time.Second)}
	}
	u := object(machineDeploymentGVK, n.namespace, n.pool, labels, map[string]any{"spec": spec})
	if a := np.Spec.AutoScaling; a != nil {
		u.SetAnnotations(map[string]string{
			AutoscalerMinAnnotation: fmt.Sprint(a.Min),
			AutoscalerMaxAnnotation: fmt.Sprint(a.Max),
		})
	}
	return u
}

// machineHealthCheck replaces a machine whose Node is NotReady or unknown
// for timeout, or has not registered within NodeStartupTimeout.
func machineHealthCheck(n names, labels map[string]string, timeout time.Duration) *unstructured.Unstructured {
	seconds := int64(timeout / time.Second)
	return object(machineHealthCheckGVK, n.namespace, n.pool, labels, map[string]any{"spec": map[string]any{
		"clusterName": n.cluster,
		"selector":    map[string]any{"matchLabels": map[string]any{ClusterNameLabel: n.cluster, DeploymentNameLabel: n.pool}},
		"checks": map[string]any{
			"nodeStartupTimeoutSeconds": int64(NodeStartupTimeout / time.Second),
			"unhealthyNodeConditions": []any{
				map[string]any{"type": string(corev1.NodeReady), "status": string(corev1.ConditionFalse), "timeoutSeconds": seconds},
				map[string]any{"type": string(corev1.NodeReady), "status": string(corev1.ConditionUnknown), "timeoutSeconds": seconds},
			},
		},
	}})
}

// UnhealthyTimeoutOf is the pool's MachineHealthCheckTimeoutAnnotation,
// UnhealthyTimeout without it; an error names a value out of bounds.
func UnhealthyTimeoutOf(np *hypershiftv1alpha1.NodePool) (time.Duration, error) {
	v, ok := np.Annotations[MachineHealthCheckTimeoutAnnotation]
	if !ok {
		return UnhealthyTimeout, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 30*time.Second || d > 24*time.Hour {
		return 0, fmt.Errorf("annotation %s: %q is not a duration from 30s to 24h", MachineHealthCheckTimeoutAnnotation, v)
	}
	return d, nil
}

// rollingUpdate is the pool's replace.rollingUpdate, with the defaults
// the NodePool API documents (maxSurge 1, maxUnavailable 0).
func rollingUpdate(np *hypershiftv1alpha1.NodePool) (surge, unavailable any) {
	surge, unavailable = int64(1), int64(0)
	r := np.Spec.Management.Replace
	if r == nil || r.RollingUpdate == nil {
		return surge, unavailable
	}
	if v := r.RollingUpdate.MaxSurge; v != nil {
		surge = intOrString(*v)
	}
	if v := r.RollingUpdate.MaxUnavailable; v != nil {
		unavailable = intOrString(*v)
	}
	return surge, unavailable
}

func intOrString(v intstr.IntOrString) any {
	if v.Type == intstr.String {
		return v.StrVal
	}
	return int64(v.IntVal)
}

func clientKey(o metav1.Object) types.NamespacedName {
	return types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}
}

// TemplateName is the name of a pool's machine template of that spec:
// the pool's name and 8 hex digits of the spec's SHA-256.
func TemplateName(pool string, spec map[string]any) string {
	data, _ := json.Marshal(spec) // maps of JSON values: cannot fail
	sum := sha256.Sum256(data)
	return pool + "-" + hex.EncodeToString(sum[:4])
}

// deploymentTemplate is the machine template the pool's MachineDeployment
// names now; "" when there is none yet.
func (m *Platform) deploymentTemplate(ctx context.Context, n names) (string, error) {
	md := &unstructured.Unstructured{}
	md.SetGroupVersionKind(machineDeploymentGVK)
	if err := m.Client.Get(ctx, client.ObjectKey{Namespace: n.namespace, Name: n.pool}, md); err != nil {
		return "", client.IgnoreNotFound(err)
	}
	name, _, _ := unstructured.NestedString(md.Object, "spec", "template", "spec", "infrastructureRef", "name")
	return name, nil
}

// removeOldTemplates deletes the pool's machine templates other than
// current and previous (the one the MachineDeployment named until now,
// whose MachineSet Cluster API may not have made yet) that no MachineSet
// of the pool names any more (Cluster API keeps a MachineSet of each
// revision, and makes machines only from the newest).
func (m *Platform) removeOldTemplates(ctx context.Context, n names, current, previous string) error {
	templates, err := m.poolTemplates(ctx, n)
	if err != nil || len(templates) < 2 {
		return err
	}
	sets := &unstructured.UnstructuredList{}
	sets.SetGroupVersionKind(gvk(Group, Version, "MachineSetList"))
	if err := m.Client.List(ctx, sets, client.InNamespace(n.namespace), client.MatchingLabels{ClusterNameLabel: n.cluster, DeploymentNameLabel: n.pool}); err != nil && !isMissingKind(err) {
		return err
	}
	inUse := map[string]bool{current: true, previous: true}
	for _, ms := range sets.Items {
		name, _, _ := unstructured.NestedString(ms.Object, "spec", "template", "spec", "infrastructureRef", "name")
		inUse[name] = true
	}
	for _, t := range templates {
		if !inUse[t.GetName()] {
			if err := m.remove(ctx, t.GroupVersionKind(), n.namespace, t.GetName(), n.npUID); err != nil {
				return err
			}
		}
	}
	return nil
}

// poolTemplates lists the pool's machine templates.
func (m *Platform) poolTemplates(ctx context.Context, n names) ([]unstructured.Unstructured, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk(m.Infra.Group, m.Infra.Version, m.Infra.MachineTemplateKind+"List"))
	err := m.Client.List(ctx, list, client.InNamespace(n.namespace),
		client.MatchingLabels{ClusterNameLabel: n.cluster, PoolLabel: n.pool, OwnerLabel: string(n.npUID)})
	if isMissingKind(err) {
		return nil, nil
	}
	return list.Items, err
}

// reportReady marks an externally managed infrastructure cluster ready
// (status.ready of Cluster API's v1beta1 infrastructure contract, and
// status.initialization.provisioned of its v1beta2 one), once.
func (m *Platform) reportReady(ctx context.Context, infra *unstructured.Unstructured) error {
	cur := &unstructured.Unstructured{}
	cur.SetGroupVersionKind(infra.GroupVersionKind())
	if err := m.Client.Get(ctx, client.ObjectKeyFromObject(infra), cur); err != nil {
		return err
	}
	if ready, _, _ := unstructured.NestedBool(cur.Object, "status", "ready"); ready {
		return nil
	}
	// Both contracts' fields: a provider of Cluster API's v1beta2 contract
	// reads initialization.provisioned (a schema without it prunes it).
	patch := client.RawPatch(types.MergePatchType, []byte(`{"status":{"ready":true,"initialization":{"provisioned":true}}}`))
	if err := m.Client.Status().Patch(ctx, cur, patch, client.FieldOwner(FieldManager)); err != nil {
		return fmt.Errorf("report %s %s/%s ready: %w", cur.GetKind(), cur.GetNamespace(), cur.GetName(), err)
	}
	return nil
}
