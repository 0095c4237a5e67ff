package v1alpha1_test

import (
	"testing"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
)

func TestPublishingFor(t *testing.T) {
	nodePort := func(addr string, port int32) hypershiftv1alpha1.ServicePublishingStrategy {
		return hypershiftv1alpha1.ServicePublishingStrategy{
			Type:     hypershiftv1alpha1.NodePort,
			NodePort: &hypershiftv1alpha1.NodePortPublishingStrategy{Address: addr, Port: port},
		}
	}
	api := hypershiftv1alpha1.ServicePublishingStrategyMapping{Service: hypershiftv1alpha1.APIServer, ServicePublishingStrategy: nodePort("10.0.0.1", 30443)}
	konn := hypershiftv1alpha1.ServicePublishingStrategyMapping{Service: hypershiftv1alpha1.Konnectivity, ServicePublishingStrategy: nodePort("10.0.0.2", 30091)}

	if got := hypershiftv1alpha1.PublishingFor(nil, hypershiftv1alpha1.APIServer); got.Type != hypershiftv1alpha1.HostPort {
		t.Errorf("nothing listed: %s, want HostPort", got.Type)
	}
	got := hypershiftv1alpha1.PublishingFor([]hypershiftv1alpha1.ServicePublishingStrategyMapping{api}, hypershiftv1alpha1.Konnectivity)
	if got.Address() != "10.0.0.1" || got.NodePort.Port != 0 {
		t.Errorf("Konnectivity not listed: %+v, want the API server's address on a node port of its own", got.NodePort)
	}
	if api.NodePort.Port != 30443 {
		t.Error("following the API server changed the API server's own entry")
	}
	got = hypershiftv1alpha1.PublishingFor([]hypershiftv1alpha1.ServicePublishingStrategyMapping{api, konn}, hypershiftv1alpha1.Konnectivity)
	if got.Address() != "10.0.0.2" || got.NodePort.Port != 30091 {
		t.Errorf("Konnectivity listed: %+v, want its own entry", got.NodePort)
	}
}
