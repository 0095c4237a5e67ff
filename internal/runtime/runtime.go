// Package runtime defines how rendered control-plane components are run.
// The process runtime (runtime/process) runs them as supervised local OS
// processes; a kube runtime runs the same specs as pods.
package runtime

import (
	"context"
	"errors"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/components"
)

// ControlPlaneRef names one control plane: its namespace (NS-NAME for a
// hosted cluster) and name, and the UID of the object that owns it.
type ControlPlaneRef struct {
	Namespace string
	Name      string
	// Owner is the UID of the owning object (a HostedControlPlane, a
	// NodePool). A runtime keeps a control plane's data keyed by Namespace,
	// which different owners can share; it refuses to run or delete one
	// whose data another owner made. Empty for the runtime's own fixed
	// control planes (management plane, node), which have no owner object.
	Owner string
}

// ErrNotOwner is wrapped by the error of Ports, Apply and Delete for a ref
// whose data another owner holds: nothing of it is used, stopped or removed.
var ErrNotOwner = errors.New("control plane belongs to another owner")

// Runtime runs the components of control planes.
type Runtime interface {
	// Ports returns the named ports of a control plane, allocating each
	// once and keeping it.
	Ports(ctx context.Context, ref ControlPlaneRef, names []string) (map[string]int, error)
	// Apply makes the running instances of a control plane match specs:
	// it starts missing ones, restarts changed ones and stops others.
	Apply(ctx context.Context, ref ControlPlaneRef, specs []components.Spec) error
	// Status reports each instance of a control plane.
	Status(ref ControlPlaneRef) []hypershiftv1alpha1.ComponentStatus
	// Delete stops a control plane and removes its data.
	Delete(ctx context.Context, ref ControlPlaneRef) error
}
