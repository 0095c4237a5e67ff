// Package konnectivity compiles in the Konnectivity tunnel of
// sigs.k8s.io/apiserver-network-proxy: the server that runs beside a hosted
// control plane's API servers, and the agent that runs on the hosted
// cluster's nodes and dials out to it (docs/architecture.md, "Konnectivity").
// Both take their upstream options and flags, as `hypershift component
// konnectivity-server|konnectivity-agent`; the agent runs upstream's
// command, the server upstream's proxy server behind listeners of ours
// that check each agent's node (server.go, nodeidentity.go).
package konnectivity

import (
	"context"
	"errors"
	goflag "flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2"
	agentapp "sigs.k8s.io/apiserver-network-proxy/cmd/agent/app"
	agentoptions "sigs.k8s.io/apiserver-network-proxy/cmd/agent/app/options"
	serveroptions "sigs.k8s.io/apiserver-network-proxy/cmd/server/app/options"
	"sigs.k8s.io/apiserver-network-proxy/pkg/util"

	"hypershift.dev/internal/components"
)

// Component names.
const (
	Server = components.KonnectivityServer
	Agent  = "konnectivity-agent"
)

// Components returns the registrations of the Konnectivity server and
// agent; main appends them to the binary's component registry.
func Components() components.Registry {
	return components.Registry{
		{Name: Server, Main: runServer},
		{Name: Agent, Main: runAgent},
	}
}

func runServer(ctx context.Context, args []string) error {
	o := serveroptions.NewProxyRunOptions()
	if help, err := parse(Server, o.Flags(), args); help || err != nil {
		return err
	}
	ctx, stop := signalContext(ctx)
	defer stop()
	return serve(ctx, o)
}

func runAgent(ctx context.Context, args []string) error {
	o := agentoptions.NewGrpcProxyAgentOptions()
	if help, err := parse(Agent, o.Flags(), args); help || err != nil {
		return err
	}
	ctx, stop := signalContext(ctx)
	defer stop()
	// The agent tells the server it drains, so no new dials reach it, and
	// stops with the same signal: a supervisor's SIGTERM is the only one.
	return (&agentapp.Agent{}).Run(o, ctx.Done(), ctx.Done())
}

// parse reads args into the upstream flag set plus klog's flags, as the
// upstream commands do. It uses a flag set of its own rather than the
// upstream cobra commands, which would merge in the binary's global flags
// (their --kubeconfig and -v clash with others linked in). help says the
// usage was asked for and printed.
func parse(name string, upstream *pflag.FlagSet, args []string) (help bool, err error) {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.AddFlagSet(upstream)
	klogFlags := goflag.NewFlagSet(name, goflag.ContinueOnError)
	klog.InitFlags(klogFlags)
	klogFlags.VisitAll(func(f *goflag.Flag) {
		f.Name = util.Normalize(f.Name)
		fs.AddGoFlag(f)
	})
	fs.Usage = func() {
		fmt.Fprintf(os.Stderr, "Usage: hypershift component %s [flags]\n\n%s", name, fs.FlagUsages())
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return true, nil
		}
		return false, fmt.Errorf("%s: %w", name, err)
	}
	if fs.NArg() > 0 {
		return false, fmt.Errorf("%s takes no arguments, got %q", name, fs.Args())
	}
	return false, nil
}

// signalContext ends on SIGTERM or SIGINT, how the process runtime and the
// kubelet stop the component.
func signalContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
}
