package hostedcontrolplane

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/components"
	"hypershift.dev/internal/controller/conditions"
	"hypershift.dev/internal/release"
	"hypershift.dev/internal/runtime"
)

// renderRollout renders the control plane for the version it asks for
// and, while a rollout is under way, for the version it last ran
// completely and each version an instance still runs, and lets rollout
// choose per instance. The plan is kept in the scope for the version
// status.
func (r *Reconciler) renderRollout(s *scope, cfg components.Config) ([]runtime.Spec, error) {
	to := release.Normalize(s.hcp.Spec.KubernetesVersion)
	from := lastCompleted(s.hcp.Status)
	if from == "" {
		from = to
	}
	instances := instanceStates(r.Runtime.Status(s.ref))
	versions := []string{to, from}
	for _, st := range instances {
		if isVersioned(st.Component) {
			versions = append(versions, st.Version)
		}
	}
	rendered := map[string][]runtime.Spec{}
	for _, v := range versions {
		if _, ok := rendered[v]; ok {
			continue
		}
		cfg.KubernetesVersion = v
		specs, err := components.Render(cfg)
		if err != nil {
			return nil, fmt.Errorf("render for %s: %w", v, err)
		}
		rendered[v] = specs
	}
	plan := rollout(rolloutInput{From: from, To: to, Rendered: rendered, Instances: instances, ByComponent: r.Runtime.Capabilities().RollsComponents})
	s.rollout, s.rolloutTo = &plan, to
	return plan.Specs, nil
}

// setHibernatedVersionStatus is ClusterVersionProgressing while the
// control plane sleeps: nothing rolls, so a rollout under way when it went
// to sleep is said to wait for the wake, and one done says where it is.
func setHibernatedVersionStatus(hcp *hypershiftv1alpha1.HostedControlPlane) {
	to := release.Normalize(hcp.Spec.KubernetesVersion)
	from := lastCompleted(hcp.Status)
	switch from {
	case to:
		conditions.Set(&hcp.Status.Conditions, hcp.Generation, hypershiftv1alpha1.ClusterVersionProgressing, false,
			hypershiftv1alpha1.AsExpectedReason, "At "+to+" (hibernated)")
	case "":
		conditions.Set(&hcp.Status.Conditions, hcp.Generation, hypershiftv1alpha1.ClusterVersionProgressing, true,
			hypershiftv1alpha1.InstallingReason, "Hibernated before its first start at "+to+" completed: it continues when the control plane wakes")
	default:
		conditions.Set(&hcp.Status.Conditions, hcp.Generation, hypershiftv1alpha1.ClusterVersionProgressing, true,
			hypershiftv1alpha1.UpgradingReason, fmt.Sprintf("Hibernated at %s: the upgrade to %s continues when the control plane wakes", from, to))
	}
}

// lastCompleted is the version the control plane last ran completely: the
// newest Completed entry of its history, else (a control plane made before
// the history existed) status.version.
func lastCompleted(st hypershiftv1alpha1.HostedControlPlaneStatus) string {
	for _, h := range st.VersionHistory {
		if h.State == hypershiftv1alpha1.CompletedVersion {
			return h.Version
		}
	}
	return st.Version
}

// instanceStates is the runtime's view as the rollout needs it.
func instanceStates(in []runtime.InstanceStatus) []instanceState {
	out := make([]instanceState, 0, len(in))
	for _, s := range in {
		out = append(out, instanceState{
			Name: s.Name, Component: s.Component,
			Version: instanceVersion(s),
			Ready:   s.Phase == runtime.Running,
		})
	}
	return out
}

// instanceVersion is the version an instance's process was started from;
// "" when no process of it is known (not started yet, or stopped before
// this operator saw it: a hibernated control plane's). An empty
// InstanceStatus.Version of a started process is the compiled-in release.
func instanceVersion(s runtime.InstanceStatus) string {
	if s.PID == 0 && s.StartedAt.IsZero() {
		return ""
	}
	return release.Normalize(s.Version)
}

// updateVersionStatus records the rollout in the version history, sets
// status.version and ClusterVersionProgressing, and reports an upgrade's
// start and completion as Events.
func (r *Reconciler) updateVersionStatus(s *scope, now time.Time) {
	if s.rollout == nil {
		return
	}
	hcp := s.hcp
	history, started, completed := recordVersion(hcp.Status.VersionHistory, s.rolloutTo, s.rollout.Done, now)
	hcp.Status.VersionHistory = history
	if v := lastCompleted(hypershiftv1alpha1.HostedControlPlaneStatus{VersionHistory: history}); v != "" {
		hcp.Status.Version = v
	}
	// A first rollout is the control plane's creation, not an upgrade.
	upgrade := len(history) > 1
	switch {
	case s.rollout.Done:
		conditions.Set(&hcp.Status.Conditions, hcp.Generation, hypershiftv1alpha1.ClusterVersionProgressing, false,
			hypershiftv1alpha1.AsExpectedReason, "Running "+s.rolloutTo)
	case upgrade:
		conditions.Set(&hcp.Status.Conditions, hcp.Generation, hypershiftv1alpha1.ClusterVersionProgressing, true,
			hypershiftv1alpha1.UpgradingReason, s.rollout.progress(s.rolloutTo))
	default:
		conditions.Set(&hcp.Status.Conditions, hcp.Generation, hypershiftv1alpha1.ClusterVersionProgressing, true,
			hypershiftv1alpha1.InstallingReason, s.rollout.installProgress(s.rolloutTo))
	}
	if !s.rollout.Done {
		// The next instance moves as soon as this one is ready.
		s.requeueAfter(time.Second)
	}
	if r.Recorder == nil || !upgrade {
		return
	}
	if started {
		r.Recorder.Eventf(hcp, nil, corev1.EventTypeNormal, hypershiftv1alpha1.UpgradeStartedReason, "Upgrade",
			"Upgrading the control plane from %s to %s", history[1].Version, s.rolloutTo)
	}
	if completed {
		r.Recorder.Eventf(hcp, nil, corev1.EventTypeNormal, hypershiftv1alpha1.UpgradeCompletedReason, "Upgrade",
			"The control plane runs %s", s.rolloutTo)
	}
}

// recordVersion adds to (a history, newest first) an entry for version
// when the newest is of another version, and completes it when done. It
// keeps at most MaxVersionHistory entries.
func recordVersion(history []hypershiftv1alpha1.VersionHistory, version string, done bool, now time.Time) (out []hypershiftv1alpha1.VersionHistory, started, completed bool) {
	out = append([]hypershiftv1alpha1.VersionHistory(nil), history...)
	if len(out) == 0 || out[0].Version != version {
		out = append([]hypershiftv1alpha1.VersionHistory{{
			Version: version, State: hypershiftv1alpha1.PartialVersion, StartedTime: metav1.NewTime(now),
		}}, out...)
		started = true
	}
	if done && out[0].State != hypershiftv1alpha1.CompletedVersion {
		t := metav1.NewTime(now)
		out[0].State, out[0].CompletionTime = hypershiftv1alpha1.CompletedVersion, &t
		completed = true
	}
	if len(out) > hypershiftv1alpha1.MaxVersionHistory {
		out = out[:hypershiftv1alpha1.MaxVersionHistory]
	}
	return out, started, completed
}
