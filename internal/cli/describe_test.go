package cli

import (
	"bytes"
	"regexp"
	"testing"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
)

// TestDescribeDataPlane: describe lists the objects the control plane keeps
// in the hosted cluster with their health, and says when there are none.
func TestDescribeDataPlane(t *testing.T) {
	hc := &hypershiftv1alpha1.HostedCluster{}
	hc.Name, hc.Namespace = "a", "clusters"
	for _, tc := range []struct {
		name      string
		dataPlane []hypershiftv1alpha1.DataPlaneObjectStatus
		want      []string
	}{
		{"none yet", nil, []string{
			`\nComponents:\n  \(none reported yet\)\n`,
			`\nData plane \(objects in the hosted cluster\):\n  \(none applied yet\)\n`,
			`\nEvents:\n  \(none\)\n`,
		}},
		{"objects", []hypershiftv1alpha1.DataPlaneObjectStatus{
			{Kind: "ClusterRoleBinding", Name: "hypershift:node-proxier", Healthy: true},
			{Kind: "Deployment", Namespace: "kube-system", Name: "coredns", Ready: "0/2", Message: "0 of 2 replicas available (2 updated)"},
		}, []string{
			`KIND +NAMESPACE +NAME +READY +HEALTHY +MESSAGE`,
			`ClusterRoleBinding +- +hypershift:node-proxier +- +yes +-\n`,
			`Deployment +kube-system +coredns +0/2 +no +0 of 2 replicas available \(2 updated\)\n`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hcp := &hypershiftv1alpha1.HostedControlPlane{}
			hcp.Status.DataPlane = tc.dataPlane
			var out bytes.Buffer
			if err := printDescription(&out, hc, hcp, nil); err != nil {
				t.Fatal(err)
			}
			for _, pattern := range tc.want {
				if !regexp.MustCompile(pattern).Match(out.Bytes()) {
					t.Errorf("describe does not match %q:\n%s", pattern, out.String())
				}
			}
		})
	}
}
