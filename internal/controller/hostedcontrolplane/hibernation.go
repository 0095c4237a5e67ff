package hostedcontrolplane

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/components"
	"hypershift.dev/internal/controller/conditions"
	"hypershift.dev/internal/endpointproxy"
	"hypershift.dev/internal/hostedref"
)

// Hibernation of a control plane, as the HostedCluster controller decided
// it in spec.hibernation:
//
//	running ──hibernated──▶ Hibernating (instances stop, etcd last)
//	   ▲                          │ none left (the endpoint proxy stays with idleAfter)
//	   │                          ▼
//	Available ◀── Resuming ◀── Hibernated ──hibernated=false──▶ Resuming
//
// With idleAfter the endpoint proxy fronts the API server, counts client
// activity and holds connections while the control plane sleeps; the
// activity watcher (activity.go) reads it and this controller reports it in
// status.activity, from which the HostedCluster controller decides.

// hibernated: the control plane is to sleep.
func hibernated(hcp *hypershiftv1alpha1.HostedControlPlane) bool {
	return hcp.Spec.Hibernation != nil && hcp.Spec.Hibernation.Hibernated
}

// reconcileHibernation reads the endpoint proxy's activity and, while the
// control plane sleeps, keeps only the proxy of the rendered instances and
// closes the connection to the hosted cluster.
func (r *Reconciler) reconcileHibernation(ctx context.Context, s *scope) (ctrl.Result, error) {
	hcp := s.hcp
	key := client.ObjectKeyFromObject(hcp)
	if hostedref.IdleWake(hcp) {
		r.recordActivity(ctx, s)
		r.activity().watch(key, s.healthURL(), hcp)
	} else {
		r.activity().forget(key)
		hcp.Status.Activity = nil
	}
	s.hibernated = hibernated(hcp)
	if !s.hibernated {
		return ctrl.Result{}, nil
	}
	// Nothing answers while it sleeps: close the connection rather than
	// let its health checks fail.
	r.hostedClusters().ext.Forget(key)
	if r.Runtime.Capabilities().InPlace {
		s.sleepInPlace = true // reconcileRuntime calls Sleep instead of Apply
		return ctrl.Result{}, nil
	}
	keep := s.specs[:0]
	for _, spec := range s.specs {
		if hostedref.IdleWake(hcp) && spec.Component == components.KubeAPIServerProxy {
			keep = append(keep, spec)
		}
	}
	s.specs = keep
	return ctrl.Result{}, nil
}

// sleepInPlace has a runtime that stops instances in place stop the
// control plane (the kube runtime scales its workloads to 0).
func (r *Reconciler) sleepInPlace(ctx context.Context, s *scope) error {
	if err := r.Runtime.Sleep(ctx, s.ref); err != nil {
		conditions.Set(&s.hcp.Status.Conditions, s.hcp.Generation, hypershiftv1alpha1.Degraded, true,
			hypershiftv1alpha1.RuntimeErrorReason, err.Error())
		return fmt.Errorf("hibernate: %w", err)
	}
	return nil
}

// healthURL is where the endpoint proxy reports its activity.
func (s *scope) healthURL() string {
	port := s.ports[components.ProxyHealthPort]
	if port == 0 {
		return ""
	}
	return "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) + "/activity"
}

// readActivity asks the endpoint proxy what it saw of clients.
func readActivity(ctx context.Context, url string) (endpointproxy.Activity, error) {
	var a endpointproxy.Activity
	if url == "" {
		return a, fmt.Errorf("no health port")
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return a, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return a, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return a, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return a, json.NewDecoder(resp.Body).Decode(&a)
}

// recordActivity reports the proxy's activity in status.activity. The
// latest time is kept: a restarted proxy starts with none.
func (r *Reconciler) recordActivity(ctx context.Context, s *scope) {
	st := s.hcp.Status.Activity
	if st == nil {
		st = &hypershiftv1alpha1.ControlPlaneActivity{}
		s.hcp.Status.Activity = st
	}
	// Known before the proxy answers: once this pass writes it, the
	// operator's connections go there (hostedref.OperatorKubeconfig).
	if port := s.ports[components.ProxyInternalPort]; port != 0 {
		st.InternalEndpoint = &hypershiftv1alpha1.APIEndpoint{Host: "127.0.0.1", Port: int32(port)} //nolint:gosec // ports fit in int32
	}
	a, err := readActivity(ctx, s.healthURL())
	if err != nil {
		return // the proxy is starting; the watcher looks again
	}
	if !a.LastActivity.IsZero() && (st.LastActivityTime == nil || a.LastActivity.After(st.LastActivityTime.Time)) {
		t := metav1.NewTime(a.LastActivity)
		st.LastActivityTime = &t
	}
	st.WaitingConnections = a.Waiting
}

// updateHibernatedStatus reports a sleeping control plane: Hibernated once
// no instance but the endpoint proxy is left, not Available.
func (r *Reconciler) updateHibernatedStatus(s *scope) {
	hcp := s.hcp
	statuses := componentStatuses(r.Runtime.Status(s.ref))
	hcp.Status.Components = statuses
	hcp.Status.Ready = false
	clusterAPIContract(&hcp.Status, false)
	var left []string
	for _, st := range statuses {
		if st.Component != components.KubeAPIServerProxy && st.Phase != hypershiftv1alpha1.ComponentStopped {
			left = append(left, st.Name)
		}
	}
	reason := hcp.Spec.Hibernation.Reason
	if reason == "" {
		reason = hypershiftv1alpha1.HibernatedReason
	}
	set := func(typ hypershiftv1alpha1.ConditionType, status bool, reason hypershiftv1alpha1.ConditionReason, msg string) {
		conditions.Set(&hcp.Status.Conditions, hcp.Generation, typ, status, reason, msg)
	}
	why := fmt.Sprintf("The control plane is hibernated (%s)", reason)
	if hostedref.IdleWake(hcp) {
		why += "; the next request to its endpoint wakes it"
	}
	if len(left) > 0 {
		set(hypershiftv1alpha1.Hibernated, false, hypershiftv1alpha1.HibernatingReason, "Stopping: "+joinMessages(left))
		s.requeueAfter(time.Second)
	} else {
		set(hypershiftv1alpha1.Hibernated, true, reason, why)
	}
	set(hypershiftv1alpha1.Available, false, hypershiftv1alpha1.HibernatedReason, why)
	set(hypershiftv1alpha1.Progressing, false, hypershiftv1alpha1.HibernatedReason, why)
	set(hypershiftv1alpha1.Degraded, false, hypershiftv1alpha1.AsExpectedReason, "No component is failing")
	set(hypershiftv1alpha1.EtcdAvailable, false, hypershiftv1alpha1.HibernatedReason, why)
	set(hypershiftv1alpha1.KubeAPIServerAvailable, false, hypershiftv1alpha1.HibernatedReason, why)
	set(hypershiftv1alpha1.DataPlaneAvailable, false, hypershiftv1alpha1.HibernatedReason, why)
	setHibernatedVersionStatus(hcp)
	hcp.Status.ObservedGeneration = hcp.Generation
}

// setAwakeCondition reports a running control plane: Resuming until it is
// Available again after a sleep.
func setAwakeCondition(hcp *hypershiftv1alpha1.HostedControlPlane, available bool) {
	was := meta.FindStatusCondition(hcp.Status.Conditions, hypershiftv1alpha1.Hibernated.String())
	resuming := was != nil && (was.Status == metav1.ConditionTrue ||
		was.Reason == hypershiftv1alpha1.HibernatingReason.String() || was.Reason == hypershiftv1alpha1.ResumingReason.String())
	if resuming && !available {
		conditions.Set(&hcp.Status.Conditions, hcp.Generation, hypershiftv1alpha1.Hibernated, false,
			hypershiftv1alpha1.ResumingReason, "The control plane is starting again")
		return
	}
	conditions.Set(&hcp.Status.Conditions, hcp.Generation, hypershiftv1alpha1.Hibernated, false,
		hypershiftv1alpha1.NotHibernatedReason, "The control plane runs")
}
