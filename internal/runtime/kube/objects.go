package kube

import (
	"fmt"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hypershift.dev/internal/runtime"
)

// Labels every object of a control plane carries. Objects are found by
// control plane AND owner UID, never by name alone.
const (
	ManagedByLabel    = "app.kubernetes.io/managed-by"
	ManagedBy         = "hypershift"
	ControlPlaneLabel = "hypershift.dev/control-plane"
	OwnerUIDLabel     = "hypershift.dev/owner-uid"
	ComponentLabel    = "hypershift.dev/component"
)

// FilesHashAnnotation on a pod template is a hash of the workload's files
// that the components read only at start (not Reloadable): a change of one
// rolls the pods; a Reloadable file reaches the running pods through their
// directory mount (FilesDir) instead.
const FilesHashAnnotation = "hypershift.dev/files-hash"

// KubernetesVersionAnnotation on a pod template is the Spec.Version of the
// workload's component, when it runs a release other than the compiled-in
// one (absent otherwise, so existing pod templates did not change): the
// status of an instance reports the version of the pod it runs in.
const KubernetesVersionAnnotation = "hypershift.dev/kubernetes-version"

// workload is one Deployment or StatefulSet: the instances of one
// Component (replicas) and those of the components that run Beside it
// (extra containers of the same pods).
type workload struct {
	component string
	// spec is the first instance's spec; all are equal but for Name.
	spec runtime.Spec
	// instances are the instance names in the order Apply was given them.
	instances []string
	sidecars  []sidecar
}

// sidecar is a component run as a container of another one's pods.
type sidecar struct {
	spec      runtime.Spec
	instances []string
}

// statefulSet: a component that keeps data runs as a StatefulSet with a
// volume per member.
func (w *workload) statefulSet() bool { return w.spec.Data != "" }

// replicas is the number of pods.
func (w *workload) replicas() int32 { return int32(len(w.instances)) } //nolint:gosec // a handful of instances

// groupWorkloads groups specs by Component, refusing components whose
// instances differ beyond their Name, and attaches Beside components to
// the workload they run in.
func groupWorkloads(specs []runtime.Spec) ([]*workload, error) {
	var order []string
	groups := map[string][]runtime.Spec{}
	for _, s := range specs {
		if err := validateSpec(s); err != nil {
			return nil, err
		}
		if _, ok := groups[s.Component]; !ok {
			order = append(order, s.Component)
		}
		groups[s.Component] = append(groups[s.Component], s)
	}
	byComponent := map[string]*workload{}
	var workloads []*workload
	var besides []string
	for _, component := range order {
		group := groups[component]
		if err := checkEqual(group); err != nil {
			return nil, err
		}
		if group[0].Beside != "" {
			besides = append(besides, component)
			continue
		}
		w := &workload{component: component, spec: group[0], instances: names(group)}
		byComponent[component] = w
		workloads = append(workloads, w)
	}
	for _, component := range besides {
		group := groups[component]
		host := byComponent[group[0].Beside]
		if host == nil {
			return nil, fmt.Errorf("instance %s: spec.Beside %q names no component of this control plane that runs on its own", group[0].Name, group[0].Beside)
		}
		if group[0].Data != "" {
			return nil, fmt.Errorf("instance %s: spec.Data %q on a component that runs beside %s: only a component on its own keeps data (a volume per pod)", group[0].Name, group[0].Data, host.component)
		}
		if len(group) != len(host.instances) {
			return nil, fmt.Errorf("component %s runs beside %s: it has %d instances, %s has %d; a sidecar needs one per pod",
				component, host.component, len(group), host.component, len(host.instances))
		}
		host.sidecars = append(host.sidecars, sidecar{spec: group[0], instances: names(group)})
	}
	for _, w := range workloads {
		if err := checkPodPorts(w); err != nil {
			return nil, err
		}
	}
	return workloads, nil
}

func names(specs []runtime.Spec) []string {
	out := make([]string, len(specs))
	for i, s := range specs {
		out[i] = s.Name
	}
	return out
}

// checkEqual refuses a group whose specs differ once Name is cleared: the
// instances run as replicas of one pod template.
func checkEqual(group []runtime.Spec) error {
	first := group[0]
	first.Name = ""
	for _, s := range group[1:] {
		other := s
		other.Name = ""
		if !reflect.DeepEqual(first, other) {
			return fmt.Errorf("instances %s and %s of component %s differ beyond their name: the kube runtime runs a component's instances as replicas of one pod template, so their specs must be equal but for Name (write the instance's own name as Layout.Self)",
				group[0].Name, s.Name, s.Component)
		}
	}
	return nil
}

// validateSpec refuses what the kube runtime cannot run, naming the field.
func validateSpec(s runtime.Spec) error {
	if s.Name == "" {
		return fmt.Errorf("a spec of component %q has no Name", s.Component)
	}
	if errs := validation.IsDNS1035Label(s.Component); len(errs) > 0 {
		return fmt.Errorf("instance %s: spec.Component %q is not a valid object name: %s", s.Name, s.Component, strings.Join(errs, "; "))
	}
	if s.Command != "" {
		return fmt.Errorf("instance %s: spec.Command %q runs a host executable; the kube runtime runs only compiled-in components", s.Name, s.Command)
	}
	if s.Readiness.Host != "" {
		return fmt.Errorf("instance %s: spec.Readiness.Host is %q; in a pod the kubelet probes the pod's IP, so leave it empty", s.Name, s.Readiness.Host)
	}
	if err := validateFiles(s); err != nil {
		return err
	}
	if v := s.DataVolume.Size; v != "" {
		if q, err := resource.ParseQuantity(v); err != nil || q.Sign() <= 0 {
			return fmt.Errorf("instance %s: spec.DataVolume.Size %q is not a positive quantity (such as 8Gi)", s.Name, v)
		}
	}
	for _, e := range s.Env {
		if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
			return fmt.Errorf("instance %s: spec.Env entry %q is not NAME=VALUE", s.Name, e)
		}
	}
	for name, port := range s.Ports {
		if port <= 0 || port > 65535 {
			return fmt.Errorf("instance %s: spec.Ports[%s] is %d; the kube runtime needs fixed ports (Runtime.Ports)", s.Name, name, port)
		}
	}
	if err := validateRestore(s); err != nil {
		return err
	}
	return validatePublish(s)
}

// validatePublish refuses published ports the kube runtime cannot publish.
func validatePublish(s runtime.Spec) error {
	for _, p := range s.Publish {
		if _, ok := s.Ports[p.Port]; !ok {
			return fmt.Errorf("instance %s: spec.Publish names port %q, which is not in spec.Ports", s.Name, p.Port)
		}
		if p.Type != runtime.NodePort && p.Type != runtime.LoadBalancer {
			return fmt.Errorf("instance %s: port %s is published as %q; the kube runtime publishes through Services: use NodePort or LoadBalancer", s.Name, p.Port, p.Type)
		}
		if errs := validation.IsDNS1035Label(publishedServiceName(s.Component, p.Port)); len(errs) > 0 {
			return fmt.Errorf("instance %s: published port %q gives the Service name %q: %s", s.Name, p.Port, publishedServiceName(s.Component, p.Port), strings.Join(errs, "; "))
		}
	}
	return nil
}

// checkPodPorts refuses two containers of one pod listening on the same
// port: they share the pod's network.
func checkPodPorts(w *workload) error {
	seen := map[int]string{}
	for _, s := range w.containers() {
		for name, port := range s.Ports {
			if other, ok := seen[port]; ok && other != s.Component {
				return fmt.Errorf("components %s and %s both listen on port %d (%s) in the pods of %s", other, s.Component, port, name, w.component)
			}
			seen[port] = s.Component
		}
	}
	return nil
}

// containers lists the specs of a workload's containers, its own first.
func (w *workload) containers() []runtime.Spec {
	out := []runtime.Spec{w.spec}
	for _, sc := range w.sidecars {
		out = append(out, sc.spec)
	}
	return out
}

// Objects renders the objects that run specs as a control plane in
// ref.Namespace: per workload its files Secret, Services, the Deployment or
// StatefulSet, a PodDisruptionBudget when replicated and a NetworkPolicy.
// It is a pure function: Apply applies what it returns.
func Objects(ref runtime.ControlPlaneRef, specs []runtime.Spec, opts Options) ([]client.Object, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if errs := validation.IsValidLabelValue(ref.Name); len(errs) > 0 {
		return nil, fmt.Errorf("control plane name %q is not a valid label value: %s", ref.Name, strings.Join(errs, "; "))
	}
	workloads, err := groupWorkloads(specs)
	if err != nil {
		return nil, err
	}
	var objs []client.Object
	for _, w := range workloads {
		r := renderer{ref: ref, opts: opts, w: w}
		secret, err := r.filesSecret()
		if err != nil {
			return nil, err
		}
		if secret != nil {
			objs = append(objs, secret)
		}
		// Before the workload: its first pods must find it.
		if restore := r.restoreSecret(); restore != nil {
			objs = append(objs, restore)
		}
		objs = append(objs, r.services()...)
		pod := r.podTemplate(secret)
		objs = append(objs, r.workloadObject(pod))
		if pdb := r.podDisruptionBudget(); pdb != nil {
			objs = append(objs, pdb)
		}
		objs = append(objs, r.networkPolicy())
	}
	return objs, nil
}

// renderer renders the objects of one workload.
type renderer struct {
	ref  runtime.ControlPlaneRef
	opts Options
	w    *workload
}

// labels are the labels of every object of the workload.
func (r renderer) labels() map[string]string {
	return objectLabels(r.ref, r.w.component)
}

func objectLabels(ref runtime.ControlPlaneRef, component string) map[string]string {
	return map[string]string{
		ManagedByLabel:    ManagedBy,
		ControlPlaneLabel: ref.Name,
		OwnerUIDLabel:     ref.Owner,
		ComponentLabel:    component,
	}
}

// selector picks the workload's pods; it leaves out the owner UID, so a
// workload's (immutable) selector never depends on who owns it.
func (r renderer) selector() map[string]string {
	return map[string]string{ControlPlaneLabel: r.ref.Name, ComponentLabel: r.w.component}
}
