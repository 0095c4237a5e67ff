package entrypoint

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"hypershift.dev/internal/clusterclient"
	"hypershift.dev/internal/daemon"
	"hypershift.dev/internal/nodes/machine"
	"hypershift.dev/internal/operator"
	"hypershift.dev/internal/release"
)

// upChildEnv marks the background process of `up --detach`.
const upChildEnv = "HYPERSHIFT_UP_DETACHED"

type upOptions struct {
	*clusterclient.Management
	detach         bool
	timeout        time.Duration
	metricsAddress string
	healthAddress  string
	endpointHost   string
	releases       release.DirFlag
	validity       certValidityFlags
	processRuntime processRuntimeFlags
	machinesDir    string
	machines       *machine.Host
}

func newUpCommand(g *clusterclient.Management) *cobra.Command {
	o := &upOptions{Management: g}
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start the embedded management plane and the operator on this machine",
		Long: "Start a real management plane (etcd, kube-apiserver, garbage-collector, namespace and cluster-role aggregation controllers),\n" +
			"install the hypershift.dev API and run the operator, which runs hosted control planes as local processes.\n" +
			"A second `up` on the same data dir resumes everything; `hypershift down` stops it.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.validity.validate(); err != nil {
				return err
			}
			if err := o.processRuntime.validate(); err != nil {
				return err
			}
			if err := o.validity.applyClientCertReload(); err != nil {
				return err
			}
			// Checked before detaching, so that the error is seen.
			machines, endpointHost, err := machinesOption(o.machinesDir, o.endpointHost, cmd.Flags().Changed("endpoint-host"))
			if err != nil {
				return err
			}
			o.machines, o.endpointHost = machines, endpointHost
			if machines != nil {
				o.machinesDir = machines.Dir // the background process's working directory is not ours
			}
			if o.detach && os.Getenv(upChildEnv) == "" {
				return o.runDetached(cmd)
			}
			return o.run(cmd)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.detach, "detach", false, "run in the background and return once the management plane is ready")
	f.DurationVar(&o.timeout, "timeout", 3*time.Minute, "with --detach: how long to wait for readiness")
	f.StringVar(&o.metricsAddress, "metrics-bind-address", "127.0.0.1:8383", "address of the operator's Prometheus metrics (\"0\" disables)")
	f.StringVar(&o.healthAddress, "health-probe-bind-address", "0", "address of the operator's /healthz and /readyz (\"0\" disables)")
	f.StringVar(&o.endpointHost, "endpoint-host", "127.0.0.1", "address clients and nodes use to reach hosted API servers")
	f.StringVar(&o.machinesDir, machinesDirFlagName, "", machinesDirUsage)
	o.releases.AddFlag(f)
	o.validity.add(f)
	o.processRuntime.add(f)
	return cmd
}

func (o *upOptions) run(cmd *cobra.Command) error {
	layout := o.Layout()
	if pid, ok := daemon.PIDFile(layout.UpPIDFile()).Live(); ok {
		fmt.Fprintf(cmd.OutOrStdout(), "management plane already running (pid %d); kubeconfig: %s\n", pid, layout.ManagementKubeconfig())
		return nil
	}
	if err := checkListeners(cmd.Flags(), cmd.OutOrStdout(), operatorListenerFlags...); err != nil {
		return err
	}
	releases, err := o.releases.Load()
	if err != nil {
		return err
	}
	log := zap.New(zap.UseDevMode(false))
	ctrl.SetLogger(log)
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The data dir is marked before anything is made in it (the default
	// backup root is inside it).
	if err := layout.Ensure(); err != nil {
		return err
	}
	backupRoot, err := o.processRuntime.backupRoot(layout)
	if err != nil {
		return err
	}
	start := time.Now()
	return operator.Up(ctx, layout, operator.Options{
		BackupFileRoot:           backupRoot,
		MetricsBindAddress:       o.metricsAddress,
		HealthProbeBindAddress:   o.healthAddress,
		EndpointHost:             o.endpointHost,
		Machines:                 o.machines,
		Releases:                 releases,
		LeafCertificateValidity:  o.validity.leaf,
		CAValidity:               o.validity.ca,
		MaxStartingControlPlanes: o.processRuntime.maxStarting,
		ControlPlaneNice:         o.processRuntime.nice,
		MaxMachines:              o.processRuntime.maxMachines,
	}, log, operator.UpHooks{
		Ready: func(kubeconfig string) {
			fmt.Fprintf(cmd.OutOrStdout(), "management plane ready in %.1fs\nexport KUBECONFIG=%s\n", time.Since(start).Seconds(), kubeconfig)
		},
		Stopping: func() {
			fmt.Fprintln(cmd.OutOrStdout(), "stopping hosted control planes and the management plane (data is kept)")
		},
	})
}

// runDetached starts `up` in its own session with output to DATA_DIR/up.log
// and returns once it reports ready.
func (o *upOptions) runDetached(cmd *cobra.Command) error {
	layout := o.Layout()
	pidFile := daemon.PIDFile(layout.UpPIDFile())
	if pid, ok := pidFile.Live(); ok {
		fmt.Fprintf(cmd.OutOrStdout(), "management plane already running (pid %d); kubeconfig: %s\n", pid, layout.ManagementKubeconfig())
		return nil
	}
	if err := checkListeners(cmd.Flags(), cmd.OutOrStdout(), operatorListenerFlags...); err != nil {
		return err
	}
	if err := layout.Ensure(); err != nil {
		return err
	}
	args := append([]string{"up", "--data-dir", layout.Root}, childFlags(cmd)...)
	child, err := daemon.StartReady(cmd.Context(), "management plane", pidFile, o.timeout, layout.UpLog(), []string{upChildEnv + "=1"}, args...)
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "management plane running (pid %d), logs in %s\nexport KUBECONFIG=%s\n",
		child.PID, child.LogPath, layout.ManagementKubeconfig())
	return nil
}

// childFlags passes the flags the user set on to the background process:
// every flag of `up` but those of the detaching itself, so that a new flag
// cannot be forgotten here.
func childFlags(cmd *cobra.Command) []string {
	var out []string
	inherited := cmd.InheritedFlags() // --data-dir is passed on by the caller
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if f.Name != "detach" && f.Name != "timeout" && inherited.Lookup(f.Name) == nil {
			out = append(out, "--"+f.Name+"="+f.Value.String())
		}
	})
	return out
}
