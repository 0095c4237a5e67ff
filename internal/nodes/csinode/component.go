package csinode

import (
	"context"
	"errors"
	"os"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	"k8s.io/klog/v2"

	"hypershift.dev/internal/components"
	"hypershift.dev/internal/nodes/health"
)

// Name is the component the node daemon runs the plugin as.
const Name = "csi-node"

// Components returns the registration of the plugin's component.
func Components() components.Registry {
	return components.Registry{{Name: Name, Main: main}}
}

// Options configure the component.
type Options struct {
	// NodeID is the guest Node's name.
	NodeID string
	// AttachedDir is where the machine has the volumes attached to it.
	AttachedDir string
	// KubeletDir is the kubelet's root directory: the plugin serves on
	// KubeletDir/plugins/csi.hypershift.dev/csi.sock, registers through
	// KubeletDir/plugins_registry and publishes under KubeletDir/pods.
	KubeletDir string
	// HealthListen serves /healthz: ok while the plugin's socket exists.
	HealthListen string
}

// Args renders o as the component's arguments.
func (o Options) Args() []string {
	return []string{
		"--node-id=" + o.NodeID, "--attached-dir=" + o.AttachedDir,
		"--kubelet-dir=" + o.KubeletDir, "--health-listen=" + o.HealthListen,
	}
}

// Endpoint is the plugin's CSI socket under the kubelet's directory.
func (o Options) Endpoint() string {
	return o.KubeletDir + "/plugins/" + Driver + "/csi.sock"
}

func main(ctx context.Context, args []string) error {
	var o Options
	fs := pflag.NewFlagSet(Name, pflag.ContinueOnError)
	fs.StringVar(&o.NodeID, "node-id", "", "the Node's name")
	fs.StringVar(&o.AttachedDir, "attached-dir", "", "where the volumes attached to this machine appear, one mount point per volume handle")
	fs.StringVar(&o.KubeletDir, "kubelet-dir", "", "the kubelet's root directory")
	fs.StringVar(&o.HealthListen, "health-listen", "", "address of /healthz")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.NodeID == "" || o.AttachedDir == "" || o.KubeletDir == "" || o.HealthListen == "" {
		return errors.New("--node-id, --attached-dir, --kubelet-dir and --health-listen are required")
	}
	return Run(ctx, o, klog.Background())
}

// Run serves the plugin until ctx ends.
func Run(ctx context.Context, o Options, log logr.Logger) error {
	p := &Plugin{NodeID: o.NodeID, AttachedDir: o.AttachedDir, PodsDir: o.KubeletDir + "/pods", Log: log}
	srv, err := health.Serve(o.HealthListen, func() error {
		if fi, err := os.Stat(o.Endpoint()); err != nil || fi.Mode()&os.ModeSocket == 0 {
			return errors.New("the plugin's socket is not there yet")
		}
		return nil
	})
	if err != nil {
		return err
	}
	defer srv.Close()
	return Serve(ctx, p, o.Endpoint(), o.KubeletDir+"/plugins_registry")
}
