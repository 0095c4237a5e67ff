package nodepool

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
)

func TestSetUpdatingVersion(t *testing.T) {
	tests := []struct {
		name     string
		platform hypershiftv1alpha1.PlatformType
		problem  string
		machines machineReport
		versions []string
		status   bool
		reason   hypershiftv1alpha1.ConditionReason
		message  string
	}{
		{
			name: "every node at the version", platform: hypershiftv1alpha1.SimulatedPlatform, versions: []string{"v1.37.1"},
			reason: hypershiftv1alpha1.AsExpectedReason, message: "All 0 nodes run v1.37.1",
		},
		{
			name: "a rollout, its drain refused", platform: hypershiftv1alpha1.SimulatedPlatform, versions: []string{"v1.36.3", "v1.37.1"},
			machines: machineReport{rollout: "Replace upgrade to v1.37.1: 1 of 3 nodes updated; draining a", blocked: 2},
			status:   true, reason: hypershiftv1alpha1.RollingOutReason,
			message: "Replace upgrade to v1.37.1: 1 of 3 nodes updated; draining a; 2 evictions refused by PodDisruptionBudgets, retrying",
		},
		{
			name: "a version outside the skew", platform: hypershiftv1alpha1.SimulatedPlatform, versions: []string{"v1.36.3"},
			problem: "spec.kubernetesVersion v1.38.0 is newer than the control plane's v1.37.1",
			reason:  hypershiftv1alpha1.UnsupportedVersionSkewReason, message: "spec.kubernetesVersion v1.38.0 is newer",
		},
		{
			name: "real nodes at another version", platform: hypershiftv1alpha1.NonePlatform, versions: []string{"v1.36.3"},
			reason: hypershiftv1alpha1.UnsupportedReason, message: "Nodes run v1.36.3, spec.kubernetesVersion is v1.37.1: this platform does not upgrade nodes",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &scope{
				np:       &hypershiftv1alpha1.NodePool{},
				platform: newPlatform(&Reconciler{}, tt.platform),
				machines: tt.machines, version: "v1.37.1", versionProblem: tt.problem,
			}
			setUpdatingVersion(s, tt.versions)
			c := meta.FindStatusCondition(s.np.Status.Conditions, hypershiftv1alpha1.NodePoolUpdatingVersion)
			if c == nil {
				t.Fatal("no UpdatingVersion condition")
			}
			if (c.Status == "True") != tt.status || c.Reason != tt.reason.String() || !strings.HasPrefix(c.Message, tt.message) {
				t.Errorf("UpdatingVersion %s/%s %q, want %v/%s %q", c.Status, c.Reason, c.Message, tt.status, tt.reason, tt.message)
			}
		})
	}
}
