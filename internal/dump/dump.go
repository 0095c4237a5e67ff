// Package dump collects what is needed to debug one hosted cluster into one
// archive: its objects on the management side, its components' status and
// log tails, recent events, and the hosted cluster's nodes and the pods that
// are not running. Every Secret value and anything that looks like key
// material is redacted before anything is written.
package dump

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/hostedref"
)

// Options say which cluster to dump and how to reach what it is made of.
type Options struct {
	// Client and Clientset reach the management cluster (Clientset for
	// pod logs of the kube runtime).
	Client    client.Client
	Clientset kubernetes.Interface
	// Cluster is the HostedCluster.
	Cluster client.ObjectKey
	// ProcessRoot is where the process runtime keeps control planes
	// (<data dir>/clusters), for their log files; empty when the
	// management plane is not on this host.
	ProcessRoot string
	// LogLines is how many last lines of each log are kept.
	LogLines int
	// HostedTimeout bounds each request to the hosted cluster, which may be
	// down (that is often why it is dumped).
	HostedTimeout time.Duration
}

// File is one entry of a dump.
type File struct {
	Path string
	Data []byte
}

// Bundle is a collected dump: its files, already redacted, and what could
// not be collected (also written, as problems.txt).
type Bundle struct {
	Files    []File
	Problems []string
}

// collector builds a Bundle.
type collector struct {
	o        Options
	redactor Redactor
	files    []File
	problems []string
}

func (c *collector) add(path string, data []byte) {
	c.files = append(c.files, File{Path: path, Data: data})
}

func (c *collector) addYAML(path string, v any) {
	data, err := yaml.Marshal(v)
	if err != nil {
		c.problem("%s: %v", path, err)
		return
	}
	c.add(path, data)
}

func (c *collector) problem(format string, args ...any) {
	c.problems = append(c.problems, fmt.Sprintf(format, args...))
}

// Collect gathers the dump of one hosted cluster. Only a missing cluster is
// an error; whatever else cannot be read is listed in Bundle.Problems.
func Collect(ctx context.Context, o Options) (*Bundle, error) {
	if o.LogLines <= 0 {
		o.LogLines = 200
	}
	if o.HostedTimeout <= 0 {
		o.HostedTimeout = 10 * time.Second
	}
	hc := &hypershiftv1alpha1.HostedCluster{}
	if err := o.Client.Get(ctx, o.Cluster, hc); err != nil {
		return nil, fmt.Errorf("hosted cluster %s: %w", o.Cluster, err)
	}
	c := &collector{o: o}
	cpNamespace := ControlPlaneNamespace(hc)

	// Secrets first: the redactor must know every value before anything
	// else is written.
	secrets := c.secrets(ctx, hc, cpNamespace)
	c.management(ctx, hc, cpNamespace)
	hcp := &hypershiftv1alpha1.HostedControlPlane{}
	if err := o.Client.Get(ctx, client.ObjectKey{Namespace: cpNamespace, Name: hc.Name}, hcp); err != nil {
		c.problem("hosted control plane %s/%s: %v", cpNamespace, hc.Name, err)
		hcp = nil
	} else {
		clean(hcp)
		c.addYAML("management/hostedcontrolplane.yaml", hcp)
	}
	var logs []logTail
	if hcp != nil {
		logs = c.componentLogs(ctx, cpNamespace, string(hcp.UID))
	}
	hosted := c.hosted(ctx, hc, cpNamespace, secrets)
	c.add("summary.txt", summary(hc, hcp, logs, hosted, c.problems))
	if len(c.problems) > 0 {
		c.add("problems.txt", []byte(joinLines(c.problems)))
	}

	b := &Bundle{Problems: c.problems}
	for _, f := range c.files {
		b.Files = append(b.Files, File{Path: f.Path, Data: c.redactor.Scrub(f.Data)})
	}
	sort.Slice(b.Files, func(i, j int) bool { return b.Files[i].Path < b.Files[j].Path })
	return b, nil
}

// ControlPlaneNamespace is where the cluster's control plane lives.
func ControlPlaneNamespace(hc *hypershiftv1alpha1.HostedCluster) string {
	if hc.Status.ControlPlaneNamespace != "" {
		return hc.Status.ControlPlaneNamespace
	}
	return hostedref.ControlPlaneNamespace(hc)
}

// secrets reads the cluster's Secrets — every one of its control-plane
// namespace, and those of its own namespace it owns or names — teaches the
// redactor their values and writes them without values. It returns them
// by namespace/name for the hosted side's kubeconfig.
func (c *collector) secrets(ctx context.Context, hc *hypershiftv1alpha1.HostedCluster, cpNamespace string) map[string]*corev1.Secret {
	byKey := map[string]*corev1.Secret{}
	var out []*corev1.Secret
	for _, ns := range []string{cpNamespace, hc.Namespace} {
		list := &corev1.SecretList{}
		if err := c.o.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
			c.problem("secrets in %s: %v", ns, err)
			continue
		}
		for i := range list.Items {
			s := &list.Items[i]
			// Every value is learned, also of Secrets not written: a
			// log may quote any of them.
			c.redactor.Learn(s)
			if ns == hc.Namespace && !ownedBy(s, hc) && !referenced(s, hc) {
				continue
			}
			byKey[s.Namespace+"/"+s.Name] = s
			out = append(out, RedactSecret(s))
		}
	}
	c.addYAML("management/secrets.yaml", list("SecretList", out))
	return byKey
}

func ownedBy(obj metav1.Object, hc *hypershiftv1alpha1.HostedCluster) bool {
	for _, ref := range obj.GetOwnerReferences() {
		if ref.UID == hc.UID {
			return true
		}
	}
	return false
}

func referenced(s *corev1.Secret, hc *hypershiftv1alpha1.HostedCluster) bool {
	return hc.Status.KubeConfig != nil && hc.Status.KubeConfig.Name == s.Name
}

// management writes the cluster's objects on the management side: the
// HostedCluster, its NodePools, the control plane's workloads (kube
// runtime) and the events of both namespaces about them.
func (c *collector) management(ctx context.Context, hc *hypershiftv1alpha1.HostedCluster, cpNamespace string) {
	view := hc.DeepCopy()
	clean(view)
	c.addYAML("management/hostedcluster.yaml", view)

	pools := &hypershiftv1alpha1.NodePoolList{}
	names := map[string]bool{hc.Name: true}
	if err := c.o.Client.List(ctx, pools, client.InNamespace(hc.Namespace)); err != nil {
		c.problem("node pools: %v", err)
	}
	var own []hypershiftv1alpha1.NodePool
	for _, p := range pools.Items {
		if p.Spec.ClusterName == hc.Name {
			clean(&p)
			own = append(own, p)
			names[p.Name] = true
		}
	}
	c.addYAML("management/nodepools.yaml", list("NodePoolList", own))

	events, errs := ClusterEvents(ctx, c.o.Client, hc, cpNamespace, names)
	for _, err := range errs {
		c.problem("%v", err)
	}
	for i := range events {
		clean(&events[i])
	}
	sortEvents(events)
	c.addYAML("management/events.yaml", list("EventList", events))
	c.add("management/events.txt", eventTable(events))

	// The control plane's workloads on the kube runtime (none on the
	// process runtime but the namespace's own ConfigMaps).
	for _, kind := range workloadKinds {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(kind.GroupVersion().WithKind(kind.Kind + "List"))
		if err := c.o.Client.List(ctx, l, client.InNamespace(cpNamespace)); err != nil {
			c.problem("%s in %s: %v", kind.Kind, cpNamespace, err)
			continue
		}
		if len(l.Items) == 0 {
			continue
		}
		for i := range l.Items {
			clean(&l.Items[i])
			redactWorkloadEnv(&l.Items[i], kind.Kind)
		}
		c.addYAML("management/"+strings.ToLower(kind.Kind)+"s.yaml", list(kind.Kind+"List", l.Items))
	}
}

// workloadKinds are what a control plane is made of on the kube runtime.
var workloadKinds = []schema.GroupVersionKind{
	{Version: "v1", Kind: "Pod"},
	{Version: "v1", Kind: "Service"},
	{Version: "v1", Kind: "ConfigMap"},
	{Version: "v1", Kind: "PersistentVolumeClaim"},
	{Group: "apps", Version: "v1", Kind: "Deployment"},
	{Group: "apps", Version: "v1", Kind: "StatefulSet"},
	{Group: "policy", Version: "v1", Kind: "PodDisruptionBudget"},
	{Group: "networking.k8s.io", Version: "v1", Kind: "NetworkPolicy"},
}

// ClusterEvents are the events about a hosted cluster on the management
// side: every event of its control-plane namespace, and those of its own
// namespace about an object named in names (the cluster and its NodePools).
// A namespace that cannot be listed is an error in errs; the other's
// events are still returned.
func ClusterEvents(ctx context.Context, c client.Reader, hc *hypershiftv1alpha1.HostedCluster, cpNamespace string, names map[string]bool) (events []corev1.Event, errs []error) {
	for _, ns := range []string{hc.Namespace, cpNamespace} {
		l := &corev1.EventList{}
		if err := c.List(ctx, l, client.InNamespace(ns)); err != nil {
			errs = append(errs, fmt.Errorf("events in %s: %w", ns, err))
			continue
		}
		for _, e := range l.Items {
			if ns == cpNamespace || names[e.InvolvedObject.Name] {
				events = append(events, e)
			}
		}
	}
	return events, errs
}

// clean drops what only makes a dump longer.
func clean(obj metav1.Object) {
	obj.SetManagedFields(nil)
	if a := obj.GetAnnotations(); a != nil {
		delete(a, corev1.LastAppliedConfigAnnotation)
	}
}

// envRedacted stands for an environment variable's literal value in a
// dump: a pod spec's env is where workloads put passwords and tokens, and
// a dump is handed to whoever debugs; references (valueFrom) are kept.
const envRedacted = "<redacted>"

// redactPodEnv replaces the literal env values of every container of spec.
func redactPodEnv(spec *corev1.PodSpec) {
	redact := func(env []corev1.EnvVar) {
		for i := range env {
			if env[i].Value != "" {
				env[i].Value = envRedacted
			}
		}
	}
	for i := range spec.InitContainers {
		redact(spec.InitContainers[i].Env)
	}
	for i := range spec.Containers {
		redact(spec.Containers[i].Env)
	}
	for i := range spec.EphemeralContainers {
		redact(spec.EphemeralContainers[i].Env)
	}
}

// redactWorkloadEnv does redactPodEnv for a Pod, or the pod template of a
// Deployment or StatefulSet, read as unstructured; other kinds have no pod
// spec and are left as they are.
func redactWorkloadEnv(obj *unstructured.Unstructured, kind string) {
	var path []string
	switch kind {
	case "Pod":
		path = []string{"spec"}
	case "Deployment", "StatefulSet":
		path = []string{"spec", "template", "spec"}
	default:
		return
	}
	raw, ok, err := unstructured.NestedMap(obj.Object, path...)
	if !ok || err != nil {
		return
	}
	var spec corev1.PodSpec
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &spec); err != nil {
		// Not a pod spec this API knows: drop it rather than write its
		// env values.
		unstructured.RemoveNestedField(obj.Object, path...)
		return
	}
	redactPodEnv(&spec)
	out, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&spec)
	if err != nil {
		unstructured.RemoveNestedField(obj.Object, path...)
		return
	}
	_ = unstructured.SetNestedMap(obj.Object, out, path...)
}

// list wraps items the way kubectl prints a list.
func list[T any](kind string, items []T) map[string]any {
	if items == nil {
		items = []T{}
	}
	return map[string]any{"apiVersion": "v1", "kind": kind, "items": items}
}

func sortEvents(events []corev1.Event) {
	sort.SliceStable(events, func(i, j int) bool { return EventTime(events[i]).Before(EventTime(events[j])) })
}

// EventTime is when an event last happened, whichever of its times is set.
func EventTime(e corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	default:
		return e.CreationTimestamp.Time
	}
}

func joinLines(lines []string) string { return strings.Join(lines, "\n") + "\n" }
