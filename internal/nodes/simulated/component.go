package simulated

import (
	"context"
	"flag"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// AgentConfig is the agent's command line. The NodePool controller starts
// from DefaultAgentConfig, sets what its pool needs and puts Args into the
// agent's spec; ParseAgentArgs reads the same flags back when the runtime
// starts `hypershift component simulated-agent`.
type AgentConfig struct {
	// BootstrapKubeconfig holds the hosted API server, its CA and the
	// pool's bootstrap token; the agent removes it once read.
	BootstrapKubeconfig string
	// NodePool names the pool whose machines the agent simulates.
	NodePool string
	// CertDir keeps the nodes' certificates.
	CertDir string
	// HealthAddress serves /healthz and /status; empty: none.
	HealthAddress string
	// QPS and Burst limit the requests of all nodes together.
	QPS   float64
	Burst int
	// ConcurrentJoins bounds how many nodes bootstrap at once.
	ConcurrentJoins int
	// PodWorkers is how many pod status updates run at once.
	PodWorkers int
	// ServingCertificates has each node request a kubelet serving
	// certificate.
	ServingCertificates bool
	// Verbose logs every node.
	Verbose bool
}

// DefaultAgentConfig is the agent's defaults, the one place they are set.
func DefaultAgentConfig() AgentConfig {
	return AgentConfig{
		CertDir:             "pki",
		QPS:                 200,
		Burst:               400,
		ConcurrentJoins:     32,
		PodWorkers:          8,
		ServingCertificates: true,
	}
}

// Args renders the configuration as the agent's flags, leaving out those at
// their defaults, so a spec names only what its pool chose.
func (c AgentConfig) Args() []string {
	d := DefaultAgentConfig()
	var args []string
	add := func(changed bool, name, value string) {
		if changed {
			args = append(args, "--"+name+"="+value)
		}
	}
	add(c.BootstrapKubeconfig != d.BootstrapKubeconfig, "bootstrap-kubeconfig", c.BootstrapKubeconfig)
	add(c.NodePool != d.NodePool, "nodepool", c.NodePool)
	add(c.CertDir != d.CertDir, "cert-dir", c.CertDir)
	add(c.HealthAddress != d.HealthAddress, "health-address", c.HealthAddress)
	add(c.QPS != d.QPS, "qps", strconv.FormatFloat(c.QPS, 'g', -1, 64))
	add(c.Burst != d.Burst, "burst", strconv.Itoa(c.Burst))
	add(c.ConcurrentJoins != d.ConcurrentJoins, "concurrent-joins", strconv.Itoa(c.ConcurrentJoins))
	add(c.PodWorkers != d.PodWorkers, "pod-workers", strconv.Itoa(c.PodWorkers))
	add(c.ServingCertificates != d.ServingCertificates, "serving-certificates", strconv.FormatBool(c.ServingCertificates))
	add(c.Verbose != d.Verbose, "v", strconv.FormatBool(c.Verbose))
	return args
}

// ParseAgentArgs reads the agent's flags over DefaultAgentConfig.
func ParseAgentArgs(args []string) (AgentConfig, error) {
	c := DefaultAgentConfig()
	fs := flag.NewFlagSet(Component, flag.ContinueOnError)
	fs.StringVar(&c.BootstrapKubeconfig, "bootstrap-kubeconfig", c.BootstrapKubeconfig, "kubeconfig with the hosted API server, its CA and the pool's bootstrap token; removed once read (the token is kept in memory only)")
	fs.StringVar(&c.NodePool, "nodepool", c.NodePool, "NodePool whose machines to simulate")
	fs.StringVar(&c.CertDir, "cert-dir", c.CertDir, "directory for the nodes' certificates")
	fs.StringVar(&c.HealthAddress, "health-address", c.HealthAddress, "address of /healthz and /status (empty: none)")
	fs.Float64Var(&c.QPS, "qps", c.QPS, "requests per second of all nodes together")
	fs.IntVar(&c.Burst, "burst", c.Burst, "request burst of all nodes together")
	fs.IntVar(&c.ConcurrentJoins, "concurrent-joins", c.ConcurrentJoins, "nodes bootstrapping at once")
	fs.IntVar(&c.PodWorkers, "pod-workers", c.PodWorkers, "pod status updates at once")
	fs.BoolVar(&c.ServingCertificates, "serving-certificates", c.ServingCertificates, "have each node request a kubelet serving certificate")
	fs.BoolVar(&c.Verbose, "v", c.Verbose, "log every node")
	if err := fs.Parse(args); err != nil {
		return AgentConfig{}, err
	}
	return c, nil
}

// RunAgent is `hypershift component simulated-agent`: the node agent of a
// Simulated NodePool, run by the NodePool controller through the node
// runtime, until SIGTERM or an interrupt.
func RunAgent(ctx context.Context, c AgentConfig) error {
	var logOpts []zap.Opts
	if c.Verbose {
		logOpts = append(logOpts, zap.UseDevMode(true))
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	return Run(ctx, Options{
		BootstrapKubeconfig: c.BootstrapKubeconfig,
		NodePool:            c.NodePool,
		CertDir:             c.CertDir,
		HealthAddress:       c.HealthAddress,
		QPS:                 float32(c.QPS),
		Burst:               c.Burst,
		Joins:               c.ConcurrentJoins,
		PodWorkers:          c.PodWorkers,
		ServingCertificates: c.ServingCertificates,
		Log:                 zap.New(logOpts...),
	})
}
