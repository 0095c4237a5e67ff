// Package embedded is the one package that links k8s.io/kubernetes. It exposes
// the upstream component commands so that the hypershift binary can run them as
// `hypershift component <name> <upstream flags>`. Keeping this import in a
// single leaf keeps every other package (and its test binary) small.
package embedded

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"go.etcd.io/etcd/server/v3/etcdmain"
	apiserverapp "k8s.io/kubernetes/cmd/kube-apiserver/app"
	kcmapp "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	schedulerapp "k8s.io/kubernetes/cmd/kube-scheduler/app"
	kubeletapp "k8s.io/kubernetes/cmd/kubelet/app"
)

// Names of the components compiled into the binary.
const (
	Etcd                  = "etcd"
	KubeAPIServer         = "kube-apiserver"
	KubeControllerManager = "kube-controller-manager"
	KubeScheduler         = "kube-scheduler"
	// Kubelet is a node's agent, run by `hypershift join`.
	Kubelet = "kubelet"
)

// Names lists the components that Run accepts, in start order.
func Names() []string {
	return []string{Etcd, KubeAPIServer, KubeControllerManager, KubeScheduler, Kubelet}
}

// Run executes the named upstream component with args (flags only, without
// the program name). It returns when the component exits.
func Run(ctx context.Context, name string, args []string) error {
	switch name {
	case Etcd:
		// etcdmain parses os.Args itself and exits the process on fatal errors.
		etcdmain.Main(append([]string{"etcd"}, args...))
		return nil
	case KubeAPIServer:
		return runCobra(ctx, apiserverapp.NewAPIServerCommand(), args)
	case KubeControllerManager:
		return runCobra(ctx, kcmapp.NewControllerManagerCommand(), args)
	case KubeScheduler:
		return runCobra(ctx, schedulerapp.NewSchedulerCommand(), args)
	case KubeControlPlane:
		return runCombined(ctx, args)
	case Kubelet:
		return runCobra(ctx, kubeletapp.NewKubeletCommand(ctx), args)
	default:
		return fmt.Errorf("unknown component %q (known: %v)", name, Names())
	}
}

func runCobra(ctx context.Context, cmd *cobra.Command, args []string) error {
	cmd.SetArgs(args)
	// A flag or start-up error should end in one line, not the usage text.
	cmd.SilenceUsage = true
	cmd.SetOut(os.Stdout)
	cmd.SetErr(os.Stderr)
	return cmd.ExecuteContext(ctx)
}
