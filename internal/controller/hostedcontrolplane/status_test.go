package hostedcontrolplane

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/components"
)

func instance(name, component string, phase hypershiftv1alpha1.ComponentPhase) hypershiftv1alpha1.ComponentStatus {
	return hypershiftv1alpha1.ComponentStatus{Name: name, Component: component, Phase: phase}
}

// singleReplica is a SingleReplica control plane with every component in
// the given phase, changed by the edits.
func singleReplica(edits ...func([]hypershiftv1alpha1.ComponentStatus)) []hypershiftv1alpha1.ComponentStatus {
	out := []hypershiftv1alpha1.ComponentStatus{
		instance("etcd-0", components.Etcd, hypershiftv1alpha1.ComponentRunning),
		instance("kube-apiserver", components.KubeAPIServer, hypershiftv1alpha1.ComponentRunning),
		instance("kube-controller-manager", components.KubeControllerManager, hypershiftv1alpha1.ComponentRunning),
		instance("kube-scheduler", components.KubeScheduler, hypershiftv1alpha1.ComponentRunning),
	}
	for _, e := range edits {
		e(out)
	}
	return out
}

// highlyAvailable is a HighlyAvailable control plane: three etcd members,
// two API servers behind the endpoint proxy.
func highlyAvailable(edits ...func([]hypershiftv1alpha1.ComponentStatus)) []hypershiftv1alpha1.ComponentStatus {
	out := []hypershiftv1alpha1.ComponentStatus{
		instance("etcd-0", components.Etcd, hypershiftv1alpha1.ComponentRunning),
		instance("etcd-1", components.Etcd, hypershiftv1alpha1.ComponentRunning),
		instance("etcd-2", components.Etcd, hypershiftv1alpha1.ComponentRunning),
		instance("kube-apiserver-0", components.KubeAPIServer, hypershiftv1alpha1.ComponentRunning),
		instance("kube-apiserver-1", components.KubeAPIServer, hypershiftv1alpha1.ComponentRunning),
		instance("kube-apiserver-proxy", components.KubeAPIServerProxy, hypershiftv1alpha1.ComponentRunning),
		instance("kube-controller-manager-0", components.KubeControllerManager, hypershiftv1alpha1.ComponentRunning),
		instance("kube-controller-manager-1", components.KubeControllerManager, hypershiftv1alpha1.ComponentRunning),
		instance("kube-scheduler-0", components.KubeScheduler, hypershiftv1alpha1.ComponentRunning),
		instance("kube-scheduler-1", components.KubeScheduler, hypershiftv1alpha1.ComponentRunning),
	}
	for _, e := range edits {
		e(out)
	}
	return out
}

// crashing puts instance i into back-off after restarts exits.
func crashing(i int, restarts int32, exit, lastLog string) func([]hypershiftv1alpha1.ComponentStatus) {
	return func(s []hypershiftv1alpha1.ComponentStatus) {
		s[i].Phase = hypershiftv1alpha1.ComponentBackOff
		s[i].Restarts = restarts
		s[i].LastExitReason = exit
		s[i].Message = lastLog
	}
}

func inPhase(i int, phase hypershiftv1alpha1.ComponentPhase, msg string) func([]hypershiftv1alpha1.ComponentStatus) {
	return func(s []hypershiftv1alpha1.ComponentStatus) {
		s[i].Phase = phase
		s[i].Message = msg
	}
}

type want struct {
	status  metav1.ConditionStatus
	reason  hypershiftv1alpha1.ConditionReason
	message string // a part of the message
}

func TestDeriveStatus(t *testing.T) {
	started := metav1.NewTime(time.Now().Add(-time.Hour))
	const (
		avail    = hypershiftv1alpha1.Available
		progress = hypershiftv1alpha1.Progressing
		degraded = hypershiftv1alpha1.Degraded
		etcd     = hypershiftv1alpha1.EtcdAvailable
		api      = hypershiftv1alpha1.KubeAPIServerAvailable
	)
	allGood := map[hypershiftv1alpha1.ConditionType]want{
		avail:    {metav1.ConditionTrue, hypershiftv1alpha1.AsExpectedReason, "available"},
		progress: {metav1.ConditionFalse, hypershiftv1alpha1.ComponentsReadyReason, "All components are running"},
		degraded: {metav1.ConditionFalse, hypershiftv1alpha1.AsExpectedReason, "No component is failing"},
	}
	tests := []struct {
		name        string
		components  []hypershiftv1alpha1.ComponentStatus
		paused      bool
		waiting     []string
		want        map[hypershiftv1alpha1.ConditionType]want
		available   bool
		allRunning  bool
		onlyPausedC bool
	}{
		{
			name: "all running", components: singleReplica(), available: true, allRunning: true,
			want: merge(allGood, map[hypershiftv1alpha1.ConditionType]want{
				etcd: {metav1.ConditionTrue, hypershiftv1alpha1.AsExpectedReason, "etcd-0 running"},
				api:  {metav1.ConditionTrue, hypershiftv1alpha1.AsExpectedReason, "kube-apiserver running"},
			}),
		},
		{
			name: "HA all running", components: highlyAvailable(), available: true, allRunning: true,
			want: merge(allGood, map[hypershiftv1alpha1.ConditionType]want{
				etcd: {metav1.ConditionTrue, hypershiftv1alpha1.AsExpectedReason, "etcd-0, etcd-1, etcd-2 running"},
				api:  {metav1.ConditionTrue, hypershiftv1alpha1.AsExpectedReason, "kube-apiserver-proxy running"},
			}),
		},
		{
			name:       "HA one etcd member down keeps quorum",
			components: highlyAvailable(crashing(2, 3, "exit status 1", "member lost")), available: true,
			want: map[hypershiftv1alpha1.ConditionType]want{
				etcd:     {metav1.ConditionTrue, hypershiftv1alpha1.AsExpectedReason, "etcd-0, etcd-1 running"},
				avail:    {metav1.ConditionTrue, hypershiftv1alpha1.AsExpectedReason, "available"},
				progress: {metav1.ConditionTrue, hypershiftv1alpha1.WaitingForComponentsReason, "etcd-2 is BackOff"},
				degraded: {metav1.ConditionTrue, hypershiftv1alpha1.ComponentNotReadyReason, `etcd-2 is BackOff (restarts 3, last exit "exit status 1"): member lost`},
			},
		},
		{
			name: "HA two etcd members down lose quorum",
			components: highlyAvailable(
				crashing(1, 1, "signal: killed", ""),
				inPhase(2, hypershiftv1alpha1.ComponentStopped, "")),
			want: map[hypershiftv1alpha1.ConditionType]want{
				etcd:     {metav1.ConditionFalse, hypershiftv1alpha1.ComponentNotReadyReason, "etcd-1 is BackOff; etcd-2 is Stopped"},
				avail:    {metav1.ConditionFalse, hypershiftv1alpha1.WaitingForComponentsReason, "Waiting for etcd"},
				progress: {metav1.ConditionTrue, hypershiftv1alpha1.WaitingForComponentsReason, "etcd-1 is BackOff; etcd-2 is Stopped"},
				degraded: {metav1.ConditionTrue, hypershiftv1alpha1.ComponentNotReadyReason, `etcd-1 is BackOff (restarts 1, last exit "signal: killed")`},
			},
		},
		{
			name:       "apiserver down",
			components: singleReplica(inPhase(1, hypershiftv1alpha1.ComponentUnhealthy, "readyz: etcd failed")),
			want: map[hypershiftv1alpha1.ConditionType]want{
				etcd:     {metav1.ConditionTrue, hypershiftv1alpha1.AsExpectedReason, "etcd-0 running"},
				api:      {metav1.ConditionFalse, hypershiftv1alpha1.ComponentNotReadyReason, "kube-apiserver is Unhealthy: readyz: etcd failed"},
				avail:    {metav1.ConditionFalse, hypershiftv1alpha1.WaitingForComponentsReason, "kube-apiserver"},
				progress: {metav1.ConditionTrue, hypershiftv1alpha1.WaitingForComponentsReason, "kube-apiserver is Unhealthy"},
				degraded: {metav1.ConditionTrue, hypershiftv1alpha1.ComponentNotReadyReason, "kube-apiserver is Unhealthy"},
			},
		},
		{
			name:       "proxy not ready",
			components: highlyAvailable(inPhase(5, hypershiftv1alpha1.ComponentStarting, "")),
			want: map[hypershiftv1alpha1.ConditionType]want{
				etcd:     {metav1.ConditionTrue, hypershiftv1alpha1.AsExpectedReason, "etcd-0, etcd-1, etcd-2 running"},
				api:      {metav1.ConditionFalse, hypershiftv1alpha1.ComponentNotReadyReason, "kube-apiserver-proxy is Starting"},
				avail:    {metav1.ConditionFalse, hypershiftv1alpha1.WaitingForComponentsReason, "Waiting"},
				progress: {metav1.ConditionTrue, hypershiftv1alpha1.WaitingForComponentsReason, "kube-apiserver-proxy is Starting"},
				degraded: {metav1.ConditionFalse, hypershiftv1alpha1.AsExpectedReason, "No component is failing"},
			},
		},
		{
			name:       "a component crash-looping",
			components: singleReplica(crashing(2, 7, "exit status 255", "F1123 unable to load client CA")),
			available:  true,
			want: map[hypershiftv1alpha1.ConditionType]want{
				api:      {metav1.ConditionTrue, hypershiftv1alpha1.AsExpectedReason, "kube-apiserver running"},
				avail:    {metav1.ConditionTrue, hypershiftv1alpha1.AsExpectedReason, "available"},
				progress: {metav1.ConditionTrue, hypershiftv1alpha1.WaitingForComponentsReason, "kube-controller-manager is BackOff"},
				degraded: {
					metav1.ConditionTrue, hypershiftv1alpha1.ComponentNotReadyReason,
					`kube-controller-manager is BackOff (restarts 7, last exit "exit status 255"): F1123 unable to load client CA`,
				},
			},
		},
		{
			// A new operator adopts the processes an earlier one left:
			// Running since they started, with their pid; the control plane
			// never stopped serving.
			name: "adopted components",
			components: singleReplica(func(s []hypershiftv1alpha1.ComponentStatus) {
				for i := range s {
					s[i].PID = int32(1000 + i)
					s[i].StartedAt = &started
				}
			}),
			available: true, allRunning: true,
			want: merge(allGood, map[hypershiftv1alpha1.ConditionType]want{
				etcd: {metav1.ConditionTrue, hypershiftv1alpha1.AsExpectedReason, "etcd-0 running"},
			}),
		},
		{
			name: "adopted single-process control plane",
			components: []hypershiftv1alpha1.ComponentStatus{
				{Name: "etcd-0", Component: components.Etcd, Phase: hypershiftv1alpha1.ComponentRunning, PID: 10, StartedAt: &started},
				{Name: "kube-control-plane", Component: components.KubeControlPlane, Phase: hypershiftv1alpha1.ComponentRunning, PID: 11, StartedAt: &started},
			},
			available: true, allRunning: true,
			want: merge(allGood, map[hypershiftv1alpha1.ConditionType]want{
				api: {metav1.ConditionTrue, hypershiftv1alpha1.AsExpectedReason, "kube-control-plane running"},
			}),
		},
		{
			// Every component runs, but objects of the hosted cluster
			// wait for inputs that are still coming.
			name: "all running, data plane waiting", components: singleReplica(), available: true, allRunning: true,
			waiting: []string{"the Konnectivity agent: Secret konnectivity-ca does not exist yet"},
			want: merge(allGood, map[hypershiftv1alpha1.ConditionType]want{
				progress: {metav1.ConditionTrue, hypershiftv1alpha1.WaitingForComponentsReason, "the Konnectivity agent: Secret konnectivity-ca"},
			}),
		},
		{
			name:       "nothing started yet",
			components: nil,
			want: map[hypershiftv1alpha1.ConditionType]want{
				etcd:  {metav1.ConditionFalse, hypershiftv1alpha1.ComponentNotReadyReason, "not started yet"},
				api:   {metav1.ConditionFalse, hypershiftv1alpha1.ComponentNotReadyReason, "not started yet"},
				avail: {metav1.ConditionFalse, hypershiftv1alpha1.WaitingForComponentsReason, "Waiting"},
			},
			allRunning: true,
		},
		{
			// Paused: what the components do is not acted on, so only the
			// pause is reported, even with every component down.
			name:       "paused",
			components: singleReplica(crashing(0, 9, "exit status 1", ""), crashing(1, 9, "exit status 1", "")),
			paused:     true, onlyPausedC: true,
			want: map[hypershiftv1alpha1.ConditionType]want{
				hypershiftv1alpha1.ReconciliationActive: {metav1.ConditionFalse, hypershiftv1alpha1.ReconciliationPausedReason, "paused until true"},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := deriveStatus(tc.components, tc.paused, ptr.To("true"), tc.waiting...)
			if got.available != tc.available || got.allRunning != tc.allRunning {
				t.Errorf("available=%v allRunning=%v, want %v and %v", got.available, got.allRunning, tc.available, tc.allRunning)
			}
			for typ, w := range tc.want {
				c := meta.FindStatusCondition(got.conditions, typ.String())
				if c == nil {
					t.Errorf("no %s condition in %+v", typ, got.conditions)
					continue
				}
				if c.Status != w.status || c.Reason != w.reason.String() || !strings.Contains(c.Message, w.message) {
					t.Errorf("%s = %s/%s %q, want %s/%s containing %q", typ, c.Status, c.Reason, c.Message, w.status, w.reason, w.message)
				}
			}
			if tc.onlyPausedC && len(got.conditions) != 1 {
				t.Errorf("paused control plane changes %d conditions, want only %s: %+v", len(got.conditions), hypershiftv1alpha1.ReconciliationActive, got.conditions)
			}
			if !tc.paused && len(got.conditions) != 5 {
				t.Errorf("%d conditions, want EtcdAvailable, KubeAPIServerAvailable, Available, Progressing, Degraded: %+v", len(got.conditions), got.conditions)
			}
		})
	}
}

func merge(maps ...map[hypershiftv1alpha1.ConditionType]want) map[hypershiftv1alpha1.ConditionType]want {
	out := map[hypershiftv1alpha1.ConditionType]want{}
	for _, m := range maps {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// Cluster API reads a HostedControlPlane as an externally managed control
// plane, initialized from the first time it was Available on: a control
// plane that sleeps, is fenced or fails later stays initialized, so Cluster
// API does not treat its Machines as waiting for a first control plane.
func TestClusterAPIContract(t *testing.T) {
	st := &hypershiftv1alpha1.HostedControlPlaneStatus{}
	for _, step := range []struct {
		available       bool
		wantInitialized bool
	}{
		{available: false, wantInitialized: false},
		{available: true, wantInitialized: true},
		{available: false, wantInitialized: true},
	} {
		clusterAPIContract(st, step.available)
		if st.ExternalManagedControlPlane == nil || !*st.ExternalManagedControlPlane {
			t.Errorf("available %v: externalManagedControlPlane %v, want true", step.available, st.ExternalManagedControlPlane)
		}
		got := st.Initialization.ControlPlaneInitialized != nil && *st.Initialization.ControlPlaneInitialized
		if got != step.wantInitialized {
			t.Errorf("available %v: controlPlaneInitialized %v, want %v", step.available, got, step.wantInitialized)
		}
	}
}
