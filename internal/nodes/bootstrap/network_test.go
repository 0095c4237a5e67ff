package bootstrap

import (
	"strings"
	"testing"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
)

func TestNetworkOf(t *testing.T) {
	hc := hypershiftv1alpha1.NewHostedCluster("clusters", "r", hypershiftv1alpha1.NonePlatform, "")
	hc.Spec.Networking.ServiceNetwork[0].CIDR = "10.96.0.0/12"
	hc.Spec.Networking.ClusterNetwork[0].CIDR = "10.244.0.0/16"
	hc.Spec.Networking.APIServer = &hypershiftv1alpha1.APIServerNetworking{AdvertiseAddress: "172.20.0.7", Port: 7443}
	got, err := NetworkOf(hc.Spec.Networking)
	if err != nil {
		t.Fatal(err)
	}
	want := Network{
		ServiceCIDR: "10.96.0.0/12", ClusterCIDR: "10.244.0.0/16", ClusterDNS: "10.96.0.10", ClusterDomain: "cluster.local",
		APIServerAdvertiseAddress: "172.20.0.7", APIServerPort: 7443,
	}
	if got != want {
		t.Errorf("NetworkOf = %+v, want %+v", got, want)
	}
	// Stored before spec.networking.apiServer existed: its defaults.
	hc.Spec.Networking.APIServer = nil
	if got, _ := NetworkOf(hc.Spec.Networking); got.APIServerAdvertiseAddress != "172.20.0.1" || got.APIServerPort != 6443 {
		t.Errorf("default API server address %s:%d, want 172.20.0.1:6443", got.APIServerAdvertiseAddress, got.APIServerPort)
	}
}

// Join information without the network (published by an older operator)
// is refused with the keys it lacks; malformed values name the key.
func TestParseNetwork(t *testing.T) {
	good := map[string]string{
		JoinInfoServiceCIDR: "172.31.0.0/16", JoinInfoClusterCIDR: "10.132.0.0/14", JoinInfoClusterDNS: "172.31.0.10",
		JoinInfoClusterDomain: "cluster.local", JoinInfoAPIServerAdvertiseAddress: "172.20.0.1", JoinInfoAPIServerPort: "6443",
	}
	n, err := ParseNetwork(good)
	if err != nil || n.APIServerPort != 6443 || n.ClusterDNS != "172.31.0.10" {
		t.Fatalf("ParseNetwork = %+v, %v", n, err)
	}
	if _, err := ParseNetwork(map[string]string{JoinInfoCluster: "clusters/r"}); err == nil ||
		!strings.Contains(err.Error(), "lacks serviceCIDR, clusterCIDR, clusterDNS, clusterDomain, apiServerAdvertiseAddress, apiServerPort") ||
		!strings.Contains(err.Error(), "upgrade the management plane") {
		t.Errorf("old join information: %v", err)
	}
	for key, bad := range map[string]string{
		JoinInfoServiceCIDR: "172.31.0.0", JoinInfoClusterDNS: "fd00::a", JoinInfoAPIServerPort: "70000",
	} {
		data := map[string]string{}
		for k, v := range good {
			data[k] = v
		}
		data[key] = bad
		if _, err := ParseNetwork(data); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s %q: %v, want an error naming it", key, bad, err)
		}
	}
}
