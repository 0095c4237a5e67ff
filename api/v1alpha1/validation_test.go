package v1alpha1_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/release"
	"hypershift.dev/internal/testenv"
	"hypershift.dev/internal/version"
)

func validCluster(ns, name string) *hypershiftv1alpha1.HostedCluster {
	return hypershiftv1alpha1.NewHostedCluster(ns, name, hypershiftv1alpha1.NonePlatform, version.KubernetesVersion)
}

func createNamespace(t *testing.T, c client.Client, name string) {
	t.Helper()
	if err := c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
}

// TestAdmission runs every validation rule of the API against a real API
// server and checks that the error names the field at fault.
func TestAdmission(t *testing.T) {
	env := testenv.Start(t)
	c := env.Client
	const ns = "clusters"
	createNamespace(t, c, ns)
	longNS := strings.Repeat("n", 30)
	releases, err := release.Load(filepath.Join(filepath.Dir(testenv.Binary(t)), "releases"))
	if err != nil {
		t.Fatal(err)
	}
	createNamespace(t, c, longNS)

	tests := []struct {
		name    string
		ns      string
		mutate  func(hc *hypershiftv1alpha1.HostedCluster)
		wantErr string // empty: accepted
	}{
		{name: "valid", mutate: func(*hypershiftv1alpha1.HostedCluster) {}},
		{name: "defaults fill an empty spec", mutate: func(hc *hypershiftv1alpha1.HostedCluster) {
			hc.Spec = hypershiftv1alpha1.HostedClusterSpec{}
		}},
		{
			name: "name with a dot", mutate: func(hc *hypershiftv1alpha1.HostedCluster) { hc.Name = "a.b" },
			wantErr: "metadata.name must be a DNS-1123 label",
		},
		{
			name: "name too long", mutate: func(hc *hypershiftv1alpha1.HostedCluster) { hc.Name = strings.Repeat("a", 41) },
			wantErr: "metadata.name must be at most 40 characters",
		},
		{
			name: "control-plane namespace too long", ns: longNS, mutate: func(hc *hypershiftv1alpha1.HostedCluster) { hc.Name = strings.Repeat("b", 35) },
			wantErr: "metadata.name: the control-plane namespace " + longNS + "-" + strings.Repeat("b", 35) + " would be longer than 63 characters",
		},
		{name: "service network inside cluster network", mutate: func(hc *hypershiftv1alpha1.HostedCluster) {
			hc.Spec.Networking.ServiceNetwork[0].CIDR = "10.133.0.0/16"
		}, wantErr: "spec.networking.serviceNetwork must not overlap spec.networking.clusterNetwork"},
		{name: "api server advertise address inside the service network", mutate: func(hc *hypershiftv1alpha1.HostedCluster) {
			hc.Spec.Networking.APIServer = &hypershiftv1alpha1.APIServerNetworking{AdvertiseAddress: "172.31.0.9"}
		}, wantErr: "spec.networking.apiServer.advertiseAddress must lie outside spec.networking.clusterNetwork and spec.networking.serviceNetwork"},
		{name: "api server advertise address on loopback", mutate: func(hc *hypershiftv1alpha1.HostedCluster) {
			hc.Spec.Networking.APIServer = &hypershiftv1alpha1.APIServerNetworking{AdvertiseAddress: "127.0.0.2"}
		}, wantErr: "spec.networking.apiServer.advertiseAddress must be an IPv4 address that is neither loopback nor 0.0.0.0"},
		{name: "api server port out of range", mutate: func(hc *hypershiftv1alpha1.HostedCluster) {
			hc.Spec.Networking.APIServer = &hypershiftv1alpha1.APIServerNetworking{AdvertiseAddress: "172.20.0.1", Port: 70000}
		}, wantErr: "spec.networking.apiServer.port"},
		{name: "cluster network inside service network", mutate: func(hc *hypershiftv1alpha1.HostedCluster) {
			hc.Spec.Networking.ClusterNetwork[0].CIDR = "172.31.128.0/20"
		}, wantErr: "spec.networking.serviceNetwork must not overlap spec.networking.clusterNetwork"},
		{name: "not a CIDR", mutate: func(hc *hypershiftv1alpha1.HostedCluster) {
			hc.Spec.Networking.ServiceNetwork[0].CIDR = "172.31.0.0/33"
		}, wantErr: "spec.networking.serviceNetwork[].cidr must be a CIDR"},
		{
			name: "not a version", mutate: func(hc *hypershiftv1alpha1.HostedCluster) { hc.Spec.KubernetesVersion = "1.37" },
			wantErr: "spec.kubernetesVersion must be a Kubernetes version vMAJOR.MINOR.PATCH, such as v1.37.1",
		},
		// Which versions can run is the runtime admission policy's
		// (internal/install): the installation's releases.
		{
			name: "unavailable version", mutate: func(hc *hypershiftv1alpha1.HostedCluster) { hc.Spec.KubernetesVersion = "v1.20.0" },
			wantErr: "spec.kubernetesVersion: v1.20.0 is not available in this installation: use one of " + strings.Join(releases.Versions(), ", "),
		},
		// Which versions can run is the operator's release catalog, not the
		// CRD's: the format is all the schema checks.
		{name: "another release", mutate: func(hc *hypershiftv1alpha1.HostedCluster) { hc.Spec.KubernetesVersion = "v1.36.3" }},
		{
			name: "bad pausedUntil", mutate: func(hc *hypershiftv1alpha1.HostedCluster) { hc.Spec.PausedUntil = ptr.To("tomorrow") },
			wantErr: "spec.pausedUntil must be an RFC 3339 date",
		},
		{name: "pausedUntil date", mutate: func(hc *hypershiftv1alpha1.HostedCluster) { hc.Spec.PausedUntil = ptr.To("2030-01-02T03:04:05Z") }},
		{name: "hibernation with schedules, time zone and idleAfter", mutate: func(hc *hypershiftv1alpha1.HostedCluster) {
			hc.Spec.Hibernation = &hypershiftv1alpha1.HibernationSpec{
				Schedules: []hypershiftv1alpha1.HibernationSchedule{{Hibernate: "0 20 * * 1-5", Resume: "@daily"}},
				TimeZone:  "Europe/Berlin", IdleAfter: &metav1.Duration{Duration: 10 * time.Second},
			}
		}},
		{name: "idleAfter below 10s", mutate: func(hc *hypershiftv1alpha1.HostedCluster) {
			hc.Spec.Hibernation = &hypershiftv1alpha1.HibernationSpec{IdleAfter: &metav1.Duration{Duration: 5 * time.Second}}
		}, wantErr: "spec.hibernation.idleAfter must be at least 10s"},
		{name: "cron with four fields", mutate: func(hc *hypershiftv1alpha1.HostedCluster) {
			hc.Spec.Hibernation = &hypershiftv1alpha1.HibernationSpec{Schedules: []hypershiftv1alpha1.HibernationSchedule{{Hibernate: "0 20 * *", Resume: "0 7 * * *"}}}
		}, wantErr: "spec.hibernation.schedules[].hibernate must be a 5-field cron expression"},
		{name: "rotateCA token", mutate: func(hc *hypershiftv1alpha1.HostedCluster) {
			hc.Spec.Certificates = &hypershiftv1alpha1.CertificatesSpec{RotateCA: "20261124T101315Z"}
		}},
		{name: "rotateCA with spaces", mutate: func(hc *hypershiftv1alpha1.HostedCluster) {
			hc.Spec.Certificates = &hypershiftv1alpha1.CertificatesSpec{RotateCA: "rotate now"}
		}, wantErr: "spec.certificates.rotateCA must be a token of letters, digits"},
		{name: "time zone with spaces", mutate: func(hc *hypershiftv1alpha1.HostedCluster) {
			hc.Spec.Hibernation = &hypershiftv1alpha1.HibernationSpec{TimeZone: "Central European Time"}
		}, wantErr: "spec.hibernation.timeZone must be an IANA time zone name"},
		{
			name: "unknown platform", mutate: func(hc *hypershiftv1alpha1.HostedCluster) { hc.Spec.Platform.Type = "OpenStack" },
			wantErr: "spec.platform.type: Unsupported value",
		},
		{name: "second cluster network (dual-stack)", mutate: func(hc *hypershiftv1alpha1.HostedCluster) {
			hc.Spec.Networking.ClusterNetwork = append(hc.Spec.Networking.ClusterNetwork,
				hypershiftv1alpha1.ClusterNetworkEntry{CIDR: "10.200.0.0/16", HostPrefix: 24})
		}, wantErr: "spec.networking.clusterNetwork must have exactly one entry: dual-stack (a second range) is not supported yet"},
		{name: "second service network (dual-stack)", mutate: func(hc *hypershiftv1alpha1.HostedCluster) {
			hc.Spec.Networking.ServiceNetwork = append(hc.Spec.Networking.ServiceNetwork,
				hypershiftv1alpha1.ServiceNetworkEntry{CIDR: "172.30.0.0/16"})
		}, wantErr: "spec.networking.serviceNetwork must have exactly one entry: dual-stack (a second range) is not supported yet"},
		{name: "no services listed", mutate: func(hc *hypershiftv1alpha1.HostedCluster) { hc.Spec.Services = nil }},
		// Which strategies a runtime supports is the runtime admission
		// policy's (internal/install); the CRD checks their shape.
		{name: "load balancer without a hostname", mutate: func(hc *hypershiftv1alpha1.HostedCluster) {
			hc.Spec.Services[0].Type = "LoadBalancer"
		}, wantErr: "spec.services[].servicePublishingStrategy.loadBalancer.hostname is required for type LoadBalancer"},
		{name: "node port without an address", mutate: func(hc *hypershiftv1alpha1.HostedCluster) {
			hc.Spec.Services[0].Type = "NodePort"
		}, wantErr: "spec.services[].servicePublishingStrategy.nodePort.address is required for type NodePort"},
		{name: "node port settings on a host port", mutate: func(hc *hypershiftv1alpha1.HostedCluster) {
			hc.Spec.Services[0].NodePort = &hypershiftv1alpha1.NodePortPublishingStrategy{Address: "10.0.0.1"}
		}, wantErr: "spec.services[].servicePublishingStrategy.nodePort is only for type NodePort"},
		{name: "node port out of range", mutate: func(hc *hypershiftv1alpha1.HostedCluster) {
			hc.Spec.Services[0].Type = "NodePort"
			hc.Spec.Services[0].NodePort = &hypershiftv1alpha1.NodePortPublishingStrategy{Address: "10.0.0.1", Port: 70000}
		}, wantErr: "spec.services[0].servicePublishingStrategy.nodePort.port"},
		{name: "API server on a route", mutate: func(hc *hypershiftv1alpha1.HostedCluster) {
			hc.Spec.Services[0].Type = "Route"
		}, wantErr: "spec.services[].servicePublishingStrategy.type Route is not supported"},
		{name: "unknown service", mutate: func(hc *hypershiftv1alpha1.HostedCluster) {
			hc.Spec.Services[0].Service = "OAuthServer"
		}, wantErr: "spec.services[0].service"},
		{name: "issuer published to a bucket", mutate: func(hc *hypershiftv1alpha1.HostedCluster) {
			hc.Spec.IssuerURL = "https://oidc.example.com/clusters/prod"
			hc.Spec.ServiceAccountSigningKey = &corev1.LocalObjectReference{Name: "sa-key"}
			hc.Spec.OIDCPublishing = &hypershiftv1alpha1.OIDCPublishingSpec{
				StorageURL: "s3://oidc/clusters/prod?region=eu-west-1", CredentialsSecret: &corev1.LocalObjectReference{Name: "oidc-creds"},
			}
		}},
		{name: "issuer over http", mutate: func(hc *hypershiftv1alpha1.HostedCluster) {
			hc.Spec.IssuerURL = "http://oidc.example.com"
		}, wantErr: "spec.issuerURL must be an https URL"},
		{name: "issuer with a trailing slash", mutate: func(hc *hypershiftv1alpha1.HostedCluster) {
			hc.Spec.IssuerURL = "https://oidc.example.com/"
		}, wantErr: "spec.issuerURL must be an https URL"},
		{name: "issuer with a query", mutate: func(hc *hypershiftv1alpha1.HostedCluster) {
			hc.Spec.IssuerURL = "https://oidc.example.com/x?a=b"
		}, wantErr: "spec.issuerURL must be an https URL"},
		{name: "issuer with a fragment", mutate: func(hc *hypershiftv1alpha1.HostedCluster) {
			hc.Spec.IssuerURL = "https://oidc.example.com/x#y"
		}, wantErr: "spec.issuerURL must be an https URL"},
		{name: "issuer without a host", mutate: func(hc *hypershiftv1alpha1.HostedCluster) {
			hc.Spec.IssuerURL = "https:///x"
		}, wantErr: "spec.issuerURL must be an https URL"},
		{name: "publishing without an issuer", mutate: func(hc *hypershiftv1alpha1.HostedCluster) {
			hc.Spec.OIDCPublishing = &hypershiftv1alpha1.OIDCPublishingSpec{StorageURL: "file:///srv/oidc"}
		}, wantErr: "spec.oidcPublishing needs spec.issuerURL"},
		{name: "publishing to an unknown scheme", mutate: func(hc *hypershiftv1alpha1.HostedCluster) {
			hc.Spec.IssuerURL = "https://oidc.example.com"
			hc.Spec.OIDCPublishing = &hypershiftv1alpha1.OIDCPublishingSpec{StorageURL: "ftp://x/y"}
		}, wantErr: "spec.oidcPublishing.storageURL must be an s3://, gs://, azblob:// or file:// URL"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			namespace := ns
			if tt.ns != "" {
				namespace = tt.ns
			}
			hc := validCluster(namespace, "c"+strings.Repeat("x", i))
			tt.mutate(hc)
			testenv.ExpectError(t, c.Create(t.Context(), hc), tt.wantErr)
		})
	}

	t.Run("immutable fields", func(t *testing.T) {
		hc := validCluster(ns, "immutable")
		if err := c.Create(t.Context(), hc); err != nil {
			t.Fatal(err)
		}
		updates := []struct {
			mutate  func(hc *hypershiftv1alpha1.HostedCluster)
			wantErr string
		}{
			{func(hc *hypershiftv1alpha1.HostedCluster) {
				hc.Spec.Platform.Type = hypershiftv1alpha1.SimulatedPlatform
			}, "spec.platform.type is immutable"},
			{func(hc *hypershiftv1alpha1.HostedCluster) { hc.Spec.Etcd.ManagementType = hypershiftv1alpha1.Unmanaged }, "spec.etcd.managementType is immutable"},
			// The serving certificate holds the first service address: a
			// new service network would leave it naming the old one.
			{func(hc *hypershiftv1alpha1.HostedCluster) {
				hc.Spec.Networking.ServiceNetwork[0].CIDR = "172.30.0.0/16"
			}, "spec.networking is immutable"},
			{func(hc *hypershiftv1alpha1.HostedCluster) { hc.Spec.Networking.ClusterNetwork[0].HostPrefix = 24 }, "spec.networking is immutable"},
			{func(hc *hypershiftv1alpha1.HostedCluster) {
				hc.Spec.Services = append(hc.Spec.Services, hypershiftv1alpha1.ServicePublishingStrategyMapping{
					Service: hypershiftv1alpha1.Konnectivity, ServicePublishingStrategy: hypershiftv1alpha1.ServicePublishingStrategy{Type: hypershiftv1alpha1.HostPort},
				})
			}, "spec.services is immutable"},
			{func(hc *hypershiftv1alpha1.HostedCluster) { hc.Spec.IssuerURL = "https://oidc.example.com" }, "spec.issuerURL is immutable"},
			{func(hc *hypershiftv1alpha1.HostedCluster) {
				hc.Spec.ServiceAccountSigningKey = &corev1.LocalObjectReference{Name: "k"}
			}, "spec.serviceAccountSigningKey is immutable"},
			// Other updates stay possible.
			{func(hc *hypershiftv1alpha1.HostedCluster) { hc.Spec.PausedUntil = ptr.To("true") }, ""},
		}
		published := validCluster(ns, "immutable-issuer")
		published.Spec.IssuerURL = "https://oidc.example.com/a"
		published.Spec.OIDCPublishing = &hypershiftv1alpha1.OIDCPublishingSpec{StorageURL: "file:///srv/oidc/a"}
		if err := c.Create(t.Context(), published); err != nil {
			t.Fatal(err)
		}
		for _, u := range []struct {
			mutate  func(hc *hypershiftv1alpha1.HostedCluster)
			wantErr string
		}{
			{func(hc *hypershiftv1alpha1.HostedCluster) { hc.Spec.IssuerURL = "https://oidc.example.com/b" }, "spec.issuerURL is immutable"},
			{func(hc *hypershiftv1alpha1.HostedCluster) { hc.Spec.OIDCPublishing.StorageURL = "file:///srv/oidc/b" }, "spec.oidcPublishing.storageURL is immutable"},
			{func(hc *hypershiftv1alpha1.HostedCluster) { hc.Spec.OIDCPublishing = nil }, "spec.oidcPublishing can be neither set nor removed"},
			{func(hc *hypershiftv1alpha1.HostedCluster) { hc.Spec.OIDCPublishing.KeepOnDelete = true }, ""},
		} {
			current := &hypershiftv1alpha1.HostedCluster{}
			if err := c.Get(t.Context(), client.ObjectKeyFromObject(published), current); err != nil {
				t.Fatal(err)
			}
			u.mutate(current)
			testenv.ExpectError(t, c.Update(t.Context(), current), u.wantErr)
		}
		for _, u := range updates {
			current := &hypershiftv1alpha1.HostedCluster{}
			if err := c.Get(t.Context(), client.ObjectKeyFromObject(hc), current); err != nil {
				t.Fatal(err)
			}
			u.mutate(current)
			err := c.Update(t.Context(), current)
			switch {
			case u.wantErr == "" && err != nil:
				t.Errorf("update refused: %v", err)
			case u.wantErr != "" && (err == nil || !strings.Contains(err.Error(), u.wantErr)):
				t.Errorf("update error %v, want %q", err, u.wantErr)
			}
		}
	})

	t.Run("nodepool", func(t *testing.T) {
		np := &hypershiftv1alpha1.NodePool{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "np"},
			Spec: hypershiftv1alpha1.NodePoolSpec{
				ClusterName: "c",
				Replicas:    ptr.To[int32](2),
				AutoScaling: &hypershiftv1alpha1.NodePoolAutoScaling{Min: 1, Max: 3},
				Platform:    hypershiftv1alpha1.NodePoolPlatform{Type: hypershiftv1alpha1.SimulatedPlatform},
			},
		}
		err := c.Create(t.Context(), np)
		if err == nil || !strings.Contains(err.Error(), "spec.replicas and spec.autoScaling are mutually exclusive") {
			t.Errorf("error %v, want the mutual-exclusion message", err)
		}
		np.Spec.Replicas = nil
		np.Spec.AutoScaling = &hypershiftv1alpha1.NodePoolAutoScaling{Min: 3, Max: 1}
		err = c.Create(t.Context(), np)
		if err == nil || !strings.Contains(err.Error(), "spec.autoScaling.max must be greater than or equal to spec.autoScaling.min") {
			t.Errorf("error %v, want the min/max message", err)
		}
	})

	t.Run("joinconfig", func(t *testing.T) {
		for _, tt := range []struct {
			name    string
			spec    hypershiftv1alpha1.JoinConfigSpec
			wantErr string
		}{
			{name: "valid", spec: hypershiftv1alpha1.JoinConfigSpec{NodePool: "workers", TokenTTL: &metav1.Duration{Duration: 2 * time.Hour}}},
			{name: "no pool", spec: hypershiftv1alpha1.JoinConfigSpec{}, wantErr: "spec.nodePool"},
			{name: "a pool name that is not one", spec: hypershiftv1alpha1.JoinConfigSpec{NodePool: "Workers_1"}, wantErr: "spec.nodePool"},
			{
				name: "a token for two days", spec: hypershiftv1alpha1.JoinConfigSpec{NodePool: "workers", TokenTTL: &metav1.Duration{Duration: 48 * time.Hour}},
				wantErr: "spec.tokenTTL must be between 1m and 24h",
			},
		} {
			jc := &hypershiftv1alpha1.JoinConfig{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "jc-"}, Spec: tt.spec}
			err := c.Create(t.Context(), jc)
			if (tt.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("%s: error %v, want %q", tt.name, err, tt.wantErr)
			}
		}
	})

	t.Run("nodepool fields that would do nothing", func(t *testing.T) {
		pool := func(platform hypershiftv1alpha1.PlatformType) *hypershiftv1alpha1.NodePool {
			return &hypershiftv1alpha1.NodePool{Spec: hypershiftv1alpha1.NodePoolSpec{
				ClusterName: "c",
				Replicas:    ptr.To[int32](1),
				Platform:    hypershiftv1alpha1.NodePoolPlatform{Type: platform},
				Management:  hypershiftv1alpha1.NodePoolManagement{UpgradeType: hypershiftv1alpha1.UpgradeTypeReplace},
			}}
		}
		autoscaled := func(np *hypershiftv1alpha1.NodePool) {
			np.Spec.Replicas = nil
			np.Spec.AutoScaling = &hypershiftv1alpha1.NodePoolAutoScaling{Min: 1, Max: 3}
		}
		pools := []struct {
			name     string
			platform hypershiftv1alpha1.PlatformType
			mutate   func(np *hypershiftv1alpha1.NodePool)
			wantErr  string // empty: accepted
		}{
			{name: "none pool", platform: hypershiftv1alpha1.NonePlatform, mutate: func(*hypershiftv1alpha1.NodePool) {}},
			{name: "none pool sized by joins", platform: hypershiftv1alpha1.NonePlatform, mutate: func(np *hypershiftv1alpha1.NodePool) {
				np.Spec.Replicas = nil
			}},
			{
				name: "none pool autoscaled", platform: hypershiftv1alpha1.NonePlatform, mutate: autoscaled,
				wantErr: "spec.autoScaling is not supported on platform None",
			},
			{name: "none pool autorepaired", platform: hypershiftv1alpha1.NonePlatform, mutate: func(np *hypershiftv1alpha1.NodePool) {
				np.Spec.Management.AutoRepair = true
			}, wantErr: "spec.management.autoRepair is not supported on platform None"},
			{name: "simulated pool autoscaled and autorepaired", platform: hypershiftv1alpha1.SimulatedPlatform, mutate: func(np *hypershiftv1alpha1.NodePool) {
				autoscaled(np)
				np.Spec.Management.AutoRepair = true
			}},
			{name: "in-place upgrades", platform: hypershiftv1alpha1.SimulatedPlatform, mutate: func(np *hypershiftv1alpha1.NodePool) {
				np.Spec.Management.UpgradeType = hypershiftv1alpha1.UpgradeTypeInPlace
				np.Spec.Management.InPlace = &hypershiftv1alpha1.InPlaceUpgrade{MaxUnavailable: ptr.To(intstr.FromString("50%"))}
			}},
			{name: "in-place maxUnavailable 0", platform: hypershiftv1alpha1.SimulatedPlatform, mutate: func(np *hypershiftv1alpha1.NodePool) {
				np.Spec.Management.UpgradeType = hypershiftv1alpha1.UpgradeTypeInPlace
				np.Spec.Management.InPlace = &hypershiftv1alpha1.InPlaceUpgrade{MaxUnavailable: ptr.To(intstr.FromInt32(0))}
			}, wantErr: "spec.management.inPlace.maxUnavailable must be a positive number"},
			{name: "inPlace block on a Replace pool", platform: hypershiftv1alpha1.SimulatedPlatform, mutate: func(np *hypershiftv1alpha1.NodePool) {
				np.Spec.Management.InPlace = &hypershiftv1alpha1.InPlaceUpgrade{MaxUnavailable: ptr.To(intstr.FromInt32(1))}
			}, wantErr: "spec.management.inPlace applies only to upgradeType InPlace"},
			{name: "replace block on an InPlace pool", platform: hypershiftv1alpha1.SimulatedPlatform, mutate: func(np *hypershiftv1alpha1.NodePool) {
				np.Spec.Management.UpgradeType = hypershiftv1alpha1.UpgradeTypeInPlace
				np.Spec.Management.Replace = &hypershiftv1alpha1.ReplaceUpgrade{}
			}, wantErr: "spec.management.replace applies only to upgradeType Replace"},
			{name: "rolling update", platform: hypershiftv1alpha1.SimulatedPlatform, mutate: func(np *hypershiftv1alpha1.NodePool) {
				np.Spec.Management.Replace = &hypershiftv1alpha1.ReplaceUpgrade{RollingUpdate: &hypershiftv1alpha1.RollingUpdate{
					MaxUnavailable: ptr.To(intstr.FromString("25%")), MaxSurge: ptr.To(intstr.FromInt32(2)),
				}}
			}},
			{name: "rolling update that cannot move", platform: hypershiftv1alpha1.SimulatedPlatform, mutate: func(np *hypershiftv1alpha1.NodePool) {
				np.Spec.Management.Replace = &hypershiftv1alpha1.ReplaceUpgrade{RollingUpdate: &hypershiftv1alpha1.RollingUpdate{
					MaxUnavailable: ptr.To(intstr.FromInt32(0)), MaxSurge: ptr.To(intstr.FromInt32(0)),
				}}
			}, wantErr: "maxSurge and maxUnavailable cannot both be 0"},
			{name: "rolling update with a bad percentage", platform: hypershiftv1alpha1.SimulatedPlatform, mutate: func(np *hypershiftv1alpha1.NodePool) {
				np.Spec.Management.Replace = &hypershiftv1alpha1.ReplaceUpgrade{RollingUpdate: &hypershiftv1alpha1.RollingUpdate{
					MaxSurge: ptr.To(intstr.FromString("lots")),
				}}
			}, wantErr: "spec.management.replace.rollingUpdate.maxSurge must be a non-negative number or a percentage"},
			{name: "none pool upgraded in place", platform: hypershiftv1alpha1.NonePlatform, mutate: func(np *hypershiftv1alpha1.NodePool) {
				np.Spec.Management.UpgradeType = hypershiftv1alpha1.UpgradeTypeInPlace
				np.Spec.Management.InPlace = &hypershiftv1alpha1.InPlaceUpgrade{MaxUnavailable: ptr.To(intstr.FromInt32(1))}
			}},
			{name: "none pool with rolling-update bounds", platform: hypershiftv1alpha1.NonePlatform, mutate: func(np *hypershiftv1alpha1.NodePool) {
				np.Spec.Management.Replace = &hypershiftv1alpha1.ReplaceUpgrade{}
			}, wantErr: "spec.management.replace is not supported on platform None: nothing can create machines"},
			{name: "host pool autoscaled and autorepaired", platform: hypershiftv1alpha1.HostPlatform, mutate: func(np *hypershiftv1alpha1.NodePool) {
				autoscaled(np)
				np.Spec.Management.AutoRepair = true
				np.Spec.Management.Replace = &hypershiftv1alpha1.ReplaceUpgrade{RollingUpdate: &hypershiftv1alpha1.RollingUpdate{MaxSurge: ptr.To(intstr.FromInt32(2))}}
			}},
			{name: "host pool upgraded in place", platform: hypershiftv1alpha1.HostPlatform, mutate: func(np *hypershiftv1alpha1.NodePool) {
				np.Spec.Management.UpgradeType = hypershiftv1alpha1.UpgradeTypeInPlace
			}, wantErr: "spec.management.upgradeType InPlace is not supported on platform Host"},
			{name: "kubernetes version", platform: hypershiftv1alpha1.SimulatedPlatform, mutate: func(np *hypershiftv1alpha1.NodePool) {
				np.Spec.KubernetesVersion = "v1.36.3"
			}},
			{name: "kubernetes version without v", platform: hypershiftv1alpha1.SimulatedPlatform, mutate: func(np *hypershiftv1alpha1.NodePool) {
				np.Spec.KubernetesVersion = "1.36.3"
			}, wantErr: "spec.kubernetesVersion must look like v1.MINOR.PATCH"},
			{name: "upgrade type defaulted", platform: hypershiftv1alpha1.SimulatedPlatform, mutate: func(np *hypershiftv1alpha1.NodePool) {
				np.Spec.Management = hypershiftv1alpha1.NodePoolManagement{}
			}},
			{name: "bad pausedUntil", platform: hypershiftv1alpha1.SimulatedPlatform, mutate: func(np *hypershiftv1alpha1.NodePool) {
				np.Spec.PausedUntil = ptr.To("tomorrow")
			}, wantErr: "spec.pausedUntil must be an RFC 3339 date"},
			{name: "pausedUntil date", platform: hypershiftv1alpha1.SimulatedPlatform, mutate: func(np *hypershiftv1alpha1.NodePool) {
				np.Spec.PausedUntil = ptr.To("2030-01-02T03:04:05+01:00")
			}},
			{name: "paused indefinitely", platform: hypershiftv1alpha1.SimulatedPlatform, mutate: func(np *hypershiftv1alpha1.NodePool) {
				np.Spec.PausedUntil = ptr.To("true")
			}},
		}
		t.Run("none pool version is set once", func(t *testing.T) {
			np := pool(hypershiftv1alpha1.NonePlatform)
			np.Namespace, np.Name = ns, "none-version"
			if err := c.Create(t.Context(), np); err != nil {
				t.Fatal(err)
			}
			np.Spec.KubernetesVersion = "v1.37.1" // the controller's pinning
			if err := c.Update(t.Context(), np); err != nil {
				t.Fatalf("pinning the version of a None pool: %v", err)
			}
			np.Spec.KubernetesVersion = "v1.36.3"
			err := c.Update(t.Context(), np)
			if err == nil || !strings.Contains(err.Error(), "spec.kubernetesVersion cannot be changed on platform None") {
				t.Fatalf("changing the version of a None pool: %v, want the refusal naming the field", err)
			}
		})
		t.Run("none pool upgraded in place changes its version", func(t *testing.T) {
			np := pool(hypershiftv1alpha1.NonePlatform)
			np.Namespace, np.Name = ns, "none-inplace-version"
			np.Spec.KubernetesVersion = "v1.36.3"
			np.Spec.Management.UpgradeType = hypershiftv1alpha1.UpgradeTypeInPlace
			if err := c.Create(t.Context(), np); err != nil {
				t.Fatal(err)
			}
			np.Spec.KubernetesVersion = "v1.37.1"
			if err := c.Update(t.Context(), np); err != nil {
				t.Fatalf("upgrading an InPlace None pool: %v", err)
			}
		})
		for i, tt := range pools {
			t.Run(tt.name, func(t *testing.T) {
				np := pool(tt.platform)
				np.Namespace, np.Name = ns, "pool"+strings.Repeat("x", i)
				tt.mutate(np)
				testenv.ExpectError(t, c.Create(t.Context(), np), tt.wantErr)
			})
		}
	})
}
