package nodepool

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/controller/conditions"
	"hypershift.dev/internal/hostedref"
	"hypershift.dev/internal/nodes/bootstrap"
)

// Condition reasons of NodePools (public in the API package).
const (
	reasonWaitingForHostedCluster  = hypershiftv1alpha1.WaitingForHostedClusterReason
	reasonHostedClusterDeleting    = hypershiftv1alpha1.HostedClusterDeletingReason
	reasonHostedClusterUnreachable = hypershiftv1alpha1.HostedClusterUnreachableReason
	reasonWaitingForNodes          = hypershiftv1alpha1.WaitingForNodesReason
	reasonScalingDown              = hypershiftv1alpha1.ScalingDownReason
	reasonNodesNotReady            = hypershiftv1alpha1.NodesNotReadyReason
	reasonAgentNotRunning          = hypershiftv1alpha1.AgentNotRunningReason
	// reasonReconcileFailed: a pass failed before it sized the pool.
	reasonReconcileFailed hypershiftv1alpha1.ConditionReason = "ReconcileFailed"
	reasonDisabled                                           = hypershiftv1alpha1.DisabledReason
	reasonEnabled                                            = hypershiftv1alpha1.EnabledReason
)

// reconcilePlatformConfig checks that the pool's platform can run it.
func (r *Reconciler) reconcilePlatformConfig(_ context.Context, s *scope) (ctrl.Result, error) {
	np := s.np
	if err := s.platform.validate(s); err != nil {
		conditions.Set(&np.Status.Conditions, np.Generation, hypershiftv1alpha1.NodePoolValidPlatformConfig, false,
			hypershiftv1alpha1.InvalidConfigurationReason, err.Error())
		conditions.Set(&np.Status.Conditions, np.Generation, hypershiftv1alpha1.NodePoolReady, false,
			hypershiftv1alpha1.InvalidConfigurationReason, err.Error())
		return ctrl.Result{}, reconcile.TerminalError(err)
	}
	conditions.Set(&np.Status.Conditions, np.Generation, hypershiftv1alpha1.NodePoolValidPlatformConfig, true,
		hypershiftv1alpha1.AsExpectedReason, fmt.Sprintf("Platform %s is supported", np.Spec.Platform.Type))
	return ctrl.Result{}, nil
}

// reconcileHostedCluster finds the pool's HostedCluster and connects to its
// API once it is Available.
func (r *Reconciler) reconcileHostedCluster(ctx context.Context, s *scope) (ctrl.Result, error) {
	np := s.np
	notReady := func(reason hypershiftv1alpha1.ConditionReason, msg string) {
		conditions.Set(&np.Status.Conditions, np.Generation, hypershiftv1alpha1.NodePoolReady, false, reason, msg)
	}
	key := types.NamespacedName{Namespace: np.Namespace, Name: np.Spec.ClusterName}
	hc := &hypershiftv1alpha1.HostedCluster{}
	if err := r.Client.Get(ctx, key, hc); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		// Nodes cannot outlive their control plane: stop the agent.
		r.hosted.forget(key)
		if err := s.platform.delete(ctx, s); err != nil {
			return ctrl.Result{}, err
		}
		notReady(hypershiftv1alpha1.HostedClusterNotFoundReason,
			fmt.Sprintf("HostedCluster %s not found: create it, or delete this NodePool (spec.clusterName is immutable)", key))
		return ctrl.Result{RequeueAfter: requeueSteady}, nil
	}
	s.hc = hc
	if !hc.DeletionTimestamp.IsZero() {
		r.hosted.forget(key)
		if err := s.platform.delete(ctx, s); err != nil {
			return ctrl.Result{}, err
		}
		notReady(reasonHostedClusterDeleting, fmt.Sprintf("HostedCluster %s is being deleted", key))
		return ctrl.Result{RequeueAfter: requeueSteady}, nil
	}
	if clusterSleeps(hc) {
		return r.sleep(ctx, s)
	}
	if clusterFenced(hc) {
		return r.fence(ctx, s)
	}
	if !conditions.IsTrue(hc.Status.Conditions, hypershiftv1alpha1.Available) || hc.Status.KubeConfig == nil {
		notReady(reasonWaitingForHostedCluster, fmt.Sprintf("Waiting for HostedCluster %s to be Available", key))
		return ctrl.Result{RequeueAfter: 30 * time.Second}, nil // its watch brings the change
	}
	if err := r.connect(ctx, s); err != nil {
		notReady(reasonHostedClusterUnreachable, err.Error())
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, nil
}

// connect reads the cluster's admin kubeconfig — the operator's copy in the
// control-plane namespace, never the one beside the HostedCluster that the
// namespace's users can rewrite — and opens (or reuses) the connection to
// it.
func (r *Reconciler) connect(ctx context.Context, s *scope) error {
	kc, cfg, err := hostedref.AdminKubeconfig(ctx, r.Client, s.hc)
	if err != nil {
		return err
	}
	kc, err = r.operatorKubeconfig(ctx, s.hc, kc)
	if err != nil {
		return err
	}
	hosted, err := r.hosted.get(ctx, client.ObjectKeyFromObject(s.hc), kc)
	if err != nil {
		return err
	}
	s.server, s.caPEM = cfg.Host, cfg.CAData
	s.hosted = hosted
	s.nodes, err = hosted.poolNodes(s.np.Name)
	return err
}

// reconcileBootstrap makes sure nodes can join and are told apart: the
// cluster's bootstrap RBAC, approval of the node client certificates the
// pool's tokens ask for, the binding of the pool's new Nodes, and approval
// of the serving certificates its nodes ask for. The pool's token is made
// by reconcileMachines, only when its agent needs one.
func (r *Reconciler) reconcileBootstrap(ctx context.Context, s *scope) (ctrl.Result, error) {
	if _, done := s.hosted.rbacDone.Load(""); !done {
		if err := bootstrap.EnsureClusterRBAC(ctx, s.hosted.kube); err != nil {
			return ctrl.Result{}, err
		}
		network, err := bootstrap.NetworkOf(s.hc.Spec.Networking)
		if err != nil {
			return ctrl.Result{}, fmt.Errorf("hosted cluster %s/%s: %w", s.hc.Namespace, s.hc.Name, err)
		}
		if err := bootstrap.EnsureJoinInfo(ctx, s.hosted.kube, client.ObjectKeyFromObject(s.hc).String(), s.caPEM, network); err != nil {
			return ctrl.Result{}, err
		}
		s.hosted.rbacDone.Store("", true)
	}
	if err := r.approveClientCSRs(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.bindNodes(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.recordAddresses(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, r.approveServingCSRs(ctx, s)
}

func (r *Reconciler) tokenTTL() time.Duration {
	if r.TokenTTL > 0 {
		return r.TokenTTL
	}
	return bootstrap.DefaultTTL
}

// ensureToken finds the pool's token, creating one when there is none or
// the current one nears expiry.
func (r *Reconciler) ensureToken(ctx context.Context, s *scope) error {
	now, ttl, pool := r.now(), r.tokenTTL(), s.np.Name
	cached, err := s.hosted.secrets.List(labels.SelectorFromSet(labels.Set{hypershiftv1alpha1.NodePoolLabel: pool}))
	if err != nil {
		return err
	}
	tok, rotateAt, ok := bootstrap.CurrentToken(cached, pool, ttl, now)
	if !ok {
		// The cache may lag a token made a moment ago: ask the API before
		// making another one (a new token restarts the agent).
		live, err := s.hosted.kube.CoreV1().Secrets(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{
			LabelSelector: labels.Set{hypershiftv1alpha1.NodePoolLabel: pool}.String(),
		})
		if err != nil {
			return fmt.Errorf("list bootstrap tokens: %w", err)
		}
		secrets := make([]*corev1.Secret, 0, len(live.Items))
		for i := range live.Items {
			secrets = append(secrets, &live.Items[i])
		}
		tok, rotateAt, ok = bootstrap.CurrentToken(secrets, pool, ttl, now)
	}
	if !ok {
		if tok, err = bootstrap.IssueToken(ctx, s.hosted.kube, bootstrap.TokenRequest{Pool: pool, Now: now, TTL: ttl}); err != nil {
			return err
		}
		rotateAt = tok.Expiration.Add(-ttl / 3)
		s.log.Info("bootstrap token created", "tokenID", tok.ID, "expires", tok.Expiration)
	}
	s.token = tok
	s.requeueBy(rotateAt.Sub(now))
	return nil
}

// approveServingCSRs approves the kubelet-serving CSRs of the pool's nodes
// that pass bootstrap.CheckServingCSR. Others stay pending for a human, as
// OpenShift's machine approver leaves them.
func (r *Reconciler) approveServingCSRs(ctx context.Context, s *scope) error {
	csrs, err := s.hosted.csrs.List(labels.Everything())
	if err != nil {
		return err
	}
	for _, csr := range csrs {
		if !bootstrap.Pending(csr) {
			continue
		}
		node := s.nodes[bootstrap.NodeNameOf(csr)]
		if node == nil {
			continue // not a node of this pool (yet)
		}
		if err := bootstrap.CheckServingCSR(csr, node); err != nil {
			s.log.Info("not approving kubelet serving CSR", "csr", csr.Name, "node", node.Name, "reason", err.Error())
			continue
		}
		if err := bootstrap.Approve(ctx, s.hosted.kube, csr, hypershiftv1alpha1.ServingCSRApprovedReason,
			"Requested by node "+node.Name+" of NodePool "+s.np.Name+" for its recorded addresses"); err != nil && !apierrors.IsConflict(err) {
			return err
		}
	}
	return nil
}

// reconcileMachines sizes the pool. A pool whose platform joins its
// machines with a token (Simulated: its agent) has one only while it has
// or wants machines; others (None) get no token from the controller
// (`hypershift create join-command` makes them).
func (r *Reconciler) reconcileMachines(ctx context.Context, s *scope) (ctrl.Result, error) {
	want, err := r.desiredReplicas(ctx, s)
	if err != nil {
		return ctrl.Result{}, err
	}
	s.want, s.sized = want, true
	idle, err := s.platform.idle(s, want)
	if err != nil {
		return ctrl.Result{}, err
	}
	if idle {
		s.machines = machineReport{}
		return ctrl.Result{}, r.retireAgent(ctx, s)
	}
	if s.platform.needsToken() {
		if err := r.ensureToken(ctx, s); err != nil {
			return ctrl.Result{}, err
		}
	}
	report, err := s.platform.reconcile(ctx, s, want)
	s.machines = report
	if err != nil {
		return ctrl.Result{}, err
	}
	if report.busy {
		s.requeueBy(requeueBusy)
	}
	return ctrl.Result{}, nil
}

// desiredReplicas is how many machines the pool should have.
func (r *Reconciler) desiredReplicas(ctx context.Context, s *scope) (int32, error) {
	switch {
	case s.deleting:
		return 0, nil
	case s.np.Spec.AutoScaling != nil:
		return r.autoscale(ctx, s)
	case s.np.Spec.Replicas != nil:
		return *s.np.Spec.Replicas, nil
	default:
		return s.platform.unsetReplicas(s), nil
	}
}

// reconcileNodes puts the pool's labels and taints on its Nodes: a kubelet
// may not set every label on its own Node (NodeRestriction), and nodes that
// joined before a change of the pool do not have it. Labels and taints are
// added or updated, never removed.
func (r *Reconciler) reconcileNodes(ctx context.Context, s *scope) (ctrl.Result, error) {
	for _, node := range s.nodes {
		patch := map[string]any{}
		missing := map[string]string{}
		for k, v := range s.np.Spec.NodeLabels {
			if node.Labels[k] != v {
				missing[k] = v
			}
		}
		if len(missing) > 0 {
			patch["metadata"] = map[string]any{"labels": missing}
		}
		if taints, changed := withTaints(node.Spec.Taints, s.np.Spec.Taints); changed {
			patch["spec"] = map[string]any{"taints": taints}
			patch["metadata"] = map[string]any{"labels": missing, "resourceVersion": node.ResourceVersion}
		}
		if len(patch) == 0 {
			continue
		}
		data, err := json.Marshal(patch)
		if err != nil {
			return ctrl.Result{}, err
		}
		if _, err := s.hosted.kube.CoreV1().Nodes().Patch(ctx, node.Name, types.MergePatchType, data, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return ctrl.Result{}, fmt.Errorf("label node %s: %w", node.Name, err)
		}
	}
	return ctrl.Result{}, nil
}

// withTaints adds the pool's taints to a node's, or updates their values.
func withTaints(have []corev1.Taint, want []hypershiftv1alpha1.Taint) ([]corev1.Taint, bool) {
	out := append([]corev1.Taint(nil), have...)
	changed := false
	for _, w := range want {
		found := false
		for i := range out {
			if out[i].Key == w.Key && out[i].Effect == w.Effect {
				found = true
				if out[i].Value != w.Value {
					out[i].Value = w.Value
					changed = true
				}
			}
		}
		if !found {
			out = append(out, corev1.Taint{Key: w.Key, Value: w.Value, Effect: w.Effect})
			changed = true
		}
	}
	return out, changed
}

// requeueBy asks for the next reconcile within d.
func (s *scope) requeueBy(d time.Duration) {
	if d <= 0 {
		d = time.Second
	}
	if s.requeueAfter == 0 || d < s.requeueAfter {
		s.requeueAfter = d
	}
}
