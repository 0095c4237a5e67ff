// Package clusterapi is the part of every machine platform that Cluster
// API runs: a pool becomes a MachineDeployment (replicas, Replace rollouts
// within maxSurge and maxUnavailable, drain before removal), a
// MachineHealthCheck for autoRepair and a JoinConfigTemplate, beside its
// HostedCluster's Cluster, whose control plane is the HostedControlPlane.
// Cluster API's own controllers (internal/clusterapi) make, repair and
// remove the machines; an Infrastructure names the provider kinds that
// hold them (platform/host: machines of this host).
//
// Every object is written whole, at cluster.x-k8s.io/v1beta2 (no Cluster
// API webhook runs to default it), in the control-plane namespace, and
// labelled with the UID of its owner — the HostedCluster for the Cluster,
// its infrastructure cluster and kubeconfig Secret, the NodePool for the
// rest. An object of the same name without that label is never changed or
// deleted: the pool reports it.
package clusterapi

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/controller/nodepool/platform"
	"hypershift.dev/internal/hostedref"
)

// Cluster API's group and the labels it reads.
const (
	Group   = "cluster.x-k8s.io"
	Version = "v1beta2"
	// ClusterNameLabel names a Cluster API object's Cluster.
	ClusterNameLabel = "cluster.x-k8s.io/cluster-name"
	// DeploymentNameLabel names a Machine's MachineDeployment.
	DeploymentNameLabel = "cluster.x-k8s.io/deployment-name"
	// Autoscaler annotations of a MachineDeployment, for users who run the
	// upstream cluster-autoscaler's clusterapi provider.
	AutoscalerMinAnnotation = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size"
	AutoscalerMaxAnnotation = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size"

	// OwnerLabel holds the UID of the object (HostedCluster or NodePool) an
	// object of a machine pool is made for.
	OwnerLabel = hostedref.OwnerUIDLabel
	// PoolLabel names the NodePool, for people reading the namespace.
	PoolLabel = "hypershift.dev/nodepool"

	// SecretType is Cluster API's type of the Secrets it reads.
	SecretType = "cluster.x-k8s.io/secret" //nolint:gosec // a Secret type

	// FieldManager writes the objects (server-side apply).
	FieldManager = "hypershift-nodepool"
)

// MachineHealthCheckTimeoutAnnotation on a NodePool with autoRepair sets
// how long a Node may be NotReady or unknown before its machine is
// replaced (a Go duration, 30s to 24h); default UnhealthyTimeout.
const MachineHealthCheckTimeoutAnnotation = "hypershift.dev/machine-health-check-timeout"

// Autorepair thresholds: a Node NotReady or unknown for UnhealthyTimeout,
// or a machine whose Node has not registered after NodeStartupTimeout, is
// replaced.
const (
	UnhealthyTimeout   = 5 * time.Minute
	NodeStartupTimeout = 10 * time.Minute
)

// Infrastructure is a Cluster API infrastructure provider of a machine
// platform.
type Infrastructure struct {
	// Group and Version of its kinds (a CRD labelled with Cluster API's
	// contract).
	Group, Version string
	// ClusterKind is its infrastructure cluster; MachineKind its machine
	// and MachineTemplateKind the template Cluster API clones machines
	// from.
	ClusterKind, MachineKind, MachineTemplateKind string
	// ClusterSpec and MachineSpec are the spec of the cluster's
	// infrastructure object and of each machine (the template's
	// spec.template.spec); nil: empty. With a MachineSpec, the template's
	// name carries a hash of it, so that a change of the pool's machines
	// rolls out as new machines (Cluster API clones a template only when
	// a machine is made); without, it is named like the pool.
	ClusterSpec func(p *platform.Pool) map[string]any
	MachineSpec func(p *platform.Pool) map[string]any
	// ExternallyManaged marks the infrastructure cluster as managed by
	// hypershift (Cluster API's managed-by annotation: the provider makes
	// nothing for it) and reports it ready, as Cluster API's v1beta1
	// infrastructure contract has it (status.ready).
	ExternallyManaged bool
	// ClusterObjects are what the provider needs besides the
	// infrastructure cluster — credentials it reads, made from Secrets
	// the user names — written before it, owned by the HostedCluster; r
	// reads the management cluster. Nil: none.
	ClusterObjects func(ctx context.Context, r client.Reader, p *platform.Pool) ([]*unstructured.Unstructured, error)
	// Outside names the ClusterObjects that are not in the control-plane
	// namespace (cluster-scoped, or in the provider's namespace): they do
	// not go with it, and are removed when the HostedCluster is deleted
	// and has no machine left.
	Outside func(p *platform.Pool) []ObjectRef
	// Validate refuses a pool the provider cannot make machines for; nil:
	// none is refused.
	Validate func(p *platform.Pool) error
	// NodeName is the Node name of a machine the provider reports (its
	// infrastructure machine); "" when it names none yet, or not one of
	// the provider's.
	NodeName func(m *unstructured.Unstructured) string
	// Capacity is what a new machine's Node offers, for the autoscaler;
	// nil: unknown (a pending pod is taken to fit).
	Capacity func(np *hypershiftv1alpha1.NodePool) corev1.ResourceList
}

// ObjectRef names an object of a kind.
type ObjectRef struct {
	GVK             schema.GroupVersionKind
	Namespace, Name string
}

// ManagedByAnnotation is Cluster API's mark of an infrastructure cluster
// whose infrastructure another party provides: its provider leaves it be.
const ManagedByAnnotation = "cluster.x-k8s.io/managed-by"

// ProviderIDNodeName is a NodeName that takes the Node name from the
// machine's provider ID, PREFIX + NAME; "" for another provider's ID.
func ProviderIDNodeName(prefix string) func(*unstructured.Unstructured) string {
	return func(m *unstructured.Unstructured) string {
		id, _, _ := unstructured.NestedString(m.Object, "spec", "providerID")
		name, ok := strings.CutPrefix(id, prefix)
		if !ok {
			return ""
		}
		return name
	}
}

// Platform is a machine platform: Cluster API makes the pool's machines
// with the Infrastructure's provider, and each machine joins with the
// userdata of its JoinConfig.
type Platform struct {
	// Type is the platform's type, for messages.
	Type hypershiftv1alpha1.PlatformType
	// Client reads and writes the management cluster.
	Client client.Client
	Infra  Infrastructure
	// Start runs Cluster API's controllers and says whether they are
	// ready (an error while not); called on every reconcile, it does
	// nothing once they run. Nil: this operator runs none.
	Start func(ctx context.Context) error
}

func gvk(group, version, kind string) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: group, Version: version, Kind: kind}
}

var (
	clusterGVK            = gvk(Group, Version, "Cluster")
	machineGVK            = gvk(Group, Version, "Machine")
	machineDeploymentGVK  = gvk(Group, Version, "MachineDeployment")
	machineHealthCheckGVK = gvk(Group, Version, "MachineHealthCheck")
	joinConfigTemplateGVK = hypershiftv1alpha1.GroupVersion.WithKind("JoinConfigTemplate")
)

// names of a pool's objects, all in the control-plane namespace.
type names struct {
	namespace string
	// cluster names the Cluster, its infrastructure cluster and
	// CLUSTER-kubeconfig; pool the pool's objects.
	cluster, pool string
	hcUID, npUID  types.UID
}

func namesOf(p *platform.Pool) names {
	return names{
		namespace: hostedref.ControlPlaneNamespace(p.HostedCluster),
		cluster:   p.HostedCluster.Name, pool: p.NodePool.Name,
		hcUID: p.HostedCluster.UID, npUID: p.NodePool.UID,
	}
}

// notOursError: an object of a pool's name exists without the owner's
// label; it is left alone.
type notOursError struct{ kind, key string }

func (e *notOursError) Error() string {
	return fmt.Sprintf("%s %s exists and was not made for this pool: it is left alone; delete or rename it", e.kind, e.key)
}

// ProblemError is a problem of what the user wrote (a Secret named but
// missing, credentials that are not), reported in the pool's status
// rather than retried as a failure.
type ProblemError struct{ Msg string }

func (e *ProblemError) Error() string { return e.Msg }

// Problem is a ProblemError.
func Problem(format string, args ...any) error {
	return &ProblemError{Msg: fmt.Sprintf(format, args...)}
}

// isProblem: err is the user's to fix, and said in the pool's status.
func isProblem(err error) bool {
	var notOurs *notOursError
	var problem *ProblemError
	return errors.As(err, &notOurs) || errors.As(err, &problem)
}

// apply writes obj whole (server-side apply, forcing this manager's
// fields), owned by uid: an existing object of its name must carry that
// owner label, and the write names the existing object's UID, so that one
// deleted and made again by someone else since is refused, not taken.
func (m *Platform) apply(ctx context.Context, obj *unstructured.Unstructured, owner types.UID) error {
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[OwnerLabel] = string(owner)
	obj.SetLabels(labels)
	existing := &unstructured.Unstructured{}
	existing.SetGroupVersionKind(obj.GroupVersionKind())
	err := m.Client.Get(ctx, client.ObjectKeyFromObject(obj), existing)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return err
	case existing.GetLabels()[OwnerLabel] != string(owner):
		return &notOursError{kind: obj.GetKind(), key: obj.GetNamespace() + "/" + obj.GetName()}
	default:
		obj.SetUID(existing.GetUID())
	}
	if err := m.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply %s %s/%s: %w", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}

// remove deletes the object of that kind and key when it is owner's (one
// of another owner, or already being deleted, is left as it is).
func (m *Platform) remove(ctx context.Context, k schema.GroupVersionKind, namespace, name string, owner types.UID) error {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(k)
	if err := m.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj); err != nil {
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			return nil
		}
		return err
	}
	if obj.GetLabels()[OwnerLabel] != string(owner) || !obj.GetDeletionTimestamp().IsZero() {
		return nil
	}
	uid := obj.GetUID()
	if err := m.Client.Delete(ctx, obj, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

// object is an unstructured object of kind k.
func object(k schema.GroupVersionKind, namespace, name string, labels map[string]string, content map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: content}
	u.SetGroupVersionKind(k)
	u.SetNamespace(namespace)
	u.SetName(name)
	u.SetLabels(labels)
	return u
}

// isMissingKind: Cluster API's CRDs are not installed (yet).
func isMissingKind(err error) bool {
	var noMatch *meta.NoKindMatchError
	return errors.As(err, &noMatch) || meta.IsNoMatchError(err)
}

// UserSecret reads the Secret the user named in the HostedCluster's
// namespace; one that is missing is a Problem naming field, the field
// that names it.
func UserSecret(ctx context.Context, r client.Reader, hc *hypershiftv1alpha1.HostedCluster, name, field string) (*corev1.Secret, error) {
	s := &corev1.Secret{}
	err := r.Get(ctx, client.ObjectKey{Namespace: hc.Namespace, Name: name}, s)
	if apierrors.IsNotFound(err) {
		return nil, Problem("Secret %s/%s, named by %s, does not exist", hc.Namespace, name, field)
	}
	if err != nil {
		return nil, err
	}
	return s, nil
}

// SecretObject is a Secret of the control-plane namespace (or another)
// made for the cluster, holding data.
func SecretObject(namespace, name, cluster string, data map[string][]byte) *unstructured.Unstructured {
	enc := map[string]any{}
	for k, v := range data {
		enc[k] = base64.StdEncoding.EncodeToString(v)
	}
	return object(corev1.SchemeGroupVersion.WithKind("Secret"), namespace, name, map[string]string{ClusterNameLabel: cluster},
		map[string]any{"type": string(corev1.SecretTypeOpaque), "data": enc})
}

// Object is an unstructured object of kind k, labelled with the cluster's
// name.
func Object(k schema.GroupVersionKind, namespace, name, cluster string, content map[string]any) *unstructured.Unstructured {
	return object(k, namespace, name, map[string]string{ClusterNameLabel: cluster}, content)
}

// ControlPlaneNamespace is where the cluster's Cluster API objects are.
func ControlPlaneNamespace(p *platform.Pool) string { return namesOf(p).namespace }
