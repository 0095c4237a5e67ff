package simulated

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/controller/nodepool/platform"
	"hypershift.dev/internal/nodes/bootstrap"
	simagent "hypershift.dev/internal/nodes/simulated"
	"hypershift.dev/internal/runtime"
)

// The agent: one process per pool, run through the node runtime, joining
// its nodes with the pool's bootstrap token.

// AgentRef is the runtime's name for a pool's agent: its directory is
// <runtime root>/<namespace>-<pool>. Pools a/b-c and a-b/c share that
// directory name, so it is owned by the pool's UID: the runtime refuses to
// run or delete an agent in a directory another pool claimed.
func AgentRef(np *hypershiftv1alpha1.NodePool) runtime.ControlPlaneRef {
	return runtime.ControlPlaneRef{Namespace: np.Namespace + "-" + np.Name, Name: np.Name, Owner: string(np.UID)}
}

// PoolOfAgent inverts AgentRef.
func PoolOfAgent(ref runtime.ControlPlaneRef) (types.NamespacedName, bool) {
	ns, ok := strings.CutSuffix(ref.Namespace, "-"+ref.Name)
	if !ok || ns == "" {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: ns, Name: ref.Name}, true
}

// ensureAgent runs the pool's agent with the current token and reports a
// problem when it does not run.
func (p *Platform) ensureAgent(ctx context.Context, s *platform.Pool) (string, error) {
	if s.Token.ID == "" {
		return "", errors.New("no bootstrap token to run the agent with")
	}
	if err := ensureAgentRBAC(ctx, s); err != nil {
		return "", err
	}
	kc, err := bootstrap.Kubeconfig(s.Server, s.CAPEM, s.Token)
	if err != nil {
		return "", err
	}
	ref := AgentRef(s.NodePool)
	ports, err := p.Runtime.Ports(ctx, ref, runtime.Named(AgentHealthPort))
	if err != nil {
		return "", fmt.Errorf("agent ports: %w", err)
	}
	spec := renderAgent(filepath.Join(p.Runtime.Layout(ref).Dir, simagent.Component), s.NodePool.Name, kc, ports[AgentHealthPort])
	if err := p.Runtime.Apply(ctx, ref, []runtime.Spec{spec}); err != nil {
		return "", fmt.Errorf("run agent: %w", err)
	}
	for _, st := range p.Runtime.Status(ref) {
		if st.Phase != runtime.Running {
			msg := fmt.Sprintf("node agent %s is %s", st.Name, st.Phase)
			if st.Message != "" {
				msg += ": " + st.Message
			}
			return msg, nil
		}
	}
	return "", nil
}

// AgentHealthPort names the port of the agent's health endpoint.
const AgentHealthPort = "health"

// renderAgent is the agent's component spec; dir is its instance
// directory.
func renderAgent(dir, pool string, bootstrapKubeconfig []byte, healthPort int) runtime.Spec {
	flags := simagent.DefaultAgentConfig()
	flags.BootstrapKubeconfig = filepath.Join(dir, "bootstrap.kubeconfig")
	flags.NodePool = pool
	flags.CertDir = filepath.Join(dir, "pki")
	flags.HealthAddress = fmt.Sprintf("127.0.0.1:%d", healthPort)
	return runtime.Spec{
		Name:      simagent.Component,
		Component: simagent.Component,
		Args:      flags.Args(),
		Files:     []runtime.File{{Path: "bootstrap.kubeconfig", Content: bootstrapKubeconfig, Secret: true}},
		Ports:     map[string]int{AgentHealthPort: healthPort},
		Readiness: runtime.Probe{Scheme: "http", Port: healthPort, Path: "/healthz"},
	}
}

// ensureAgentRBAC lets the pool's token read what the agent watches; once
// per connection.
func ensureAgentRBAC(ctx context.Context, s *platform.Pool) error {
	if _, done := s.Cluster.Ensured.Load(s.NodePool.Name); done {
		return nil
	}
	kube := s.Cluster.Kube.RbacV1()
	cr, crb, role, rb := simagent.AgentRBAC(s.NodePool.Name)
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
		{"ClusterRoleBinding " + crb.Name, func() error { return bootstrap.EnsureClusterRoleBinding(ctx, s.Cluster.Kube, crb) }},
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
	s.Cluster.Ensured.Store(s.NodePool.Name, true)
	return nil
}

// Cleanup removes the machine list and the agent's RBAC.
func (p *Platform) Cleanup(ctx context.Context, s *platform.Pool) error {
	kube := s.Cluster.Kube
	cr, crb, role, rb := simagent.AgentRBAC(s.NodePool.Name)
	deletes := []func() error{
		func() error {
			return kube.CoreV1().ConfigMaps(metav1.NamespaceSystem).Delete(ctx, simagent.ConfigMapName(s.NodePool.Name), metav1.DeleteOptions{})
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
	s.Cluster.Ensured.Delete(s.NodePool.Name)
	return nil
}

// Delete stops the agent and removes its directory, unless another pool
// owns that directory.
func (p *Platform) Delete(ctx context.Context, s *platform.Pool) error {
	if p.Runtime == nil {
		return nil
	}
	return ownAgentOnly(s, "delete agent", p.Runtime.Delete(ctx, AgentRef(s.NodePool)))
}
