package nodepool

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"net/netip"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/components"
	"hypershift.dev/internal/nodes/bootstrap"
	"hypershift.dev/internal/nodes/simulated"
	"hypershift.dev/internal/runtime"
	"hypershift.dev/internal/version"
)

// simulatedPlatform runs a pool's machines as nodes of one simulated agent
// process. Its machine list is a ConfigMap in the hosted cluster that the
// agent watches (simulated.Config): adding a machine starts a node, removing
// it stops the node — the agent is never restarted for scaling.
type simulatedPlatform struct {
	runtime runtime.Runtime
	now     func() time.Time
}

// agentRef is the runtime's name for a pool's agent: its directory is
// <runtime root>/<namespace>-<pool>. Pools a/b-c and a-b/c share that
// directory name, so it is owned by the pool's UID: the runtime refuses to
// run or delete an agent in a directory another pool claimed.
func agentRef(np *hypershiftv1alpha1.NodePool) runtime.ControlPlaneRef {
	return runtime.ControlPlaneRef{Namespace: np.Namespace + "-" + np.Name, Name: np.Name, Owner: string(np.UID)}
}

// poolOfAgent inverts agentRef.
func poolOfAgent(ref runtime.ControlPlaneRef) (types.NamespacedName, bool) {
	ns, ok := strings.CutSuffix(ref.Namespace, "-"+ref.Name)
	if !ok || ns == "" {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: ns, Name: ref.Name}, true
}

func (p *simulatedPlatform) validate(*scope) error {
	if p.runtime == nil {
		return errors.New("this operator runs no node agents (it was started without a node runtime), so Simulated NodePools cannot run")
	}
	return nil
}

// config reads the pool's machine list.
func config(s *scope) (simulated.Config, *corev1.ConfigMap, error) {
	cm, err := s.hosted.configMaps.Get(simulated.ConfigMapName(s.np.Name))
	if apierrors.IsNotFound(err) {
		return simulated.Config{}, nil, nil
	}
	if err != nil {
		return simulated.Config{}, nil, err
	}
	cfg, err := simulated.DecodeConfig(cm)
	return cfg, cm, err
}

func (p *simulatedPlatform) reconcile(ctx context.Context, s *scope, want int32) (machineReport, error) {
	var report machineReport
	cfg, cm, err := config(s)
	if err != nil {
		return report, err
	}
	now := p.now()
	removed := p.repair(s, cfg.Machines, now)
	machines := without(cfg.Machines, removed)
	for int32(len(machines)) < want { //nolint:gosec // machine counts fit in int32
		m, err := p.newMachine(s, machines, now)
		if err != nil {
			return report, err
		}
		machines = append(machines, m)
	}
	drained, err := p.scaleDown(ctx, s, machines, want, now, &report)
	if err != nil {
		return report, err
	}
	for _, name := range drained {
		removed[name] = true
	}
	machines = without(machines, removed)

	cfg.Machines = machines
	cfg.Labels = s.np.Spec.NodeLabels
	cfg.Taints = taints(s.np.Spec.Taints)
	cfg.KubeletVersion = kubeletVersion(s.hc)
	if err := writeConfig(ctx, s.hosted.kube, s.np.Name, cfg, cm); err != nil {
		return report, err
	}
	// The agent stops a node when its machine leaves the list; only then is
	// the Node deleted, so it is not registered again.
	for name := range removed {
		if err := s.hosted.kube.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return report, fmt.Errorf("delete node %s: %w", name, err)
		}
		s.log.Info("machine removed", "machine", name)
	}

	report.machines = int32(len(machines)) //nolint:gosec // machine counts fit in int32
	for _, m := range machines {
		if s.nodes[m.Name] == nil {
			report.unregistered = append(report.unregistered, m.Name)
		}
	}
	report.busy = report.busy || len(removed) > 0 || len(report.unregistered) > 0 || report.machines != want
	if report.problem, err = p.ensureAgent(ctx, s); err != nil {
		return report, err
	}
	return report, nil
}

// repair picks the machines autorepair replaces.
func (p *simulatedPlatform) repair(s *scope, machines []simulated.Machine, now time.Time) map[string]bool {
	removed := map[string]bool{}
	if !s.np.Spec.Management.AutoRepair || s.deleting {
		return removed
	}
	bad, next := unhealthy(machines, s.nodes, now)
	for _, name := range bad {
		s.log.Info("autorepair: replacing unhealthy machine", "machine", name)
		removed[name] = true
	}
	if !next.IsZero() {
		s.requeueBy(next.Sub(now))
	}
	return removed
}

// scaleDown drains the nodes of the machines beyond want (in
// scaleDownOrder), uncordons draining nodes that no longer have to go, and
// returns the machines that can be removed now.
func (p *simulatedPlatform) scaleDown(ctx context.Context, s *scope, machines []simulated.Machine, want int32, now time.Time, report *machineReport) ([]string, error) {
	surplus := max(len(machines)-int(want), 0)
	victims := scaleDownOrder(machines, s.nodes)[:surplus]
	isVictim := map[string]bool{}
	for _, m := range victims {
		isVictim[m.Name] = true
	}
	inList := map[string]bool{}
	for _, m := range machines {
		inList[m.Name] = true
	}
	for name, node := range s.nodes {
		if draining(node) && !isVictim[name] && inList[name] {
			if err := uncordon(ctx, s.hosted.kube, node); err != nil {
				return nil, err
			}
		}
	}
	timeout := time.Duration(0)
	if s.np.Spec.NodeDrainTimeout != nil {
		timeout = s.np.Spec.NodeDrainTimeout.Duration
	}
	var done []string
	for _, m := range victims {
		node := s.nodes[m.Name]
		if node == nil {
			done = append(done, m.Name)
			continue
		}
		res, err := drainNode(ctx, s.hosted.kube, node, timeout, now)
		if err != nil {
			return nil, err
		}
		switch {
		case res.timedOut:
			s.log.Info("drain timed out, removing the node anyway", "node", m.Name, "podsLeft", res.remaining, "nodeDrainTimeout", timeout.String())
			done = append(done, m.Name)
		case res.done:
			done = append(done, m.Name)
		default:
			report.draining = append(report.draining, m.Name)
			report.blocked += res.blocked
			report.busy = true
		}
	}
	return done, nil
}

func without(machines []simulated.Machine, removed map[string]bool) []simulated.Machine {
	out := machines[:0:0]
	for _, m := range machines {
		if !removed[m.Name] {
			out = append(out, m)
		}
	}
	return out
}

func taints(in []hypershiftv1alpha1.Taint) []corev1.Taint {
	var out []corev1.Taint
	for _, t := range in {
		out = append(out, corev1.Taint{Key: t.Key, Value: t.Value, Effect: t.Effect})
	}
	return out
}

func kubeletVersion(hc *hypershiftv1alpha1.HostedCluster) string {
	switch {
	case hc.Status.Version != "":
		return hc.Status.Version
	case hc.Spec.KubernetesVersion != "":
		return hc.Spec.KubernetesVersion
	default:
		return version.KubernetesVersion
	}
}

// writeConfig creates or updates the pool's ConfigMap when it changed.
func writeConfig(ctx context.Context, kube kubernetes.Interface, pool string, cfg simulated.Config, existing *corev1.ConfigMap) error {
	want, err := cfg.ConfigMap(pool)
	if err != nil {
		return err
	}
	api := kube.CoreV1().ConfigMaps(metav1.NamespaceSystem)
	if existing == nil {
		if _, err := api.Create(ctx, want, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create machine list %s: %w", want.Name, err)
		}
		return nil
	}
	if existing.Data[simulated.ConfigKey] == want.Data[simulated.ConfigKey] {
		return nil
	}
	updated := existing.DeepCopy()
	updated.Data = want.Data
	if _, err := api.Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update machine list %s: %w", want.Name, err)
	}
	return nil
}

// Simulated node addresses come from 100.64.0.0/10 (shared address space),
// which no real network of these nodes uses.
var nodeAddressRange = netip.MustParsePrefix("100.64.0.0/10")

// newMachine names a new machine <pool>-<5 random characters> and gives its
// node an address no other node or machine of the cluster has.
func (p *simulatedPlatform) newMachine(s *scope, machines []simulated.Machine, now time.Time) (simulated.Machine, error) {
	used := map[string]bool{}
	names := map[string]bool{}
	for _, m := range machines {
		used[m.Address], names[m.Name] = true, true
	}
	if all, err := s.hosted.nodes.List(labels.Everything()); err == nil {
		for _, n := range all {
			names[n.Name] = true
			for _, a := range n.Status.Addresses {
				used[a.Address] = true
			}
		}
	}
	if cms, err := s.hosted.configMaps.List(labels.Everything()); err == nil {
		for _, cm := range cms {
			if other, err := simulated.DecodeConfig(cm); err == nil {
				for _, m := range other.Machines {
					used[m.Address] = true
				}
			}
		}
	}
	name := ""
	for name == "" || names[name] {
		name = s.np.Name + "-" + utilrand.String(5)
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(name))
	size := uint32(1) << (32 - nodeAddressRange.Bits())
	base := nodeAddressRange.Addr().As4()
	start := binary.BigEndian.Uint32(base[:])
	for i := range size {
		off := (h.Sum32() + i) % size
		if off == 0 || off == size-1 {
			continue
		}
		var ip [4]byte
		binary.BigEndian.PutUint32(ip[:], start+off)
		addr := netip.AddrFrom4(ip).String()
		if !used[addr] {
			return simulated.Machine{Name: name, Address: addr, Created: metav1.NewTime(now.Truncate(time.Second))}, nil
		}
	}
	return simulated.Machine{}, fmt.Errorf("no free node address in %s", nodeAddressRange)
}

// ensureAgent runs the pool's agent with the current token and reports a
// problem when it does not run.
func (p *simulatedPlatform) ensureAgent(ctx context.Context, s *scope) (string, error) {
	if s.token.ID == "" {
		return "", errors.New("no bootstrap token to run the agent with")
	}
	if err := ensureAgentRBAC(ctx, s); err != nil {
		return "", err
	}
	kc, err := bootstrap.Kubeconfig(s.server, s.caPEM, s.token)
	if err != nil {
		return "", err
	}
	ref := agentRef(s.np)
	ports, err := p.runtime.Ports(ctx, ref, []string{agentHealthPort})
	if err != nil {
		return "", fmt.Errorf("agent ports: %w", err)
	}
	spec := renderAgent(filepath.Join(runtimeDir(p.runtime, ref), simulated.Component), s.np.Name, kc, ports[agentHealthPort])
	if err := p.runtime.Apply(ctx, ref, []components.Spec{spec}); err != nil {
		return "", fmt.Errorf("run agent: %w", err)
	}
	for _, st := range p.runtime.Status(ref) {
		if st.Phase != hypershiftv1alpha1.ComponentRunning {
			msg := fmt.Sprintf("node agent %s is %s", st.Name, st.Phase)
			if st.Message != "" {
				msg += ": " + st.Message
			}
			return msg, nil
		}
	}
	return "", nil
}

// agentHealthPort names the port of the agent's health endpoint.
const agentHealthPort = "health"

// renderAgent is the agent's component spec; dir is its instance
// directory.
func renderAgent(dir, pool string, bootstrapKubeconfig []byte, healthPort int) components.Spec {
	flags := simulated.DefaultAgentConfig()
	flags.BootstrapKubeconfig = filepath.Join(dir, "bootstrap.kubeconfig")
	flags.NodePool = pool
	flags.CertDir = filepath.Join(dir, "pki")
	flags.HealthAddress = fmt.Sprintf("127.0.0.1:%d", healthPort)
	return components.Spec{
		Name:      simulated.Component,
		Component: simulated.Component,
		Args:      flags.Args(),
		Files:     []components.File{{Path: "bootstrap.kubeconfig", Content: bootstrapKubeconfig, Secret: true}},
		Ports:     map[string]int{agentHealthPort: healthPort},
		Readiness: components.Probe{Scheme: "http", Port: healthPort, Path: "/healthz"},
	}
}

// runtimeDir asks runtimes that keep files locally where a pool's agent
// keeps them; others run it in /var/lib/hypershift.
func runtimeDir(rt runtime.Runtime, ref runtime.ControlPlaneRef) string {
	if d, ok := rt.(interface {
		Dir(ref runtime.ControlPlaneRef) string
	}); ok {
		return d.Dir(ref)
	}
	return "/var/lib/hypershift"
}

// ensureAgentRBAC lets the pool's token read what the agent watches; once
// per connection.
func ensureAgentRBAC(ctx context.Context, s *scope) error {
	if _, done := s.hosted.rbacDone.Load(s.np.Name); done {
		return nil
	}
	kube := s.hosted.kube.RbacV1()
	cr, crb, role, rb := simulated.AgentRBAC(s.np.Name)
	apply := []struct {
		what string
		do   func() error
	}{
		{"ClusterRole " + cr.Name, func() error {
			_, err := kube.ClusterRoles().Create(ctx, cr, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				_, err = kube.ClusterRoles().Update(ctx, cr, metav1.UpdateOptions{})
			}
			return err
		}},
		{"ClusterRoleBinding " + crb.Name, func() error { return bootstrap.EnsureClusterRoleBinding(ctx, s.hosted.kube, crb) }},
		{"Role " + role.Name, func() error {
			_, err := kube.Roles(role.Namespace).Create(ctx, role, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				_, err = kube.Roles(role.Namespace).Update(ctx, role, metav1.UpdateOptions{})
			}
			return err
		}},
		{"RoleBinding " + rb.Name, func() error {
			_, err := kube.RoleBindings(rb.Namespace).Create(ctx, rb, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return nil
			}
			return err
		}},
	}
	for _, a := range apply {
		if err := a.do(); err != nil {
			return fmt.Errorf("agent RBAC: %s: %w", a.what, err)
		}
	}
	s.hosted.rbacDone.Store(s.np.Name, true)
	return nil
}

// cleanup removes the machine list and the agent's RBAC.
func (p *simulatedPlatform) cleanup(ctx context.Context, s *scope) error {
	kube := s.hosted.kube
	cr, crb, role, rb := simulated.AgentRBAC(s.np.Name)
	deletes := []func() error{
		func() error {
			return kube.CoreV1().ConfigMaps(metav1.NamespaceSystem).Delete(ctx, simulated.ConfigMapName(s.np.Name), metav1.DeleteOptions{})
		},
		func() error {
			return kube.RbacV1().RoleBindings(rb.Namespace).Delete(ctx, rb.Name, metav1.DeleteOptions{})
		},
		func() error {
			return kube.RbacV1().Roles(role.Namespace).Delete(ctx, role.Name, metav1.DeleteOptions{})
		},
		func() error { return kube.RbacV1().ClusterRoleBindings().Delete(ctx, crb.Name, metav1.DeleteOptions{}) },
		func() error { return kube.RbacV1().ClusterRoles().Delete(ctx, cr.Name, metav1.DeleteOptions{}) },
	}
	for _, del := range deletes {
		if err := del(); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	s.hosted.rbacDone.Delete(s.np.Name)
	return nil
}

// delete stops the agent and removes its directory, unless another pool
// owns that directory.
func (p *simulatedPlatform) delete(ctx context.Context, s *scope) error {
	if p.runtime == nil {
		return nil
	}
	err := p.runtime.Delete(ctx, agentRef(s.np))
	switch {
	case errors.Is(err, runtime.ErrNotOwner):
		// Another pool's agent: not ours to stop or remove.
		s.log.Info("leaving node agent alone", "reason", err.Error())
	case err != nil:
		return fmt.Errorf("delete agent: %w", err)
	}
	return nil
}
