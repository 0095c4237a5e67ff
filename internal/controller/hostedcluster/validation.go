package hostedcluster

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/release"
	"hypershift.dev/internal/runtime"
)

// Capabilities are what this operator can run: its runtime's capabilities
// and the releases it has.
type Capabilities struct {
	runtime.Capabilities
	// Releases are the Kubernetes versions it can run; nil: the
	// compiled-in one only.
	Releases *release.Catalog
}

// capabilities are what this operator can run: its runtime's (the process
// runtime's without one), with its releases.
func (r *Reconciler) capabilities() Capabilities {
	caps := runtime.Process
	if r.Runtime != nil {
		caps = r.Runtime.Capabilities()
	}
	return Capabilities{Capabilities: caps, Releases: r.Releases}
}

// validateSpec rejects what admission lets through but this operator cannot
// run. Such a cluster reports ValidConfiguration=False until its spec
// changes; retrying would not help. Admission refuses most of these too; the
// checks here cover objects stored before a rule existed (the API server
// does not re-validate them).
func validateSpec(hc *hypershiftv1alpha1.HostedCluster, supports Capabilities) error {
	if v := hc.Spec.KubernetesVersion; v != "" {
		if _, ok := supports.Releases.Lookup(v); !ok {
			return fmt.Errorf("spec.kubernetesVersion %s is not available: this operator runs %s", v, strings.Join(supports.Releases.Versions(), ", "))
		}
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
	publishing := supports.Publishing
	for i, s := range hc.Spec.Services {
		if !supports.PublishesOn(string(s.Type)) {
			return fmt.Errorf("spec.services[%d].servicePublishingStrategy.type %s is not supported by this operator's runtime: use %v", i, s.Type, publishing)
		}
	}
	// An empty list means HostPort.
	if !supports.PublishesOn(string(hypershiftv1alpha1.HostPort)) &&
		!slices.ContainsFunc(hc.Spec.Services, func(s hypershiftv1alpha1.ServicePublishingStrategyMapping) bool {
			return s.Service == hypershiftv1alpha1.APIServer
		}) {
		return fmt.Errorf("spec.services needs an APIServer entry of type %v: this operator's runtime cannot publish on a host port", publishing)
	}
	if !supports.OneProcess && hc.Annotations[hypershiftv1alpha1.SingleProcessControlPlaneAnnotation] == "true" {
		return fmt.Errorf("annotation %s is not supported by this operator's runtime: it runs control planes as pods; remove it", hypershiftv1alpha1.SingleProcessControlPlaneAnnotation)
	}
	if hc.Spec.WorkloadIdentityWebhook != nil && !supports.LoopbackWebhooks {
		return errors.New("spec.workloadIdentityWebhook is not supported by this operator's runtime yet: the webhook runs beside the API server on the process runtime (hypershift up); remove it")
	}
	if hc.Spec.Etcd.Managed != nil && !supports.Volumes {
		return errors.New("spec.etcd.managed.storage is not supported by this operator's runtime: the process runtime keeps etcd's data on the management host's disk; remove it")
	}
	if hypershiftv1alpha1.MirrorsVolumes(hc.Spec.Platform) && !supports.AttachesVolumes {
		return errors.New("spec.platform.host.storageDriver type Manual is not supported by this operator's runtime: volumes are attached to machines that are pods of the management cluster (hypershift install); remove it")
	}
	return validateHibernation(hc, supports)
}
