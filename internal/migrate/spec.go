package migrate

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
)

// The two runtimes publish differently (the process runtime on a port of
// its host, the kube runtime through Services) and only the kube runtime
// keeps etcd on volumes, so a cluster moving between them needs its
// publishing said anew: --api-server-publishing and --api-server-address,
// and for the kube runtime --etcd-storage-class and --etcd-storage-size, as
// `create cluster` takes them.

// CheckPublishing checks the target's publishing flags.
func (o Options) CheckPublishing() error {
	switch hypershiftv1alpha1.PublishingStrategyType(o.Publishing) {
	case "":
		if o.APIServerAddress != "" {
			return fmt.Errorf("--api-server-address is for --api-server-publishing NodePort or LoadBalancer")
		}
	case hypershiftv1alpha1.HostPort:
		if o.APIServerAddress != "" {
			return fmt.Errorf("--api-server-address is for --api-server-publishing NodePort or LoadBalancer; HostPort publishes at the target operator's endpoint host")
		}
	case hypershiftv1alpha1.NodePort, hypershiftv1alpha1.LoadBalancer:
		if o.APIServerAddress == "" {
			return fmt.Errorf("--api-server-publishing %s needs --api-server-address: the address clients use on the target (a node's address, or the load balancer's DNS name)", o.Publishing)
		}
	default:
		return fmt.Errorf("--api-server-publishing %q: use HostPort, NodePort or LoadBalancer", o.Publishing)
	}
	if o.EtcdStorageClass != "" || o.EtcdStorageSize != "" {
		if p := hypershiftv1alpha1.PublishingStrategyType(o.Publishing); p != hypershiftv1alpha1.NodePort && p != hypershiftv1alpha1.LoadBalancer {
			return fmt.Errorf("--etcd-storage-class and --etcd-storage-size are for a target of the kube runtime: give them with --api-server-publishing NodePort or LoadBalancer")
		}
	}
	if o.EtcdStorageSize != "" {
		if q, err := resource.ParseQuantity(o.EtcdStorageSize); err != nil || q.Sign() <= 0 {
			return fmt.Errorf("--etcd-storage-size %q is not a size such as 8Gi", o.EtcdStorageSize)
		}
	}
	return nil
}

// AdaptSpec gives the cluster the target's publishing when
// --api-server-publishing is set: the API server (and with it the
// Konnectivity server) published that way, and, on a host port (the
// process runtime), no spec.etcd.managed.storage, which that runtime
// cannot honour (its etcd keeps data in its data dir). It returns what it
// changed, for the output.
func (o Options) AdaptSpec(hc *hypershiftv1alpha1.HostedCluster) []string {
	if o.Publishing == "" {
		return nil
	}
	hc.Spec.Services = hypershiftv1alpha1.APIServerPublishing(hypershiftv1alpha1.PublishingStrategyType(o.Publishing), o.APIServerAddress, 0)
	changed := []string{"spec.services: the API server published by " + o.Publishing}
	switch {
	case hypershiftv1alpha1.PublishingStrategyType(o.Publishing) == hypershiftv1alpha1.HostPort && hc.Spec.Etcd.Managed != nil:
		hc.Spec.Etcd.Managed = nil
		changed = append(changed, "spec.etcd.managed.storage left out (the target keeps etcd's data in its data dir)")
	case o.EtcdStorageClass != "" || o.EtcdStorageSize != "":
		hc.Spec.Etcd.Managed = hypershiftv1alpha1.EtcdVolume(o.EtcdStorageClass, o.EtcdStorageSize) // the size is checked in CheckPublishing
		changed = append(changed, "spec.etcd.managed.storage from --etcd-storage-class/--etcd-storage-size")
	}
	return changed
}
