package kubevirt

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/controller/nodepool/platform"
)

// TestValidate: a pool's VirtualMachines on the management cluster join
// only networks of the cluster's control-plane namespace, and have at
// least 1Gi of memory and of root volume; each refusal names the field.
func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name     string
		external bool
		edit     func(*hypershiftv1alpha1.KubeVirtNodePoolPlatform)
		want     string
	}{
		{name: "plain"},
		{name: "own network", edit: func(kv *hypershiftv1alpha1.KubeVirtNodePoolPlatform) {
			kv.AdditionalNetworks = []hypershiftv1alpha1.KubeVirtNetwork{{Name: "clusters-dev/vlan10"}}
		}},
		{name: "another tenant's network", edit: func(kv *hypershiftv1alpha1.KubeVirtNodePoolPlatform) {
			kv.AdditionalNetworks = []hypershiftv1alpha1.KubeVirtNetwork{{Name: "other-tenant/private"}}
		}, want: "spec.platform.kubevirt.additionalNetworks: other-tenant/private is not of the cluster's control-plane namespace clusters-dev"},
		{name: "a network of the external infrastructure", external: true, edit: func(kv *hypershiftv1alpha1.KubeVirtNodePoolPlatform) {
			kv.AdditionalNetworks = []hypershiftv1alpha1.KubeVirtNetwork{{Name: "net/vlan10"}}
		}},
		{name: "no network", edit: func(kv *hypershiftv1alpha1.KubeVirtNodePoolPlatform) {
			kv.AttachDefaultNetwork = ptr.To(false)
		}, want: "attachDefaultNetwork false needs an additional network"},
		{name: "little memory", edit: func(kv *hypershiftv1alpha1.KubeVirtNodePoolPlatform) {
			kv.Compute.Memory = ptr.To(resource.MustParse("512Mi"))
		}, want: "spec.platform.kubevirt.compute.memory 512Mi is less than 1Gi"},
		{name: "small volume", edit: func(kv *hypershiftv1alpha1.KubeVirtNodePoolPlatform) {
			kv.RootVolume.Persistent = &hypershiftv1alpha1.KubeVirtPersistentVolume{Size: ptr.To(resource.MustParse("100Mi"))}
		}, want: "spec.platform.kubevirt.rootVolume.persistent.size 100Mi is less than 1Gi"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hc := hypershiftv1alpha1.NewHostedCluster("clusters", "dev", hypershiftv1alpha1.KubeVirtPlatform, "v1.37.1")
			hc.Spec.Platform.KubeVirt = &hypershiftv1alpha1.KubeVirtPlatformSpec{}
			if tc.external {
				hc.Spec.Platform.KubeVirt.Credentials = &hypershiftv1alpha1.KubeVirtPlatformCredentials{InfraNamespace: "net"}
			}
			np := &hypershiftv1alpha1.NodePool{}
			np.Spec.Platform.KubeVirt = &hypershiftv1alpha1.KubeVirtNodePoolPlatform{}
			if tc.edit != nil {
				tc.edit(np.Spec.Platform.KubeVirt)
			}
			err := validate(&platform.Pool{HostedCluster: hc, NodePool: np})
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("%v, want an error containing %q", err, tc.want)
			}
		})
	}
}
