// Package podnet routes pod networks between nodes with flannel's host-gw
// backend, built from its Go module: each node's pod CIDR (the controller
// manager's) is reached through that node's address. It runs as a process
// of the node daemon, with the kubelet's credentials.
package podnet

import (
	"context"
	"fmt"
	"os"
	"sync"

	"github.com/flannel-io/flannel/pkg/backend"
	_ "github.com/flannel-io/flannel/pkg/backend/hostgw" // the host-gw backend registers itself
	"github.com/flannel-io/flannel/pkg/ipmatch"
	"github.com/flannel-io/flannel/pkg/subnet/kube"
	"github.com/spf13/pflag"

	"hypershift.dev/internal/components"
	"hypershift.dev/internal/nodes/health"
)

// Name is the component's name.
const Name = "pod-network"

// Components returns the registration of the pod network component.
func Components() components.Registry {
	return components.Registry{{Name: Name, Main: main}}
}

// Options configure the component.
type Options struct {
	Kubeconfig, NetConf, NodeName, PublicIP, HealthListen string
}

// Args renders o as the component's arguments.
func (o Options) Args() []string {
	return []string{
		"--kubeconfig=" + o.Kubeconfig, "--net-conf=" + o.NetConf, "--node-name=" + o.NodeName,
		"--public-ip=" + o.PublicIP, "--health-listen=" + o.HealthListen,
	}
}

func main(ctx context.Context, args []string) error {
	var o Options
	fs := pflag.NewFlagSet(Name, pflag.ContinueOnError)
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "the node's kubeconfig")
	fs.StringVar(&o.NetConf, "net-conf", "", "flannel network configuration file")
	fs.StringVar(&o.NodeName, "node-name", "", "the Node's name")
	fs.StringVar(&o.PublicIP, "public-ip", "", "the node's address")
	fs.StringVar(&o.HealthListen, "health-listen", "", "address of /healthz")
	if err := fs.Parse(args); err != nil {
		return err
	}
	return Run(ctx, o)
}

// Run routes until ctx ends; /healthz answers once the network is
// registered.
func Run(ctx context.Context, o Options) error {
	// flannel's kube subnet manager finds its Node by this variable.
	if err := os.Setenv("NODE_NAME", o.NodeName); err != nil {
		return err
	}
	sm, err := kube.NewSubnetManager(ctx, "", o.Kubeconfig, "flannel.alpha.coreos.com", o.NetConf, false)
	if err != nil {
		return fmt.Errorf("flannel subnet manager: %w", err)
	}
	config, err := sm.GetNetworkConfig(ctx)
	if err != nil {
		return err
	}
	stack, err := ipmatch.GetIPFamily(config.EnableIPv4, config.EnableIPv6)
	if err != nil {
		return err
	}
	iface, err := ipmatch.LookupExtIface(o.PublicIP, "", "", stack, ipmatch.PublicIPOpts{PublicIP: o.PublicIP})
	if err != nil {
		return err
	}
	be, err := backend.NewManager(ctx, sm, iface).GetBackend(config.BackendType)
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	bn, err := be.RegisterNetwork(ctx, &wg, config)
	if err != nil {
		return err
	}
	srv, err := health.Serve(o.HealthListen, func() error { return nil })
	if err != nil {
		return err
	}
	defer srv.Close()
	bn.Run(ctx)
	wg.Wait()
	return nil
}
