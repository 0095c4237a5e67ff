package hostedcluster

import (
	"fmt"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/version"
)

// validateSpec rejects what admission lets through but this operator cannot
// run. Such a cluster reports ValidConfiguration=False until its spec
// changes; retrying would not help.
func validateSpec(hc *hypershiftv1alpha1.HostedCluster) error {
	if v := hc.Spec.KubernetesVersion; v != "" && !version.Supported(v) {
		return fmt.Errorf("spec.kubernetesVersion %s is not supported: this operator runs %v", v, version.SupportedKubernetesVersions())
	}
	if hc.Spec.Etcd.ManagementType != "" && hc.Spec.Etcd.ManagementType != hypershiftv1alpha1.Managed {
		return fmt.Errorf("spec.etcd.managementType %s is not supported yet: use Managed", hc.Spec.Etcd.ManagementType)
	}
	return nil
}
