package cli

import (
	"context"
	"flag"
	"os"
	"os/signal"
	"syscall"

	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"hypershift.dev/internal/nodes/simulated"
)

func init() { registerComponent(simulated.Component, runSimulatedAgent) }

// runSimulatedAgent is `hypershift component simulated-agent
// --bootstrap-kubeconfig F --nodepool NAME …`: the node agent of a Simulated
// NodePool, run by the NodePool controller through the node runtime.
func runSimulatedAgent(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet(simulated.Component, flag.ContinueOnError)
	opts := simulated.Options{}
	fs.StringVar(&opts.BootstrapKubeconfig, "bootstrap-kubeconfig", "", "kubeconfig with the hosted API server, its CA and the pool's bootstrap token; removed once read (the token is kept in memory only)")
	fs.StringVar(&opts.NodePool, "nodepool", "", "NodePool whose machines to simulate")
	fs.StringVar(&opts.CertDir, "cert-dir", "pki", "directory for the nodes' certificates")
	fs.StringVar(&opts.HealthAddress, "health-address", "", "address of /healthz and /status (empty: none)")
	qps := fs.Float64("qps", 200, "requests per second of all nodes together")
	fs.IntVar(&opts.Burst, "burst", 400, "request burst of all nodes together")
	fs.IntVar(&opts.Joins, "concurrent-joins", 32, "nodes bootstrapping at once")
	fs.IntVar(&opts.PodWorkers, "pod-workers", 8, "pod status updates at once")
	fs.BoolVar(&opts.ServingCertificates, "serving-certificates", true, "have each node request a kubelet serving certificate")
	verbose := fs.Bool("v", false, "log every node")
	if err := fs.Parse(args); err != nil {
		return err
	}
	opts.QPS = float32(*qps)
	var logOpts []zap.Opts
	if *verbose {
		logOpts = append(logOpts, zap.UseDevMode(true))
	}
	opts.Log = zap.New(logOpts...)
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	return simulated.Run(ctx, opts)
}
