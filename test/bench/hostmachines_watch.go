package main

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
)

// machineWatch lists the cluster's Machines (management API) and its
// Nodes (hosted API) every 250 ms and records when each was first seen in
// each state.
type machineWatch struct {
	p         *plane
	name      string
	machines  dynamic.ResourceInterface
	start     time.Time
	mu        sync.Mutex
	kube      kubernetes.Interface
	available time.Time
	seen      map[string]*seenMachine // by Machine name
	nodes     map[string]*seenNode    // by provider ID
}

type seenMachine struct {
	seen, created, bootstrapAt, providerIDAt time.Time
	providerID                               string
}

type seenNode struct {
	name                    string
	seen, ready, readySince time.Time
}

func newMachineWatch(p *plane, name string) (*machineWatch, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(p.dataDir, "management.kubeconfig"))
	if err != nil {
		return nil, fmt.Errorf("load management kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = 100, 200
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &machineWatch{
		p:        p,
		name:     name,
		machines: dyn.Resource(machinesGVR).Namespace(clusterNamespace + "-" + name),
		start:    time.Now(),
		seen:     map[string]*seenMachine{},
		nodes:    map[string]*seenNode{},
	}, nil
}

// run polls until the returned stop is called (idempotent) or ctx ends.
func (w *machineWatch) run(ctx context.Context) func() {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(watchInterval)
		defer tick.Stop()
		for {
			w.poll(ctx)
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

func (w *machineWatch) poll(ctx context.Context) {
	w.pollMachines(ctx)
	if w.available.IsZero() {
		hc := &hypershiftv1alpha1.HostedCluster{}
		if err := w.p.client.Get(ctx, client.ObjectKey{Namespace: clusterNamespace, Name: w.name}, hc); err == nil && isAvailable(hc) {
			w.mu.Lock()
			w.available = time.Now()
			w.mu.Unlock()
		}
	}
	w.pollNodes(ctx)
}

func (w *machineWatch) pollMachines(ctx context.Context) {
	// Until Cluster API's CRDs exist the list fails; that is no Machine yet.
	if list, err := w.machines.List(ctx, metav1.ListOptions{}); err == nil {
		now := time.Now()
		w.mu.Lock()
		for _, m := range list.Items {
			s := w.seen[m.GetName()]
			if s == nil {
				s = &seenMachine{seen: now, created: m.GetCreationTimestamp().Time}
				w.seen[m.GetName()] = s
			}
			if data, _, _ := unstructured.NestedString(m.Object, "spec", "bootstrap", "dataSecretName"); data != "" && s.bootstrapAt.IsZero() {
				s.bootstrapAt = now
			}
			if id, _, _ := unstructured.NestedString(m.Object, "spec", "providerID"); id != "" && s.providerID == "" {
				s.providerID, s.providerIDAt = id, now
			}
		}
		w.mu.Unlock()
	}
}

func (w *machineWatch) pollNodes(ctx context.Context) {
	if w.kube == nil {
		cfg, err := w.p.hostedRESTConfig(ctx, w.name)
		if err != nil {
			return // no kubeconfig yet
		}
		kube, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return
		}
		w.mu.Lock()
		w.kube = kube
		w.mu.Unlock()
	}
	nodes, err := w.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return
	}
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if !strings.HasPrefix(n.Spec.ProviderID, providerIDPrefix) {
			continue
		}
		s := w.nodes[n.Spec.ProviderID]
		if s == nil {
			s = &seenNode{name: n.Name, seen: now}
			w.nodes[n.Spec.ProviderID] = s
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue && s.ready.IsZero() {
				s.ready, s.readySince = now, c.LastTransitionTime.Time
			}
		}
	}
}

func (w *machineWatch) machineNames() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var names []string
	for name := range w.seen {
		names = append(names, name)
	}
	return names
}

// readyMachines counts the Machines not in except whose Node was seen
// Ready.
func (w *machineWatch) readyMachines(except []string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for name, m := range w.seen {
		if slices.Contains(except, name) || m.providerID == "" {
			continue
		}
		if node := w.nodes[m.providerID]; node != nil && !node.ready.IsZero() {
			n++
		}
	}
	return n
}

// waitReady waits until want Machines have a Ready Node, except counting
// those before (already there).
func (w *machineWatch) waitReady(ctx context.Context, want int, before []string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		got := w.readyMachines(before) + len(before)
		if got >= want {
			return nil
		}
		if sleep(ctx, watchInterval) != nil {
			return fmt.Errorf("%d of %d machines with a Ready Node after %s", got, want, timeout)
		}
	}
}

// summarize computes the latencies: the Machines of before are those of
// the create, any other is the scale-up's, made after scaleStart; before
// nil (no scale-up yet), all are the create's.
func (w *machineWatch) summarize(res *hostMachinesResult, before []string, scaleStart time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	since := func(t, from time.Time) float64 {
		if t.IsZero() || from.IsZero() {
			return 0
		}
		return round3(t.Sub(from).Seconds())
	}
	res.AvailableS = since(w.available, w.start)
	var ready, byTimestamps []float64
	milestones := map[string][]float64{}
	for _, name := range slices.Sorted(maps.Keys(w.seen)) {
		m := w.seen[name]
		if first := since(m.seen, w.start); res.FirstMachineS == 0 || first < res.FirstMachineS {
			res.FirstMachineS = first
		}
		s := machineSample{
			Machine: name, ScaleUp: before != nil && !slices.Contains(before, name),
			BootstrapDataS: since(m.bootstrapAt, m.seen), ProviderIDAtS: since(m.providerIDAt, m.seen),
		}
		if !s.ScaleUp {
			milestones["bootstrap_data"] = appendPositive(milestones["bootstrap_data"], s.BootstrapDataS)
			milestones["provider_id"] = appendPositive(milestones["provider_id"], s.ProviderIDAtS)
		}
		if node := w.nodes[m.providerID]; node != nil {
			s.Node = node.name
			s.NodeS = since(node.seen, m.seen)
			s.ReadyS = since(node.ready, m.seen)
			s.ReadyByTimestampsS = since(node.readySince, m.created)
			if s.ScaleUp {
				res.ScaleUpS = since(node.ready, scaleStart)
				res.ScaleUpMachineS = s.ReadyS
			} else {
				ready = appendPositive(ready, s.ReadyS)
				milestones["node_registered"] = appendPositive(milestones["node_registered"], s.NodeS)
				milestones["ready"] = appendPositive(milestones["ready"], s.ReadyS)
				byTimestamps = appendPositive(byTimestamps, s.ReadyByTimestampsS)
			}
		}
		res.PerMachine = append(res.PerMachine, s)
	}
	res.ReadyS = summarizeIfAny(ready)
	res.ReadyByTimestampsS = summarizeIfAny(byTimestamps)
	if len(ready) > 0 {
		res.MilestonesP50S = map[string]float64{}
		for k, v := range milestones {
			res.MilestonesP50S[k] = median(v)
		}
	}
}
