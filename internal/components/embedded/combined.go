package embedded

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	logsapi "k8s.io/component-base/logs/api/v1"
	apiserverapp "k8s.io/kubernetes/cmd/kube-apiserver/app"
	kcmapp "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	schedulerapp "k8s.io/kubernetes/cmd/kube-scheduler/app"
	scheduleroptions "k8s.io/kubernetes/cmd/kube-scheduler/app/options"

	"hypershift.dev/internal/components"
)

// KubeControlPlane runs kube-apiserver, kube-controller-manager and
// kube-scheduler in one process, for single-replica control planes that ask
// for it (components.KubeControlPlane renders it): `component
// kube-control-plane kube-apiserver ARGS -- kube-controller-manager ARGS --
// kube-scheduler ARGS`. The controllers start once the API server is ready;
// the process ends when any of the three does.
const KubeControlPlane = components.KubeControlPlane

func runCombined(ctx context.Context, args []string) error {
	groups := map[string][]string{}
	var current string
	for _, a := range args {
		switch {
		case a == "--":
			current = ""
		case current == "":
			current = a
			groups[current] = []string{}
		default:
			groups[current] = append(groups[current], a)
		}
	}
	for name := range groups {
		if name != KubeAPIServer && name != KubeControllerManager && name != KubeScheduler {
			return fmt.Errorf("%s runs kube-apiserver, kube-controller-manager and kube-scheduler, not %q", KubeControlPlane, name)
		}
	}
	// The three apply the same logging configuration; the first one wins.
	logsapi.ReapplyHandling = logsapi.ReapplyHandlingIgnoreUnchanged
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 3)
	go seed(ctx, groups[KubeAPIServer])
	go func() {
		errc <- wrap(KubeAPIServer, runCobra(ctx, apiserverapp.NewAPIServerCommand(), groups[KubeAPIServer]))
	}()
	// The controllers need a serving API server at start, as the process
	// runtime's start order gives them when they run apart.
	go func() {
		waitReady(ctx, groups[KubeAPIServer])
		go func() { errc <- wrap(KubeScheduler, runScheduler(ctx, groups[KubeScheduler])) }()
		errc <- wrap(KubeControllerManager, runCobra(ctx, kcmapp.NewControllerManagerCommand(), groups[KubeControllerManager]))
	}()
	// SIGTERM ends the API server's context only; the controllers run until
	// the process exits. Give the API server a moment to drain, then exit.
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM, os.Interrupt)
	defer signal.Stop(term)
	select {
	case err := <-errc:
		return err
	case <-term:
		select {
		case err := <-errc:
			return err
		case <-time.After(5 * time.Second):
			return nil
		}
	}
}

// runScheduler is the scheduler command without its own signal handler
// (the process has one already).
func runScheduler(ctx context.Context, args []string) error {
	opts := scheduleroptions.NewOptions()
	fs := pflag.NewFlagSet(KubeScheduler, pflag.ContinueOnError)
	for _, f := range opts.Flags.FlagSets {
		fs.AddFlagSet(f)
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := opts.ComponentGlobalsRegistry.Set(); err != nil {
		return err
	}
	cc, sched, err := schedulerapp.Setup(ctx, opts)
	if err != nil {
		return err
	}
	return schedulerapp.Run(ctx, cc, sched)
}

func wrap(name string, err error) error {
	if err == nil {
		return fmt.Errorf("%s exited", name)
	}
	return fmt.Errorf("%s: %s", name, strings.TrimSpace(err.Error()))
}

// waitReady polls the API server's /readyz on its --bind-address and
// --secure-port.
func waitReady(ctx context.Context, apiserverArgs []string) {
	host, port := "127.0.0.1", "6443"
	for _, a := range apiserverArgs {
		if v, ok := strings.CutPrefix(a, "--secure-port="); ok {
			port = v
		}
		if v, ok := strings.CutPrefix(a, "--bind-address="); ok {
			host = v
		}
	}
	hc := &http.Client{Timeout: time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // loopback readiness only
	}}
	for ctx.Err() == nil {
		if resp, err := hc.Get("https://" + net.JoinHostPort(host, port) + "/readyz"); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
}
