package hostmachine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/controller/capiref"
	"hypershift.dev/internal/hostedref"
	"hypershift.dev/internal/nodes/machine"
)

// DataSecretType is the type of a bootstrap data Secret.
const DataSecretType corev1.SecretType = "cluster.x-k8s.io/secret" //nolint:gosec // a Secret type, not a credential

// MaxUserdata bounds the userdata a bootstrap data Secret may hold (a
// cloud's limit is 16–64 KiB; `hypershift machine create` takes as much).
const MaxUserdata = 64 << 10

// MachineName is the name of a HostMachine's machine on the host (its
// hostname, its Node's name, its provider ID's end): the HostMachine's
// name when it is one (machine.ValidateName), else its first letters and
// a hash of namespace/name, the same on every pass.
func MachineName(hm *hypershiftv1alpha1.HostMachine) string {
	if machine.ValidateName(hm.Name) == nil {
		return hm.Name
	}
	sum := sha256.Sum256([]byte(hm.Namespace + "/" + hm.Name))
	prefix := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			return r
		case r >= 'A' && r <= 'Z':
			return r - 'A' + 'a'
		}
		return '-'
	}, hm.Name)
	if len(prefix) > 31 {
		prefix = prefix[:31]
	}
	prefix = strings.Trim(prefix, "-")
	if prefix == "" {
		prefix = "machine"
	}
	return prefix + "-" + hex.EncodeToString(sum[:4])
}

// invalidError: what the machine would be made from cannot be used as it
// is; reason says why.
type invalidError struct {
	reason hypershiftv1alpha1.ConditionReason
	msg    string
}

func (e invalidError) Error() string { return e.msg }

func invalid(format string, args ...any) error {
	return invalidError{InvalidBootstrapDataReason, fmt.Sprintf(format, args...)}
}

// checkNamespace refuses a HostMachine that is not in the control-plane
// namespace of a HostedCluster: its userdata would run as root on this
// host. The namespace must carry the labels the operator sets on the
// control-plane namespaces it makes (a namespace's labels are not its
// users' to set), naming a HostedCluster with that UID whose control-plane
// namespace it is.
func (r *Reconciler) checkNamespace(ctx context.Context, hm *hypershiftv1alpha1.HostMachine) error {
	refuse := func(format string, args ...any) error {
		return invalidError{NotInControlPlaneNamespaceReason, fmt.Sprintf(format, args...) +
			": machines run their userdata as root on this host, and are made only for HostMachines of a HostedCluster's control-plane namespace"}
	}
	ns := &corev1.Namespace{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: hm.Namespace}, ns); err != nil {
		return err
	}
	key := client.ObjectKey{Namespace: ns.Labels[hostedref.ClusterNamespaceLabel], Name: ns.Labels[hostedref.ClusterNameLabel]}
	uid := ns.Labels[hostedref.ClusterUIDLabel]
	if key.Namespace == "" || key.Name == "" || uid == "" {
		return refuse("Namespace %s is not a control-plane namespace (no %s labels)", hm.Namespace, hostedref.ClusterUIDLabel)
	}
	hc := &hypershiftv1alpha1.HostedCluster{}
	if err := r.Client.Get(ctx, key, hc); err != nil {
		if apierrors.IsNotFound(err) {
			return refuse("Namespace %s names HostedCluster %s, which does not exist", hm.Namespace, key)
		}
		return err
	}
	if string(hc.UID) != uid || hostedref.ControlPlaneNamespace(hc) != hm.Namespace {
		return refuse("Namespace %s is not the control-plane namespace of HostedCluster %s", hm.Namespace, key)
	}
	return nil
}

// waiting is what a HostMachine waits for before its machine is made.
type waiting struct {
	reason hypershiftv1alpha1.ConditionReason
	msg    string
}

// bootstrapData is the userdata of the HostMachine's Machine: the key value
// of the Secret its spec.bootstrap.dataSecretName names, in the
// HostMachine's namespace, at most MaxUserdata bytes. A HostMachine outside
// a control-plane namespace gets none (checkNamespace).
func (r *Reconciler) bootstrapData(ctx context.Context, hm *hypershiftv1alpha1.HostMachine) ([]byte, *waiting, error) {
	if err := r.checkNamespace(ctx, hm); err != nil {
		return nil, nil, err
	}
	m, err := capiref.OwningMachine(ctx, r.Client, hm)
	if err != nil {
		return nil, nil, err
	}
	if m == nil {
		return nil, &waiting{WaitingForMachineReason, "Waiting for a Machine to own it (Cluster API makes the Machine the controller of the HostMachine it cloned)"}, nil
	}
	// A Machine was read, so its kind is served: from now on its changes
	// and its Secret's wake the HostMachine.
	if err := r.watch.ensure(); err != nil {
		return nil, nil, err
	}
	name, _, _ := unstructured.NestedString(m.Object, "spec", "bootstrap", "dataSecretName")
	if name == "" {
		return nil, &waiting{WaitingForBootstrapDataReason, fmt.Sprintf("Waiting for Machine %s's bootstrap data (spec.bootstrap.dataSecretName)", m.GetName())}, nil
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return nil, nil, invalid("Machine %s's spec.bootstrap.dataSecretName %q is not a Secret's name: %s", m.GetName(), name, strings.Join(errs, "; "))
	}
	reader := r.APIReader
	if reader == nil {
		reader = r.Client
	}
	secret := &corev1.Secret{}
	if err := reader.Get(ctx, client.ObjectKey{Namespace: hm.Namespace, Name: name}, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &waiting{WaitingForBootstrapDataReason, fmt.Sprintf("Waiting for bootstrap data Secret %s/%s", hm.Namespace, name)}, nil
		}
		return nil, nil, err
	}
	value := secret.Data["value"]
	switch {
	case secret.Type != DataSecretType:
		return nil, nil, invalid("Secret %s/%s is of type %q, not a bootstrap data Secret (%s)", hm.Namespace, name, secret.Type, DataSecretType)
	case len(value) == 0:
		return nil, nil, invalid("Secret %s/%s has no userdata (key value)", hm.Namespace, name)
	case len(value) > MaxUserdata:
		return nil, nil, invalid("Secret %s/%s: its userdata is %d bytes, more than %d", hm.Namespace, name, len(value), MaxUserdata)
	}
	return value, nil, nil
}
