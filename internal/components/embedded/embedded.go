// Package embedded is the one package that links k8s.io/kubernetes. It exposes
// the upstream component commands so that the hypershift binary can run them as
// `hypershift component <name> <upstream flags>`. Keeping this import in a
// single leaf keeps every other package (and its test binary) small.
package embedded

import (
	"context"
	"os"

	"github.com/spf13/cobra"
	"go.etcd.io/etcd/server/v3/etcdmain"
	apiserverapp "k8s.io/kubernetes/cmd/kube-apiserver/app"
	kcmapp "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	proxyapp "k8s.io/kubernetes/cmd/kube-proxy/app"
	schedulerapp "k8s.io/kubernetes/cmd/kube-scheduler/app"
	kubeletapp "k8s.io/kubernetes/cmd/kubelet/app"

	"hypershift.dev/internal/components"
	"hypershift.dev/internal/components/etcdhandover"
)

// Names of the components compiled into the binary.
const (
	Etcd                  = components.Etcd
	KubeAPIServer         = components.KubeAPIServer
	KubeControllerManager = components.KubeControllerManager
	KubeScheduler         = components.KubeScheduler
	// Kubelet is a node's agent, run by `hypershift join`.
	Kubelet = "kubelet"
	// KubeProxy routes Services on a real node, run by `hypershift node run`.
	KubeProxy = "kube-proxy"
)

// Components returns the registrations of the upstream components compiled
// into the binary, in start order; main puts them into the binary's one
// component registry. Each runs with its upstream flags (without the
// program name) and returns when the component exits.
func Components() components.Registry {
	return components.Registry{
		{Name: Etcd, Main: runEtcd},
		{Name: KubeAPIServer, Main: func(ctx context.Context, args []string) error {
			go seed(ctx, args)
			return runCobra(ctx, apiserverapp.NewAPIServerCommand(), args)
		}},
		{Name: KubeControllerManager, Main: func(ctx context.Context, args []string) error {
			return runCobra(ctx, kcmapp.NewControllerManagerCommand(), args)
		}},
		{Name: KubeScheduler, Main: func(ctx context.Context, args []string) error {
			return runCobra(ctx, schedulerapp.NewSchedulerCommand(), args)
		}},
		{Name: KubeControlPlane, Main: runCombined},
		{Name: Kubelet, Main: func(ctx context.Context, args []string) error {
			return runCobra(ctx, kubeletapp.NewKubeletCommand(ctx), args)
		}},
		{Name: KubeProxy, Main: func(ctx context.Context, args []string) error {
			return runCobra(ctx, proxyapp.NewProxyCommand(), args)
		}},
	}
}

// runEtcd runs etcd; etcdmain parses its arguments itself and exits the
// process on fatal errors. Told to stop, a member that leads first hands
// leadership over.
func runEtcd(_ context.Context, args []string) error {
	etcdhandover.Register(args)
	etcdmain.Main(append([]string{"etcd"}, args...))
	return nil
}

func runCobra(ctx context.Context, cmd *cobra.Command, args []string) error {
	cmd.SetArgs(args)
	// A flag or start-up error should end in one line, not the usage text.
	cmd.SilenceUsage = true
	cmd.SetOut(os.Stdout)
	cmd.SetErr(os.Stderr)
	return cmd.ExecuteContext(ctx)
}
