package hostedcontrolplane

import (
	"fmt"
	"testing"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/controller/conditions"
	"hypershift.dev/internal/runtime"
	"hypershift.dev/internal/version"
)

func TestRecordVersion(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	t1 := t0.Add(time.Minute)
	completed := func(v string, at time.Time) hypershiftv1alpha1.VersionHistory {
		ts := metav1.NewTime(at)
		return hypershiftv1alpha1.VersionHistory{Version: v, State: hypershiftv1alpha1.CompletedVersion, StartedTime: ts, CompletionTime: &ts}
	}
	partial := func(v string, at time.Time) hypershiftv1alpha1.VersionHistory {
		return hypershiftv1alpha1.VersionHistory{Version: v, State: hypershiftv1alpha1.PartialVersion, StartedTime: metav1.NewTime(at)}
	}
	long := make([]hypershiftv1alpha1.VersionHistory, 0, hypershiftv1alpha1.MaxVersionHistory)
	for i := range hypershiftv1alpha1.MaxVersionHistory {
		long = append(long, completed(fmt.Sprintf("v1.%d.0", 36-i), t0))
	}
	tests := []struct {
		name                 string
		in                   []hypershiftv1alpha1.VersionHistory
		version              string
		done                 bool
		want                 []hypershiftv1alpha1.VersionHistory
		wantStart, wantCompl bool
	}{
		{name: "creation starts a Partial entry", version: "v1.37.1", want: []hypershiftv1alpha1.VersionHistory{partial("v1.37.1", t1)}, wantStart: true},
		{name: "created and done at once", version: "v1.37.1", done: true, want: []hypershiftv1alpha1.VersionHistory{completed("v1.37.1", t1)}, wantStart: true, wantCompl: true},
		{
			name: "in progress: unchanged", in: []hypershiftv1alpha1.VersionHistory{partial("v1.37.1", t0), completed("v1.36.3", t0)}, version: "v1.37.1",
			want: []hypershiftv1alpha1.VersionHistory{partial("v1.37.1", t0), completed("v1.36.3", t0)},
		},
		{
			name: "upgrade starts", in: []hypershiftv1alpha1.VersionHistory{completed("v1.36.3", t0)}, version: "v1.37.1",
			want: []hypershiftv1alpha1.VersionHistory{partial("v1.37.1", t1), completed("v1.36.3", t0)}, wantStart: true,
		},
		{
			name: "upgrade completes", in: []hypershiftv1alpha1.VersionHistory{partial("v1.37.1", t0), completed("v1.36.3", t0)}, version: "v1.37.1", done: true,
			want:      []hypershiftv1alpha1.VersionHistory{{Version: "v1.37.1", State: hypershiftv1alpha1.CompletedVersion, StartedTime: metav1.NewTime(t0), CompletionTime: ptrTime(t1)}, completed("v1.36.3", t0)},
			wantCompl: true,
		},
		{
			name: "completed stays as it was", in: []hypershiftv1alpha1.VersionHistory{completed("v1.37.1", t0)}, version: "v1.37.1", done: true,
			want: []hypershiftv1alpha1.VersionHistory{completed("v1.37.1", t0)},
		},
		{
			name: "a superseded rollout stays Partial", in: []hypershiftv1alpha1.VersionHistory{partial("v1.37.1", t0), completed("v1.36.3", t0)}, version: "v1.37.2",
			want: []hypershiftv1alpha1.VersionHistory{partial("v1.37.2", t1), partial("v1.37.1", t0), completed("v1.36.3", t0)}, wantStart: true,
		},
		{
			name: "capped at ten", in: long, version: "v1.37.1",
			want: append([]hypershiftv1alpha1.VersionHistory{partial("v1.37.1", t1)}, long[:hypershiftv1alpha1.MaxVersionHistory-1]...), wantStart: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, started, compl := recordVersion(tt.in, tt.version, tt.done, t1)
			if !apiequality.Semantic.DeepEqual(got, tt.want) || started != tt.wantStart || compl != tt.wantCompl {
				t.Errorf("got %v (started %v, completed %v)\nwant %v (started %v, completed %v)", got, started, compl, tt.want, tt.wantStart, tt.wantCompl)
			}
		})
	}
}

func ptrTime(t time.Time) *metav1.Time {
	m := metav1.NewTime(t)
	return &m
}

// TestInstanceVersion: an instance without a known process has no version
// (it must not pass for the compiled-in release); a started one with an
// empty version runs the compiled-in release.
func TestInstanceVersion(t *testing.T) {
	if v := instanceVersion(runtime.InstanceStatus{Phase: runtime.Stopped}); v != "" {
		t.Errorf("never started: %q, want none", v)
	}
	if v := instanceVersion(runtime.InstanceStatus{Phase: runtime.Running, PID: 7}); v != version.KubernetesVersion {
		t.Errorf("started from a spec without a version: %q, want %s", v, version.KubernetesVersion)
	}
	if v := instanceVersion(runtime.InstanceStatus{Phase: runtime.Starting, StartedAt: time.Now(), Version: "v1.36.3"}); v != "v1.36.3" {
		t.Errorf("a pod started at v1.36.3: %q", v)
	}
}

// TestUpdateVersionStatus: the condition, status.version and the events of
// a rollout's passes — an upgrade's start, its progress, its completion —
// and a creation, which records history but is no upgrade.
func TestUpdateVersionStatus(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	done := metav1.NewTime(t0)
	upgraded := []hypershiftv1alpha1.VersionHistory{{Version: "v1.36.3", State: hypershiftv1alpha1.CompletedVersion, StartedTime: done, CompletionTime: &done}}
	tests := []struct {
		name        string
		history     []hypershiftv1alpha1.VersionHistory
		plan        rolloutPlan
		wantVersion string
		wantCond    string
		wantEvents  []string
	}{
		{
			name: "creation under way", plan: rolloutPlan{Rolling: "kube-apiserver", Moved: 2, Total: 3},
			wantCond: "True/Installing: Installing v1.37.1: 2 of 3 instances running, waiting for kube-apiserver",
		},
		{
			name: "creation done", plan: rolloutPlan{Done: true, Moved: 3, Total: 3},
			wantVersion: "v1.37.1", wantCond: "False/AsExpected: Running v1.37.1",
		},
		{
			name: "upgrade starts", history: upgraded, plan: rolloutPlan{Rolling: "kube-apiserver-0", Total: 6},
			wantVersion: "v1.36.3", wantCond: "True/Upgrading: Rolling kube-apiserver-0 to v1.37.1 (0 of 6 instances done)",
			wantEvents: []string{"Normal UpgradeStarted Upgrading the control plane from v1.36.3 to v1.37.1"},
		},
		{
			name: "upgrade completes", history: append([]hypershiftv1alpha1.VersionHistory{{Version: "v1.37.1", State: hypershiftv1alpha1.PartialVersion, StartedTime: done}}, upgraded...),
			plan: rolloutPlan{Done: true, Moved: 6, Total: 6}, wantVersion: "v1.37.1", wantCond: "False/AsExpected: Running v1.37.1",
			wantEvents: []string{"Normal UpgradeCompleted The control plane runs v1.37.1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := events.NewFakeRecorder(10)
			r := &Reconciler{Recorder: rec}
			hcp := &hypershiftv1alpha1.HostedControlPlane{}
			hcp.Status.VersionHistory = tt.history
			if len(tt.history) > 0 {
				hcp.Status.Version = "v1.36.3"
			}
			plan := tt.plan
			s := &scope{hcp: hcp, rollout: &plan, rolloutTo: "v1.37.1"}
			r.updateVersionStatus(s, t0.Add(time.Minute))
			if hcp.Status.Version != tt.wantVersion {
				t.Errorf("status.version %q, want %q", hcp.Status.Version, tt.wantVersion)
			}
			c := meta.FindStatusCondition(hcp.Status.Conditions, hypershiftv1alpha1.ClusterVersionProgressing.String())
			if got := fmt.Sprintf("%s/%s: %s", c.Status, c.Reason, c.Message); got != tt.wantCond {
				t.Errorf("ClusterVersionProgressing %q, want %q", got, tt.wantCond)
			}
			close(rec.Events)
			var got []string
			for e := range rec.Events {
				got = append(got, e)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.wantEvents) {
				t.Errorf("events %q, want %q", got, tt.wantEvents)
			}
		})
	}
}

// While the control plane sleeps nothing rolls: the condition says where
// it is and whether a rollout waits for the wake, not the last progress
// seen before the sleep.
func TestHibernatedVersionStatus(t *testing.T) {
	done := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	completed := func(v string) hypershiftv1alpha1.VersionHistory {
		return hypershiftv1alpha1.VersionHistory{Version: v, State: hypershiftv1alpha1.CompletedVersion, StartedTime: done, CompletionTime: &done}
	}
	partial := hypershiftv1alpha1.VersionHistory{Version: "v1.37.1", State: hypershiftv1alpha1.PartialVersion, StartedTime: done}
	for _, tt := range []struct {
		name    string
		history []hypershiftv1alpha1.VersionHistory
		want    string
	}{
		{"at its version", []hypershiftv1alpha1.VersionHistory{completed("v1.37.1")}, "False/AsExpected: At v1.37.1 (hibernated)"},
		{"an upgrade under way", []hypershiftv1alpha1.VersionHistory{partial, completed("v1.36.3")}, "True/Upgrading: Hibernated at v1.36.3: the upgrade to v1.37.1 continues when the control plane wakes"},
		{"an upgrade asked while asleep", []hypershiftv1alpha1.VersionHistory{completed("v1.36.3")}, "True/Upgrading: Hibernated at v1.36.3: the upgrade to v1.37.1 continues when the control plane wakes"},
		{"a creation under way", []hypershiftv1alpha1.VersionHistory{partial}, "True/Installing: Hibernated before its first start at v1.37.1 completed: it continues when the control plane wakes"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			hcp := &hypershiftv1alpha1.HostedControlPlane{}
			hcp.Spec.KubernetesVersion = "v1.37.1"
			hcp.Status.VersionHistory = tt.history
			// The condition as a rollout left it before the sleep.
			conditions.Set(&hcp.Status.Conditions, 1, hypershiftv1alpha1.ClusterVersionProgressing, true,
				hypershiftv1alpha1.UpgradingReason, "Rolling kube-apiserver to v1.37.1 (0 of 3 instances done)")
			setHibernatedVersionStatus(hcp)
			c := meta.FindStatusCondition(hcp.Status.Conditions, hypershiftv1alpha1.ClusterVersionProgressing.String())
			if got := fmt.Sprintf("%s/%s: %s", c.Status, c.Reason, c.Message); got != tt.want {
				t.Errorf("ClusterVersionProgressing %q, want %q", got, tt.want)
			}
		})
	}
}
