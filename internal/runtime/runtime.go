// Package runtime defines how rendered control-plane components are run.
// The process runtime (runtime/process) runs them as supervised local OS
// processes; a kube runtime runs the same specs as pods.
package runtime

import (
	"context"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/components"
)

// ControlPlaneRef names one control plane: its namespace (NS-NAME for a
// hosted cluster) and name.
type ControlPlaneRef struct {
	Namespace string
	Name      string
}

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
