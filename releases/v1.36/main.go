// Command kubernetes runs one upstream Kubernetes component of this release:
// `kubernetes NAME [upstream flags]`. hypershift runs it for hosted control
// planes and nodes of this release's version; it lives in its own module so
// that its k8s.io libraries stay at this minor (see docs/releases.md).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	apiserverapp "k8s.io/kubernetes/cmd/kube-apiserver/app"
	kcmapp "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	proxyapp "k8s.io/kubernetes/cmd/kube-proxy/app"
	schedulerapp "k8s.io/kubernetes/cmd/kube-scheduler/app"
	kubeletapp "k8s.io/kubernetes/cmd/kubelet/app"
)

var commands = map[string]func(ctx context.Context) *cobra.Command{
	"kube-apiserver":          func(context.Context) *cobra.Command { return apiserverapp.NewAPIServerCommand() },
	"kube-controller-manager": func(context.Context) *cobra.Command { return kcmapp.NewControllerManagerCommand() },
	"kube-scheduler":          func(context.Context) *cobra.Command { return schedulerapp.NewSchedulerCommand() },
	"kubelet":                 kubeletapp.NewKubeletCommand,
	"kube-proxy":              func(context.Context) *cobra.Command { return proxyapp.NewProxyCommand() },
}

func main() {
	if len(os.Args) < 2 || commands[os.Args[1]] == nil {
		fmt.Fprintln(os.Stderr, "usage: kubernetes kube-apiserver|kube-controller-manager|kube-scheduler|kubelet|kube-proxy [flags]")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cmd := commands[os.Args[1]](ctx)
	cmd.SetArgs(os.Args[2:])
	// A flag or start-up error should end in one line, not the usage text.
	cmd.SilenceUsage = true
	if err := cmd.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
