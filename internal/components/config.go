package components

import (
	"hypershift.dev/internal/pki"
)

// Component names, as compiled into the binary.
const (
	Etcd                  = "etcd"
	KubeAPIServer         = "kube-apiserver"
	KubeControllerManager = "kube-controller-manager"
	KubeScheduler         = "kube-scheduler"
)

// Config is everything a control plane's components are rendered from.
type Config struct {
	// Name identifies the control plane (its namespace, NS-NAME).
	Name string
	// Dir is the directory that holds one directory per instance.
	Dir string
	// PKI holds the control plane's certificates and keys.
	PKI *pki.ControlPlane
	// Ports are the ports the instances listen on.
	Ports Ports
	// AdvertiseAddress is the API server's address for the `kubernetes`
	// Service; empty turns the endpoint reconciler off.
	AdvertiseAddress string
	// ServiceCIDR and ClusterCIDR are the service and pod ranges.
	ServiceCIDR string
	ClusterCIDR string
	// NodeCIDRMaskSize is the prefix length of each node's pod range.
	NodeCIDRMaskSize int
	// Management renders a management plane: no scheduler, and only the
	// controllers a management plane needs.
	Management bool
}

// Render returns the control plane's instances in start order.
func Render(cfg Config) ([]Spec, error) {
	kcm, err := renderKubeControllerManager(cfg)
	if err != nil {
		return nil, err
	}
	specs := []Spec{renderEtcd(cfg), renderKubeAPIServer(cfg), kcm}
	if cfg.Management {
		return specs, nil
	}
	scheduler, err := renderKubeScheduler(cfg)
	if err != nil {
		return nil, err
	}
	return append(specs, scheduler), nil
}
