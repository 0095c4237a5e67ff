// Package v1alpha1 contains the hypershift.dev/v1alpha1 API: HostedCluster,
// NodePool and HostedControlPlane, the addons' ObjectDeployment and
// ObjectSet, and JoinConfig and JoinConfigTemplate, the bootstrap provider's
// kinds of Cluster API.
//
// +kubebuilder:object:generate=true
// +groupName=hypershift.dev
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "hypershift.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the types of this API with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the types of this API to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&HostedCluster{}, &HostedClusterList{},
		&HostedControlPlane{}, &HostedControlPlaneList{},
		&NodePool{}, &NodePoolList{},
		&ObjectDeployment{}, &ObjectDeploymentList{},
		&ObjectSet{}, &ObjectSetList{},
		&JoinConfig{}, &JoinConfigList{},
		&JoinConfigTemplate{}, &JoinConfigTemplateList{},
		&HostCluster{}, &HostClusterList{},
		&HostMachine{}, &HostMachineList{},
		&HostMachineTemplate{}, &HostMachineTemplateList{},
	)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
