// Package kube runs control planes as pods of the management cluster.
//
// Placeholder with the contract's constructor and methods, so that the
// operator's kube mode compiles; the real runtime replaces this file.
package kube

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/api/resource"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hypershift.dev/internal/runtime"
)

var errNotBuilt = errors.New("kube runtime not built yet")

// Options configure the kube runtime.
type Options struct {
	Image, StorageClassName, PriorityClassName, Namespace string
	EtcdStorageSize                                       resource.Quantity
}

// Runtime runs control planes as pods.
type Runtime struct{}

var _ runtime.Runtime = (*Runtime)(nil)

// New returns the kube runtime.
func New(_ client.Client, _ Options) *Runtime { return &Runtime{} }

// Watch notifies on changes of control-plane pods.
func (r *Runtime) Watch(_ ctrl.Manager, _ func(runtime.ControlPlaneRef)) error { return nil }

// Layout implements runtime.Runtime.
func (r *Runtime) Layout(runtime.ControlPlaneRef) runtime.Layout { return runtime.Layout{} }

// Ports implements runtime.Runtime.
func (r *Runtime) Ports(context.Context, runtime.ControlPlaneRef, []string) (map[string]int, error) {
	return nil, errNotBuilt
}

// Apply implements runtime.Runtime.
func (r *Runtime) Apply(context.Context, runtime.ControlPlaneRef, []runtime.Spec) error {
	return errNotBuilt
}

// Status implements runtime.Runtime.
func (r *Runtime) Status(runtime.ControlPlaneRef) []runtime.InstanceStatus { return nil }

// Published implements runtime.Runtime.
func (r *Runtime) Published(context.Context, runtime.ControlPlaneRef, string) (string, int, bool, error) {
	return "", 0, false, errNotBuilt
}

// Delete implements runtime.Runtime.
func (r *Runtime) Delete(context.Context, runtime.ControlPlaneRef) error { return errNotBuilt }
