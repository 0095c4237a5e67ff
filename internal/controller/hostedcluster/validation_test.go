package hostedcluster

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/release"
	"hypershift.dev/internal/runtime"
	"hypershift.dev/internal/testenv"
	"hypershift.dev/internal/version"
)

// TestValidateSpecRefusesWhatIsNotRun covers specs stored before admission
// refused them: each reports ValidConfiguration=False naming the field
// instead of being run with part of it ignored.
func TestValidateSpecRefusesWhatIsNotRun(t *testing.T) {
	kube := Capabilities{Capabilities: runtime.Kube}
	tests := []struct {
		name     string
		supports Capabilities // runtime zero: the process runtime
		mutate   func(hc *hypershiftv1alpha1.HostedCluster)
		wantErr  string // empty: valid
	}{
		{name: "default cluster", mutate: func(*hypershiftv1alpha1.HostedCluster) {}},
		{name: "hibernation cron out of range", mutate: func(hc *hypershiftv1alpha1.HostedCluster) {
			hc.Spec.Hibernation = &hypershiftv1alpha1.HibernationSpec{Schedules: []hypershiftv1alpha1.HibernationSchedule{{Hibernate: "0 7 * * *", Resume: "61 7 * * *"}}}
		}, wantErr: "spec.hibernation.schedules[0].resume"},
		{name: "hibernation time zone unknown", mutate: func(hc *hypershiftv1alpha1.HostedCluster) {
			hc.Spec.Hibernation = &hypershiftv1alpha1.HibernationSpec{TimeZone: "Europe/Atlantis"}
		}, wantErr: "spec.hibernation.timeZone \"Europe/Atlantis\" is not a known IANA time zone"},
		{name: "idleAfter on the kube runtime", supports: kube, mutate: func(hc *hypershiftv1alpha1.HostedCluster) {
			hc.Spec.Services[0].Type = "NodePort"
			hc.Spec.Hibernation = &hypershiftv1alpha1.HibernationSpec{IdleAfter: &metav1.Duration{Duration: time.Minute}}
		}, wantErr: "spec.hibernation.idleAfter is not supported by this operator's runtime"},
		{name: "idleAfter with a single-process control plane", mutate: func(hc *hypershiftv1alpha1.HostedCluster) {
			hc.Annotations = map[string]string{hypershiftv1alpha1.SingleProcessControlPlaneAnnotation: "true"}
			hc.Spec.Hibernation = &hypershiftv1alpha1.HibernationSpec{IdleAfter: &metav1.Duration{Duration: time.Minute}}
		}, wantErr: "spec.hibernation.idleAfter cannot be combined with annotation"},
		{name: "no services listed", mutate: func(hc *hypershiftv1alpha1.HostedCluster) { hc.Spec.Services = nil }},
		{name: "CA rotation on the process runtime", mutate: func(hc *hypershiftv1alpha1.HostedCluster) {
			hc.Spec.Certificates = &hypershiftv1alpha1.CertificatesSpec{RotateCA: "a"}
		}},
		{name: "CA rotation on the kube runtime", supports: kube, mutate: func(hc *hypershiftv1alpha1.HostedCluster) {
			hc.Spec.Services[0].Type = "NodePort"
			hc.Spec.Etcd.Managed = &hypershiftv1alpha1.ManagedEtcdSpec{}
			hc.Spec.Certificates = &hypershiftv1alpha1.CertificatesSpec{RotateCA: "a"}
		}},
		{name: "second cluster network", mutate: func(hc *hypershiftv1alpha1.HostedCluster) {
			hc.Spec.Networking.ClusterNetwork = append(hc.Spec.Networking.ClusterNetwork, hypershiftv1alpha1.ClusterNetworkEntry{CIDR: "fd01::/48"})
		}, wantErr: "spec.networking.clusterNetwork has 2 entries: dual-stack is not supported yet"},
		{name: "second service network", mutate: func(hc *hypershiftv1alpha1.HostedCluster) {
			hc.Spec.Networking.ServiceNetwork = append(hc.Spec.Networking.ServiceNetwork, hypershiftv1alpha1.ServiceNetworkEntry{CIDR: "fd02::/112"})
		}, wantErr: "spec.networking.serviceNetwork has 2 entries: dual-stack is not supported yet"},
		{name: "load balancer on the process runtime", mutate: func(hc *hypershiftv1alpha1.HostedCluster) {
			hc.Spec.Services[0].Type = "LoadBalancer"
		}, wantErr: "spec.services[0].servicePublishingStrategy.type LoadBalancer is not supported by this operator's runtime"},
		{name: "etcd storage on the process runtime", mutate: func(hc *hypershiftv1alpha1.HostedCluster) {
			hc.Spec.Etcd.Managed = &hypershiftv1alpha1.ManagedEtcdSpec{}
		}, wantErr: "spec.etcd.managed.storage is not supported by this operator's runtime"},
		{name: "volumes of the management cluster on the process runtime", mutate: func(hc *hypershiftv1alpha1.HostedCluster) {
			hc.Spec.Platform = hostStoragePlatform()
		}, wantErr: "spec.platform.host.storageDriver type Manual is not supported by this operator's runtime"},
		{name: "volumes of the management cluster on the kube runtime", supports: kube, mutate: func(hc *hypershiftv1alpha1.HostedCluster) {
			hc.Spec.Services[0].Type = "NodePort"
			hc.Spec.Platform = hostStoragePlatform()
		}},
		{name: "node port on the kube runtime", supports: kube, mutate: func(hc *hypershiftv1alpha1.HostedCluster) {
			hc.Spec.Services[0].Type = "NodePort"
			hc.Spec.Etcd.Managed = &hypershiftv1alpha1.ManagedEtcdSpec{}
		}},
		{
			name: "no services on the kube runtime", supports: kube, mutate: func(hc *hypershiftv1alpha1.HostedCluster) { hc.Spec.Services = nil },
			wantErr: "spec.services needs an APIServer entry of type [NodePort LoadBalancer]",
		},
		{name: "single process on the kube runtime", supports: kube, mutate: func(hc *hypershiftv1alpha1.HostedCluster) {
			hc.Spec.Services[0].Type = "NodePort"
			hc.Annotations = map[string]string{hypershiftv1alpha1.SingleProcessControlPlaneAnnotation: "true"}
		}, wantErr: "annotation hypershift.dev/single-process-control-plane is not supported by this operator's runtime"},
		{
			name: "version not in the catalog", mutate: func(hc *hypershiftv1alpha1.HostedCluster) { hc.Spec.KubernetesVersion = "v1.36.3" },
			wantErr: "spec.kubernetesVersion v1.36.3 is not available: this operator runs " + version.KubernetesVersion,
		},
		{
			name: "version of a release", supports: Capabilities{Releases: release.New(release.Release{Version: "v1.36.3", Binary: "/releases/v1.36.3/kubernetes"})},
			mutate: func(hc *hypershiftv1alpha1.HostedCluster) { hc.Spec.KubernetesVersion = "v1.36.3" },
		},
		{
			name: "host port on the kube runtime", supports: kube, mutate: func(*hypershiftv1alpha1.HostedCluster) {},
			wantErr: "spec.services[0].servicePublishingStrategy.type HostPort is not supported by this operator's runtime: use [NodePort LoadBalancer]",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hc := hypershiftv1alpha1.NewHostedCluster("clusters", "a", hypershiftv1alpha1.NonePlatform, version.KubernetesVersion)
			tt.mutate(hc)
			if tt.supports.Name == "" {
				tt.supports.Capabilities = runtime.Process
			}
			testenv.ExpectError(t, validateSpec(hc, tt.supports), tt.wantErr)
		})
	}
}

// hostStoragePlatform is platform Host with a guest class mapped to the
// management cluster's.
func hostStoragePlatform() hypershiftv1alpha1.PlatformSpec {
	return hypershiftv1alpha1.PlatformSpec{Type: hypershiftv1alpha1.HostPlatform, Host: &hypershiftv1alpha1.HostPlatformSpec{
		StorageDriver: &hypershiftv1alpha1.HostStorageDriverSpec{
			Type: hypershiftv1alpha1.ManualStorageDriver,
			Manual: &hypershiftv1alpha1.ManualStorageDriverSpec{StorageClassMapping: []hypershiftv1alpha1.StorageClassMapping{
				{InfraStorageClassName: "fast", GuestStorageClassName: "standard"},
			}},
		},
	}}
}
