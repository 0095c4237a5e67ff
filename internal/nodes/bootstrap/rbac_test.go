package bootstrap

import "testing"

// The hosted controller manager approves a bootstrap token's node client
// CSR for any node name if bootstrappers may create nodeclient CSRs; only
// the NodePool controller may approve them, after checking the token's pool.
func TestBootstrappersCannotHaveClientCSRsAutoApproved(t *testing.T) {
	for _, b := range ClusterRoleBindings() {
		if b.RoleRef.Name != "system:certificates.k8s.io:certificatesigningrequests:nodeclient" {
			continue
		}
		t.Errorf("ClusterRoleBinding %s lets %v have node client CSRs approved by the controller manager", b.Name, b.Subjects)
	}
}
