// Package runtimetest provides a runtime for controller unit tests that
// records what it is asked and answers from its fields, running nothing.
package runtimetest

import (
	"context"
	"maps"
	"slices"
	"sync"

	"hypershift.dev/internal/runtime"
)

// Fake is a runtime.Runtime that runs nothing: Apply, Sleep and Fence are
// recorded; Published answers from PublishedPorts at PublishedHost; Status
// from Instances.
type Fake struct {
	Caps runtime.Capabilities
	// PublishedHost and PublishedPorts answer Published.
	PublishedHost  string
	PublishedPorts map[string]int
	// Instances answers Status and Running.
	Instances []runtime.InstanceStatus
	// FenceLeft is what Fence reports still writing.
	FenceLeft []string

	mu      sync.Mutex
	applied map[runtime.ControlPlaneRef][]runtime.Spec
	fenced  []runtime.Spec
	slept   []runtime.ControlPlaneRef
	pinned  map[runtime.ControlPlaneRef]map[string]int
}

var _ runtime.Runtime = (*Fake)(nil)

// Capabilities implements runtime.Runtime.
func (f *Fake) Capabilities() runtime.Capabilities { return f.Caps }

// Layout implements runtime.Runtime: pods when Caps.Pods.
func (f *Fake) Layout(runtime.ControlPlaneRef) runtime.Layout {
	return runtime.Layout{Dir: "/fake", Pods: f.Caps.Pods}
}

// Ports implements runtime.Runtime: each name gets a port of its own, in
// the order of the names.
func (f *Fake) Ports(_ context.Context, _ runtime.ControlPlaneRef, want map[string]int) (map[string]int, error) {
	out := map[string]int{}
	for i, n := range slices.Sorted(maps.Keys(want)) {
		out[n] = 20000 + i
	}
	return out, nil
}

// Apply implements runtime.Runtime: it records specs.
func (f *Fake) Apply(_ context.Context, ref runtime.ControlPlaneRef, specs []runtime.Spec) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.applied == nil {
		f.applied = map[runtime.ControlPlaneRef][]runtime.Spec{}
	}
	f.applied[ref] = specs
	return nil
}

// Applied returns the specs last applied for ref.
func (f *Fake) Applied(ref runtime.ControlPlaneRef) []runtime.Spec {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.applied[ref]
}

// Status implements runtime.Runtime.
func (f *Fake) Status(runtime.ControlPlaneRef) []runtime.InstanceStatus { return f.Instances }

// Running implements runtime.Runtime: an instance is not Stopped.
func (f *Fake) Running(runtime.ControlPlaneRef) bool {
	for _, in := range f.Instances {
		if in.Phase != runtime.Stopped {
			return true
		}
	}
	return false
}

// Published implements runtime.Runtime.
func (f *Fake) Published(_ context.Context, _ runtime.ControlPlaneRef, name string) (string, int, bool, error) {
	port, ok := f.PublishedPorts[name]
	return f.PublishedHost, port, ok, nil
}

// Delete implements runtime.Runtime: it forgets what was applied.
func (f *Fake) Delete(_ context.Context, ref runtime.ControlPlaneRef) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.applied, ref)
	return nil
}

// Sleep implements runtime.Runtime: recorded when Caps.InPlace.
func (f *Fake) Sleep(_ context.Context, ref runtime.ControlPlaneRef) error {
	if !f.Caps.InPlace {
		return runtime.ErrNotInPlace
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.slept = append(f.slept, ref)
	return nil
}

// Fence implements runtime.Runtime: it records specs and reports FenceLeft
// when Caps.InPlace.
func (f *Fake) Fence(_ context.Context, _ runtime.ControlPlaneRef, specs []runtime.Spec) ([]string, error) {
	if !f.Caps.InPlace {
		return nil, runtime.ErrNotInPlace
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fenced = specs
	return f.FenceLeft, nil
}

// Fenced returns the specs of the last Fence.
func (f *Fake) Fenced() []runtime.Spec {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fenced
}

// PinPorts implements runtime.Runtime: a control plane is pinned once.
func (f *Fake) PinPorts(ref runtime.ControlPlaneRef, ports map[string]int) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.pinned[ref]; ok {
		return false, nil
	}
	if f.pinned == nil {
		f.pinned = map[runtime.ControlPlaneRef]map[string]int{}
	}
	f.pinned[ref] = ports
	return true, nil
}

// UnpinPorts implements runtime.Runtime.
func (f *Fake) UnpinPorts(ref runtime.ControlPlaneRef) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.pinned, ref)
	return nil
}
