package hostedcontrolplane

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/components"
	"hypershift.dev/internal/controller/conditions"
	"hypershift.dev/internal/runtime"
)

// derived is the status a control plane's component states give.
type derived struct {
	// conditions are set with conditions.Apply, which keeps the transition
	// time of those that do not change.
	conditions []metav1.Condition
	// available: etcd has quorum and an API server (and, when replicated,
	// the endpoint proxy) is ready.
	available bool
	// allRunning: every component runs.
	allRunning bool
}

// deriveStatus derives EtcdAvailable, KubeAPIServerAvailable, Available,
// Progressing and Degraded from the components' states. A paused control
// plane reports only that it is paused: nothing it sees while paused is
// acted on, so nothing else changes.
//
// etcd serves while a majority of its members runs; the API while one API
// server runs and, when replicated, the endpoint proxy in front of them.
//
// waiting names what else is still coming (objects of the hosted cluster
// not applied yet): it keeps Progressing True.
func deriveStatus(statuses []hypershiftv1alpha1.ComponentStatus, paused bool, pausedUntil *string, waiting ...string) derived {
	if paused {
		return derived{conditions: []metav1.Condition{conditions.Paused(true, pausedUntil)}}
	}
	byComponent := map[string][]hypershiftv1alpha1.ComponentStatus{}
	var notRunning, degraded []string
	for _, s := range statuses {
		byComponent[s.Component] = append(byComponent[s.Component], s)
		if s.Phase != hypershiftv1alpha1.ComponentRunning {
			notRunning = append(notRunning, fmt.Sprintf("%s is %s", s.Name, s.Phase))
		}
		if s.Phase == hypershiftv1alpha1.ComponentBackOff || s.Phase == hypershiftv1alpha1.ComponentUnhealthy {
			degraded = append(degraded, fmt.Sprintf("%s is %s (restarts %d, last exit %q): %s", s.Name, s.Phase, s.Restarts, s.LastExitReason, s.Message))
		}
	}
	var out derived
	etcdMembers := byComponent[components.Etcd]
	etcd, etcdCond := componentCondition(hypershiftv1alpha1.EtcdAvailable, etcdMembers, len(etcdMembers)/2+1)
	apiInstances := append(byComponent[components.KubeAPIServer], byComponent[components.KubeControlPlane]...)
	api, apiCond := componentCondition(hypershiftv1alpha1.KubeAPIServerAvailable, apiInstances, 1)
	if proxy, ok := byComponent[components.KubeAPIServerProxy]; ok && api {
		api, apiCond = componentCondition(hypershiftv1alpha1.KubeAPIServerAvailable, proxy, 1)
	}
	out.conditions = append(out.conditions, etcdCond, apiCond)
	out.available = etcd && api
	out.allRunning = len(notRunning) == 0
	if out.available {
		out.conditions = append(out.conditions, condition(hypershiftv1alpha1.Available, true,
			hypershiftv1alpha1.AsExpectedReason, "The hosted API server is available"))
	} else {
		out.conditions = append(out.conditions, condition(hypershiftv1alpha1.Available, false,
			hypershiftv1alpha1.WaitingForComponentsReason, "Waiting for etcd and kube-apiserver to be ready"))
	}
	switch {
	case !out.allRunning:
		out.conditions = append(out.conditions, condition(hypershiftv1alpha1.Progressing, true,
			hypershiftv1alpha1.WaitingForComponentsReason, joinMessages(append(notRunning, waiting...))))
	case len(waiting) > 0:
		out.conditions = append(out.conditions, condition(hypershiftv1alpha1.Progressing, true,
			hypershiftv1alpha1.WaitingForComponentsReason, joinMessages(waiting)))
	default:
		out.conditions = append(out.conditions, condition(hypershiftv1alpha1.Progressing, false,
			hypershiftv1alpha1.ComponentsReadyReason, "All components are running"))
	}
	if len(degraded) > 0 {
		out.conditions = append(out.conditions, condition(hypershiftv1alpha1.Degraded, true,
			hypershiftv1alpha1.ComponentNotReadyReason, joinMessages(degraded)))
	} else {
		out.conditions = append(out.conditions, condition(hypershiftv1alpha1.Degraded, false,
			hypershiftv1alpha1.AsExpectedReason, "No component is failing"))
	}
	return out
}

// componentCondition is typ True when at least need of the instances run,
// and says which do not otherwise.
func componentCondition(typ hypershiftv1alpha1.ConditionType, instances []hypershiftv1alpha1.ComponentStatus, need int) (bool, metav1.Condition) {
	var running, other []string
	for _, s := range instances {
		if s.Phase == hypershiftv1alpha1.ComponentRunning {
			running = append(running, s.Name)
			continue
		}
		msg := s.Name + " is " + string(s.Phase)
		if s.Message != "" {
			msg += ": " + s.Message
		}
		other = append(other, msg)
	}
	if len(instances) > 0 && len(running) >= need {
		return true, condition(typ, true, hypershiftv1alpha1.AsExpectedReason, strings.Join(running, ", ")+" running")
	}
	msg := "not started yet"
	if len(other) > 0 {
		msg = strings.Join(other, "; ")
	}
	return false, condition(typ, false, hypershiftv1alpha1.ComponentNotReadyReason, msg)
}

func condition(typ hypershiftv1alpha1.ConditionType, status bool, reason hypershiftv1alpha1.ConditionReason, message string) metav1.Condition {
	s := metav1.ConditionFalse
	if status {
		s = metav1.ConditionTrue
	}
	return metav1.Condition{Type: typ.String(), Status: s, Reason: reason.String(), Message: message}
}

// updateStatus reports the runtime's view and returns what it derived.
func (r *Reconciler) updateStatus(hcp *hypershiftv1alpha1.HostedControlPlane, ref runtime.ControlPlaneRef, waiting []string) derived {
	statuses := componentStatuses(r.Runtime.Status(ref))
	hcp.Status.Components = statuses
	d := deriveStatus(statuses, false, nil, waiting...)
	conditions.Apply(&hcp.Status.Conditions, hcp.Generation, d.conditions...)
	hcp.Status.Ready = d.available
	clusterAPIContract(&hcp.Status, d.available)
	return d
}

// clusterAPIContract sets what Cluster API reads of a control plane (its
// v1beta2 control-plane contract; the CRD carries the contract label):
// the control plane is managed outside the cluster's Machines, and it is
// initialized from the first time it was Available on — never set back,
// so a control plane that sleeps or restarts does not stop Cluster API's
// Machines. Its Available condition and status.version are already the
// contract's.
func clusterAPIContract(st *hypershiftv1alpha1.HostedControlPlaneStatus, available bool) {
	st.ExternalManagedControlPlane = ptr.To(true)
	if available {
		st.Initialization.ControlPlaneInitialized = ptr.To(true)
	}
}

func joinMessages(msgs []string) string {
	out := strings.Join(msgs, "; ")
	if len(out) > 32000 {
		out = out[:32000]
	}
	return out
}

// componentStatuses converts the runtime's view of each instance to the
// API's.
func componentStatuses(in []runtime.InstanceStatus) []hypershiftv1alpha1.ComponentStatus {
	out := make([]hypershiftv1alpha1.ComponentStatus, 0, len(in))
	for _, s := range in {
		c := hypershiftv1alpha1.ComponentStatus{
			Name:           s.Name,
			Component:      s.Component,
			Phase:          hypershiftv1alpha1.ComponentPhase(s.Phase),
			PID:            int32(s.PID),      //nolint:gosec // pids fit in int32
			Restarts:       int32(s.Restarts), //nolint:gosec // restart counts fit in int32
			LastExitReason: s.LastExitReason,
			Message:        s.Message,
		}
		if isVersioned(s.Component) {
			c.Version = instanceVersion(s)
		}
		if !s.StartedAt.IsZero() {
			t := metav1.NewTime(s.StartedAt)
			c.StartedAt = &t
		}
		out = append(out, c)
	}
	return out
}
