package clusterapi

import (
	"context"
	"fmt"
	"maps"
	"math"
	goruntime "runtime"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/controller/nodepool/platform"
	"hypershift.dev/internal/nodes/bootstrap"
)

// requeue is how soon a pool whose machines change is looked at again.
const requeue = 5 * time.Second

// listTimeout bounds a read of the pool's machines made outside a reconcile.
const listTimeout = 30 * time.Second

var _ platform.Platform = (*Platform)(nil)

// Validate refuses a pool this operator cannot make machines for.
func (p *Platform) Validate(pool *platform.Pool) error {
	if p.Start == nil {
		return fmt.Errorf("this operator does not run Cluster API, which makes the machines of platform %s pools", p.Type)
	}
	if pool.HostedCluster != nil && pool.HostedCluster.Spec.Platform.Type != p.Type {
		return fmt.Errorf("a %s pool cannot join HostedCluster %s of platform %s", p.Type, pool.HostedCluster.Name, pool.HostedCluster.Spec.Platform.Type)
	}
	if _, err := UnhealthyTimeoutOf(pool.NodePool); err != nil {
		return err
	}
	if p.Infra.Validate != nil {
		return p.Infra.Validate(pool)
	}
	return nil
}

// NeedsToken is false: each machine's JoinConfig issues its own
// single-use token.
func (*Platform) NeedsToken() bool { return false }

// NamesMachines is true: only the machines' names may join the pool.
func (*Platform) NamesMachines() bool { return true }

// SupportsAutoscaling is true: the MachineDeployment is sized.
func (*Platform) SupportsAutoscaling() bool { return true }

// SupportsAutorepair is true: a MachineHealthCheck replaces machines.
func (*Platform) SupportsAutorepair() bool { return true }

// UpgradesNodes is true: the MachineDeployment rolls new machines out
// (Replace; InPlace pools are refused at admission).
func (*Platform) UpgradesNodes(*hypershiftv1alpha1.NodePool) bool { return true }

// UnsetReplicas is zero.
func (*Platform) UnsetReplicas(*platform.Pool) int32 { return 0 }

// NodeTemplate is what a new node of the pool looks like: the pool's
// labels and taints, and the capacity of the provider's machines.
func (p *Platform) NodeTemplate(np *hypershiftv1alpha1.NodePool) platform.NodeTemplate {
	labels := map[string]string{
		hypershiftv1alpha1.NodePoolLabel: np.Name,
		bootstrap.BindingLabel:           np.Name,
		corev1.LabelOSStable:             "linux",
		corev1.LabelArchStable:           goruntime.GOARCH,
	}
	maps.Copy(labels, np.Spec.NodeLabels)
	t := platform.NodeTemplate{Labels: labels, Taints: platform.Taints(np.Spec.Taints)}
	if p.Infra.Capacity != nil {
		t.Capacity = p.Infra.Capacity(np)
	}
	return t
}

// Machines names the Nodes of the pool's machines: those its provider's
// machines were given (their provider IDs).
func (p *Platform) Machines(pool *platform.Pool) ([]string, error) {
	// Asked while a node's certificate request waits: bounded.
	ctx, cancel := context.WithTimeout(context.Background(), listTimeout)
	defer cancel()
	infra, err := p.infraMachines(ctx, namesOf(pool))
	if err != nil {
		return nil, err
	}
	var out []string
	for i := range infra {
		if name := p.Infra.NodeName(&infra[i]); name != "" {
			out = append(out, name)
		}
	}
	return out, nil
}

// Reconcile starts Cluster API when it does not run yet, writes the pool's
// objects with want replicas and reports its Machines (as they were
// last written, while Cluster API does not run).
func (p *Platform) Reconcile(ctx context.Context, pool *platform.Pool, want int32) (platform.Report, error) {
	n := namesOf(pool)
	machines, err := p.machines(ctx, n)
	if err != nil {
		return platform.Report{}, err
	}
	status := machineStatus(pool, machines)
	if err := p.Start(ctx); err != nil {
		pool.Requeue(requeue)
		return platform.Report{
			Machines: count(machines), Busy: true, MachineStatus: status,
			Problem: fmt.Sprintf("Waiting for Cluster API: %v", err),
		}, nil
	}
	if err := p.ensureCluster(ctx, pool, n); err != nil {
		if isProblem(err) {
			return platform.Report{Machines: count(machines), Problem: err.Error(), MachineStatus: status}, nil
		}
		return platform.Report{}, err
	}
	version, err := p.version(ctx, pool, n)
	if err != nil {
		return platform.Report{}, err
	}
	if err := p.ensurePool(ctx, pool, n, want, version); err != nil {
		if isProblem(err) {
			return platform.Report{Machines: count(machines), Problem: err.Error(), MachineStatus: status}, nil
		}
		return platform.Report{}, err
	}
	r := p.report(ctx, n, machines, want, version)
	r.MachineStatus = status
	if r.Busy {
		pool.Requeue(requeue)
	}
	return r, nil
}

// version is the machines' Kubernetes version: the pool's, unless that
// cannot be rolled out or is not known in this reconcile (a pool being
// deleted): then the MachineDeployment keeps the one it has.
func (p *Platform) version(ctx context.Context, pool *platform.Pool, n names) (string, error) {
	if !pool.VersionHeld && pool.Version != "" {
		return pool.Version, nil
	}
	md := &unstructured.Unstructured{}
	md.SetGroupVersionKind(machineDeploymentGVK)
	err := p.Client.Get(ctx, client.ObjectKey{Namespace: n.namespace, Name: n.pool}, md)
	if client.IgnoreNotFound(err) != nil {
		return "", err
	}
	if v, _, _ := unstructured.NestedString(md.Object, "spec", "template", "spec", "version"); err == nil && v != "" {
		return v, nil
	}
	switch {
	case pool.Version != "":
		return pool.Version, nil
	case pool.NodePool.Spec.KubernetesVersion != "":
		return pool.NodePool.Spec.KubernetesVersion, nil
	default:
		return platform.ControlPlaneVersion(pool.HostedCluster), nil
	}
}

// report accounts for the pool's Machines.
func (p *Platform) report(ctx context.Context, n names, machines []unstructured.Unstructured, want int32, version string) platform.Report {
	r := platform.Report{Machines: count(machines)}
	old := 0
	var problems []string
	for i := range machines {
		m := &machines[i]
		node, _, _ := unstructured.NestedString(m.Object, "status", "nodeRef", "name")
		if !m.GetDeletionTimestamp().IsZero() {
			r.Busy = true
			if node != "" {
				r.Draining = append(r.Draining, node)
			}
			continue
		}
		if node == "" {
			r.Busy = true
			r.Unregistered = append(r.Unregistered, m.GetName())
		}
		if v, _, _ := unstructured.NestedString(m.Object, "spec", "version"); v != version {
			old++
		}
		if msg := failing(m, "InfrastructureReady", "BootstrapConfigReady"); msg != "" {
			problems = append(problems, fmt.Sprintf("Machine %s: %s", m.GetName(), msg))
		} else if msg := failure(m); msg != "" {
			problems = append(problems, fmt.Sprintf("Machine %s: %s", m.GetName(), msg))
		}
	}
	if int(want) != len(machines) {
		r.Busy = true
	}
	if old > 0 {
		r.Busy = true
		r.Rollout = fmt.Sprintf("Replacing %d of %d machines with machines of %s", old, len(machines), version)
	}
	if msg := p.infraClusterProblem(ctx, n); msg != "" {
		problems = append([]string{msg}, problems...)
	}
	slices.Sort(r.Unregistered)
	if len(problems) > 0 {
		r.Problem = strings.Join(problems[:min(len(problems), 3)], "; ")
	}
	return r
}

// failing is the message of the first of the Machine's conditions that
// is False for a reason other than waiting; "" when none is.
func failing(m *unstructured.Unstructured, types ...string) string {
	conds, _, _ := unstructured.NestedSlice(m.Object, "status", "conditions")
	for _, t := range types {
		for _, c := range conds {
			cm, ok := c.(map[string]any)
			if !ok || cm["type"] != t || cm["status"] != "False" {
				continue
			}
			reason, _ := cm["reason"].(string)
			if strings.HasPrefix(reason, "WaitingFor") || reason == "NotProvisioned" || reason == "DataSecretNotAvailable" {
				continue
			}
			msg, _ := cm["message"].(string)
			return fmt.Sprintf("%s %s: %s", t, reason, truncate(msg, 512))
		}
	}
	return ""
}

// failure is the terminal failure a provider of Cluster API's v1beta1
// contract reported (its machine's status.failureReason and
// failureMessage, which Cluster API keeps in the Machine's
// status.deprecated.v1beta1); "" when there is none.
func failure(m *unstructured.Unstructured) string {
	reason, _, _ := unstructured.NestedString(m.Object, "status", "deprecated", "v1beta1", "failureReason")
	msg, _, _ := unstructured.NestedString(m.Object, "status", "deprecated", "v1beta1", "failureMessage")
	if reason == "" && msg == "" {
		return ""
	}
	return fmt.Sprintf("failed: %s: %s", truncate(reason, 128), truncate(msg, 512))
}

// infraClusterProblem is why the infrastructure cluster is not Ready
// (no machine network); "" when it is, or does not say yet.
func (p *Platform) infraClusterProblem(ctx context.Context, n names) string {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk(p.Infra.Group, p.Infra.Version, p.Infra.ClusterKind))
	if err := p.Client.Get(ctx, client.ObjectKey{Namespace: n.namespace, Name: n.cluster}, u); err != nil {
		return ""
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		cm, ok := c.(map[string]any)
		if ok && cm["type"] == "Ready" && cm["status"] == "False" {
			msg, _ := cm["message"].(string)
			return fmt.Sprintf("%s %s: %s", p.Infra.ClusterKind, n.cluster, truncate(msg, 512))
		}
	}
	return ""
}

// count is how many machines there are, as a pool counts them.
func count(machines []unstructured.Unstructured) int32 {
	return int32(min(len(machines), math.MaxInt32))
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// machines lists the pool's Cluster API Machines; none while Cluster
// API's CRDs are not installed.
func (p *Platform) machines(ctx context.Context, n names) ([]unstructured.Unstructured, error) {
	return p.list(ctx, machineGVK, n)
}

// infraMachines lists the provider's machines of the pool (Cluster API
// copies the Machine's labels to them).
func (p *Platform) infraMachines(ctx context.Context, n names) ([]unstructured.Unstructured, error) {
	return p.list(ctx, gvk(p.Infra.Group, p.Infra.Version, p.Infra.MachineKind), n)
}

func (p *Platform) list(ctx context.Context, k schema.GroupVersionKind, n names) ([]unstructured.Unstructured, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(k.GroupVersion().WithKind(k.Kind + "List"))
	err := p.Client.List(ctx, list, client.InNamespace(n.namespace),
		client.MatchingLabels{ClusterNameLabel: n.cluster, DeploymentNameLabel: n.pool})
	if err != nil {
		if isMissingKind(err) {
			return nil, nil
		}
		return nil, err
	}
	return list.Items, nil
}

// Cleanup removes the pool's objects once it has no machines left.
func (p *Platform) Cleanup(ctx context.Context, pool *platform.Pool) error {
	_, err := p.removePool(ctx, namesOf(pool))
	return err
}

// Delete removes the pool's objects; Cluster API removes the
// MachineDeployment's machines. It returns an error, to be called again,
// until no Machine of the pool is left.
func (p *Platform) Delete(ctx context.Context, pool *platform.Pool) error {
	if pool.HostedCluster == nil {
		return nil
	}
	// Cluster API removes the machines: it must run.
	if p.Start != nil {
		if err := p.Start(ctx); err != nil {
			return fmt.Errorf("waiting for Cluster API to remove the pool's machines: %w", err)
		}
	}
	n := namesOf(pool)
	left, err := p.removePool(ctx, n)
	if err != nil {
		return err
	}
	if left > 0 {
		return fmt.Errorf("waiting for the %d machines of MachineDeployment %s/%s to be deleted", left, n.namespace, n.pool)
	}
	if p.Infra.Outside == nil {
		return nil
	}
	if pool.HostedCluster.DeletionTimestamp.IsZero() {
		others, err := p.otherPools(ctx, pool)
		if err != nil || others {
			return err
		}
	}
	// The cluster goes, or its last pool: what it has outside its
	// control-plane namespace goes once no machine of any pool needs the
	// provider's credentials (the next pool makes it again).
	all := &unstructured.UnstructuredList{}
	all.SetGroupVersionKind(machineGVK.GroupVersion().WithKind("MachineList"))
	if err := p.Client.List(ctx, all, client.InNamespace(n.namespace), client.MatchingLabels{ClusterNameLabel: n.cluster}); err != nil && !isMissingKind(err) {
		return err
	}
	if len(all.Items) > 0 {
		return fmt.Errorf("waiting for the %d machines of HostedCluster %s to be deleted", len(all.Items), n.cluster)
	}
	for _, o := range p.Infra.Outside(pool) {
		if err := p.remove(ctx, o.GVK, o.Namespace, o.Name, n.hcUID); err != nil {
			return err
		}
	}
	return nil
}

// removePool deletes the pool's objects of Cluster API and says how many
// of its Machines are left (the machines of a deleted MachineDeployment
// need none of its templates to go).
func (p *Platform) removePool(ctx context.Context, n names) (int, error) {
	for _, k := range []schema.GroupVersionKind{
		machineDeploymentGVK, machineHealthCheckGVK, joinConfigTemplateGVK,
		gvk(p.Infra.Group, p.Infra.Version, p.Infra.MachineTemplateKind),
	} {
		if err := p.remove(ctx, k, n.namespace, n.pool, n.npUID); err != nil {
			return 0, err
		}
	}
	templates, err := p.poolTemplates(ctx, n)
	if err != nil {
		return 0, err
	}
	for _, t := range templates {
		if err := p.remove(ctx, t.GroupVersionKind(), n.namespace, t.GetName(), n.npUID); err != nil {
			return 0, err
		}
	}
	machines, err := p.machines(ctx, n)
	return len(machines), err
}

// Sleep does nothing: real machines keep running while their control
// plane sleeps, and their kubelets register again when it answers.
func (*Platform) Sleep(context.Context, *platform.Pool) error { return nil }

// otherPools says whether the pool's HostedCluster has another NodePool
// that is not being deleted.
func (p *Platform) otherPools(ctx context.Context, pool *platform.Pool) (bool, error) {
	list := &hypershiftv1alpha1.NodePoolList{}
	if err := p.Client.List(ctx, list, client.InNamespace(pool.HostedCluster.Namespace)); err != nil {
		return false, err
	}
	for i := range list.Items {
		np := &list.Items[i]
		if np.Spec.ClusterName == pool.HostedCluster.Name && np.UID != pool.NodePool.UID && np.DeletionTimestamp.IsZero() {
			return true, nil
		}
	}
	return false, nil
}
