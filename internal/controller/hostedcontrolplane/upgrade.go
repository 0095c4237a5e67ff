package hostedcontrolplane

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/components"
	"hypershift.dev/internal/controller/conditions"
	"hypershift.dev/internal/release"
	"hypershift.dev/internal/runtime"
)

// renderRollout renders the control plane for the version it asks for and,
// while a rollout is under way, for the version it last ran completely,
// and keeps the instances the rollout has not reached at the old one
// (rollout). The plan is kept in the scope for the version status.
func (r *Reconciler) renderRollout(s *scope, cfg components.Config) ([]runtime.Spec, error) {
	to := release.Normalize(s.hcp.Spec.KubernetesVersion)
	from := lastCompleted(s.hcp.Status)
	if from == "" {
		from = to
	}
	cfg.KubernetesVersion = to
	target, err := components.Render(cfg)
	if err != nil {
		return nil, err
	}
	var old []runtime.Spec
	if from != to {
		cfg.KubernetesVersion = from
		if old, err = components.Render(cfg); err != nil {
			return nil, err
		}
	}
	plan := rollout(rolloutInput{
		From: from, To: to, Old: old, Target: target,
		Instances: instanceStates(r.Runtime.Status(s.ref)),
		Pods:      cfg.Layout.Pods,
	})
	s.rollout, s.rolloutTo = &plan, to
	return plan.Specs, nil
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
			Version: release.Normalize(s.Version),
			Ready:   s.Phase == runtime.Running,
		})
	}
	return out
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
	if s.rollout.Done {
		conditions.Set(&hcp.Status.Conditions, hcp.Generation, hypershiftv1alpha1.ClusterVersionProgressing, false,
			hypershiftv1alpha1.AsExpectedReason, "Running "+s.rolloutTo)
	} else {
		conditions.Set(&hcp.Status.Conditions, hcp.Generation, hypershiftv1alpha1.ClusterVersionProgressing, true,
			hypershiftv1alpha1.UpgradingReason, s.rollout.progress(s.rolloutTo))
		// The next instance moves as soon as this one is ready.
		s.requeueAfter(time.Second)
	}
	// A first rollout is the control plane's creation, not an upgrade.
	upgrade := len(history) > 1
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
