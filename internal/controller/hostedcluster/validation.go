package hostedcluster

import (
	"fmt"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/version"
)

// validateSpec rejects what admission lets through but this operator cannot
// run. Such a cluster reports ValidConfiguration=False until its spec
// changes; retrying would not help. Admission refuses most of these too; the
// checks here cover objects stored before a rule existed (the API server
// does not re-validate them).
func validateSpec(hc *hypershiftv1alpha1.HostedCluster) error {
	if v := hc.Spec.KubernetesVersion; v != "" && !version.Supported(v) {
		return fmt.Errorf("spec.kubernetesVersion %s is not supported: this operator runs %v", v, version.SupportedKubernetesVersions())
	}
	if hc.Spec.Etcd.ManagementType != "" && hc.Spec.Etcd.ManagementType != hypershiftv1alpha1.Managed {
		return fmt.Errorf("spec.etcd.managementType %s is not supported yet: use Managed", hc.Spec.Etcd.ManagementType)
	}
	// The control plane is rendered from the first range of each list: a
	// second one would be silently ignored.
	if n := len(hc.Spec.Networking.ClusterNetwork); n > 1 {
		return fmt.Errorf("spec.networking.clusterNetwork has %d entries: dual-stack is not supported yet, keep one", n)
	}
	if n := len(hc.Spec.Networking.ServiceNetwork); n > 1 {
		return fmt.Errorf("spec.networking.serviceNetwork has %d entries: dual-stack is not supported yet, keep one", n)
	}
	for i, s := range hc.Spec.Services {
		if t := s.Type; t != hypershiftv1alpha1.HostPort {
			return fmt.Errorf("spec.services[%d].servicePublishingStrategy.type %s is not supported: the process runtime publishes %s on a port of the management host; use HostPort", i, t, s.Service)
		}
	}
	return nil
}
