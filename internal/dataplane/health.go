package dataplane

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
)

// Observed is the hosted cluster as the controller saw it in one pass.
type Observed struct {
	// Objects are the rendered objects as the API server returned them
	// from the apply, status included, in the order rendered.
	Objects []client.Object
	// ReadyNodes counts the hosted cluster's Ready nodes.
	ReadyNodes int
	// NotApplied says which objects were left out of this pass and why
	// (the Konnectivity agent before its certificates exist); empty when
	// none were.
	NotApplied string
}

// Health reports each applied object's state and derives the
// DataPlaneAvailable condition: True when every object exists as applied
// and its workload has every replica ready. A cluster without Ready nodes
// says so (reason NoNodes): its pods are Pending, not failing.
func Health(o Observed) ([]hypershiftv1alpha1.DataPlaneObjectStatus, metav1.Condition) {
	statuses := make([]hypershiftv1alpha1.DataPlaneObjectStatus, 0, len(o.Objects))
	var unhealthy []string
	for _, obj := range o.Objects {
		s := objectHealth(obj)
		if !s.Healthy {
			unhealthy = append(unhealthy, describe(s)+": "+s.Message)
		}
		statuses = append(statuses, s)
	}
	cond := metav1.Condition{Type: hypershiftv1alpha1.DataPlaneAvailable.String()}
	switch {
	case len(unhealthy) > 0 && o.ReadyNodes == 0:
		cond.Status, cond.Reason = metav1.ConditionFalse, hypershiftv1alpha1.NoNodesReason.String()
		cond.Message = "The hosted cluster has no Ready node: the data plane's pods are Pending until one joins (" +
			strings.Join(unhealthy, "; ") + ")"
	case len(unhealthy) > 0:
		cond.Status, cond.Reason = metav1.ConditionFalse, hypershiftv1alpha1.DataPlaneNotReadyReason.String()
		cond.Message = strings.Join(unhealthy, "; ")
	default:
		cond.Status, cond.Reason = metav1.ConditionTrue, hypershiftv1alpha1.AsExpectedReason.String()
		cond.Message = fmt.Sprintf("All %d objects in the hosted cluster are as applied and ready", len(o.Objects))
	}
	if o.NotApplied != "" {
		cond.Message += "; not applied yet: " + o.NotApplied
	}
	return statuses, cond
}

func objectHealth(obj client.Object) hypershiftv1alpha1.DataPlaneObjectStatus {
	s := hypershiftv1alpha1.DataPlaneObjectStatus{
		Kind:      obj.GetObjectKind().GroupVersionKind().Kind,
		Namespace: obj.GetNamespace(),
		Name:      obj.GetName(),
		Healthy:   true,
	}
	switch o := obj.(type) {
	case *appsv1.Deployment:
		s.Kind = "Deployment"
		want := int32(1)
		if o.Spec.Replicas != nil {
			want = *o.Spec.Replicas
		}
		st := o.Status
		s.Ready = fmt.Sprintf("%d/%d", st.AvailableReplicas, want)
		switch {
		case st.ObservedGeneration < o.Generation:
			s.Healthy, s.Message = false, "the deployment controller has not seen the latest spec yet"
		case st.UpdatedReplicas < want || st.AvailableReplicas < want:
			s.Healthy = false
			s.Message = fmt.Sprintf("%d of %d replicas available (%d updated)", st.AvailableReplicas, want, st.UpdatedReplicas)
		}
	case *appsv1.DaemonSet:
		s.Kind = "DaemonSet"
		st := o.Status
		s.Ready = fmt.Sprintf("%d/%d", st.NumberReady, st.DesiredNumberScheduled)
		switch {
		case st.ObservedGeneration < o.Generation:
			s.Healthy, s.Message = false, "the daemon set controller has not seen the latest spec yet"
		case st.DesiredNumberScheduled == 0:
			s.Healthy, s.Message = false, "no node to run on"
		case st.NumberReady < st.DesiredNumberScheduled || st.UpdatedNumberScheduled < st.DesiredNumberScheduled:
			s.Healthy = false
			s.Message = fmt.Sprintf("%d of %d pods ready (%d updated)", st.NumberReady, st.DesiredNumberScheduled, st.UpdatedNumberScheduled)
		}
	}
	return s
}

func describe(s hypershiftv1alpha1.DataPlaneObjectStatus) string {
	if s.Namespace == "" {
		return s.Kind + " " + s.Name
	}
	return s.Kind + " " + s.Namespace + "/" + s.Name
}
