package v1alpha1

// ServiceType names a control-plane service that is published.
type ServiceType string

const (
	// APIServer is the hosted kube-apiserver.
	APIServer ServiceType = "APIServer"
	// Konnectivity is the Konnectivity server the nodes' agents dial. When
	// it is not listed it is published like the API server (HostPort: a
	// port of its own; NodePort: the same address, a node port of its own;
	// LoadBalancer: the same hostname).
	Konnectivity ServiceType = "Konnectivity"
)

// PublishingStrategyType says how a control-plane service is reached.
// Which ones work depends on the runtime the operator runs control planes
// with, and the admission policy installed with it refuses the others:
// HostPort for the process runtime (`hypershift up`), NodePort and
// LoadBalancer for the kube runtime (`hypershift install`). Route is
// HyperShift's OpenShift-only strategy; it is declared so that such specs
// are refused with a reason rather than as unknown values.
//
// +kubebuilder:validation:Enum=HostPort;LoadBalancer;NodePort;Route
type PublishingStrategyType string

const (
	// HostPort publishes the service on a port of the management host
	// (the process runtime's way).
	HostPort PublishingStrategyType = "HostPort"
	// NodePort publishes the service on a node port of the management
	// cluster (the kube runtime).
	NodePort PublishingStrategyType = "NodePort"
	// LoadBalancer publishes the service through a load balancer of the
	// management cluster (the kube runtime).
	LoadBalancer PublishingStrategyType = "LoadBalancer"
	// Route is not supported.
	Route PublishingStrategyType = "Route"
)

// NodePortPublishingStrategy is where a NodePort service is reached.
type NodePortPublishingStrategy struct {
	// address is the address (IP or DNS name) of the management cluster's
	// nodes that clients use; it is put into the serving certificate.
	//
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Address string `json:"address"`
	// port fixes the node port; unset lets the management cluster choose.
	//
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port,omitempty"`
}

// LoadBalancerPublishingStrategy is where a LoadBalancer service is reached.
type LoadBalancerPublishingStrategy struct {
	// hostname is the DNS name clients use, pointed at the load balancer's
	// address; it is put into the serving certificate (the address the
	// load balancer gets is only known later).
	//
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Hostname string `json:"hostname"`
}

// ServicePublishingStrategy says how one service is published.
//
// +kubebuilder:validation:XValidation:rule="self.type != 'NodePort' || has(self.nodePort)",message="spec.services[].servicePublishingStrategy.nodePort.address is required for type NodePort: the address of the management cluster's nodes that clients use"
// +kubebuilder:validation:XValidation:rule="self.type != 'LoadBalancer' || has(self.loadBalancer)",message="spec.services[].servicePublishingStrategy.loadBalancer.hostname is required for type LoadBalancer: the DNS name clients use"
// +kubebuilder:validation:XValidation:rule="!has(self.nodePort) || self.type == 'NodePort'",message="spec.services[].servicePublishingStrategy.nodePort is only for type NodePort"
// +kubebuilder:validation:XValidation:rule="!has(self.loadBalancer) || self.type == 'LoadBalancer'",message="spec.services[].servicePublishingStrategy.loadBalancer is only for type LoadBalancer"
type ServicePublishingStrategy struct {
	// type is the publishing strategy: HostPort (process runtime), NodePort
	// or LoadBalancer (kube runtime).
	//
	// +kubebuilder:validation:XValidation:rule="self != 'Route'",message="spec.services[].servicePublishingStrategy.type Route is not supported: use HostPort (process runtime), NodePort or LoadBalancer (kube runtime)"
	Type PublishingStrategyType `json:"type"`
	// nodePort is where a NodePort service is reached.
	//
	// +optional
	NodePort *NodePortPublishingStrategy `json:"nodePort,omitempty"`
	// loadBalancer is where a LoadBalancer service is reached.
	//
	// +optional
	LoadBalancer *LoadBalancerPublishingStrategy `json:"loadBalancer,omitempty"`
}

// Address is the host clients are given for a NodePort or LoadBalancer
// service; empty for HostPort (the operator's endpoint host).
func (s ServicePublishingStrategy) Address() string {
	switch {
	case s.Type == NodePort && s.NodePort != nil:
		return s.NodePort.Address
	case s.Type == LoadBalancer && s.LoadBalancer != nil:
		return s.LoadBalancer.Hostname
	}
	return ""
}

// ServicePublishingStrategyMapping maps a service to its publishing strategy.
type ServicePublishingStrategyMapping struct {
	// service is the published service.
	//
	// +kubebuilder:validation:Enum=APIServer;Konnectivity
	Service ServiceType `json:"service"`
	// servicePublishingStrategy says how it is published.
	ServicePublishingStrategy `json:"servicePublishingStrategy"`
}

// PublishingFor returns how service is published: its own entry, else the
// API server's (the Konnectivity server follows it, on a port of its own),
// else HostPort.
func PublishingFor(services []ServicePublishingStrategyMapping, service ServiceType) ServicePublishingStrategy {
	var api *ServicePublishingStrategy
	for i := range services {
		switch services[i].Service {
		case service:
			s := services[i].ServicePublishingStrategy
			return s
		case APIServer:
			api = &services[i].ServicePublishingStrategy
		}
	}
	if api != nil {
		s := *api
		if s.NodePort != nil {
			np := *s.NodePort
			np.Port = 0 // a node port of its own
			s.NodePort = &np
		}
		return s
	}
	return ServicePublishingStrategy{Type: HostPort}
}
