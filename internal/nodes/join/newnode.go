package join

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"hypershift.dev/internal/hostnet"
)

// NodeOptions are what the user chose for a joining host; empty fields
// take this host's values.
type NodeOptions struct {
	// Name of the Node; default: the host name, lower case.
	Name string
	// IP the API server reaches the kubelet on; default: the host's
	// first global IPv4.
	IP string
	// DataDir is the node directory.
	DataDir string
	// KubeletPort is the kubelet's port; default 10250.
	KubeletPort int
	// ProviderID is the Node's spec.providerID, as the machine's provider
	// names it; empty: none.
	ProviderID string
	// VolumesDir is where the machine has its attached volumes; set, the
	// node runs the CSI plugin. Empty: none.
	VolumesDir string
}

// NewNode describes this host as a node of cluster c.
func NewNode(c *Cluster, prereq Prerequisites, opts NodeOptions) (*Node, error) {
	name := opts.Name
	if name == "" {
		host, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("host name: %w (set --node-name)", err)
		}
		name = strings.ToLower(host)
	}
	ip := opts.IP
	if ip == "" {
		addr := hostnet.HostIPv4()
		if addr == nil {
			return nil, errors.New("this host has no global IPv4 address for the kubelet: set --node-ip")
		}
		ip = addr.String()
	}
	port := opts.KubeletPort
	if port == 0 {
		port = DefaultKubeletPort
	}
	return &Node{
		Cluster: c.Name, NodePool: c.NodePool, Name: name, Server: c.Server, NodeIP: ip,
		ContainerdPath: prereq.Containerd, CNIBinDir: prereq.CNIBinDir,
		CA: string(c.CAPEM), ClientCA: string(c.ClientCAPEM), Network: c.Network,
		Ports:      map[string]int{portKubelet: port},
		DataDir:    opts.DataDir,
		ProviderID: opts.ProviderID,
		VolumesDir: opts.VolumesDir,
	}, nil
}
