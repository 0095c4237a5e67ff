package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"hypershift.dev/internal/managementplane"
	"hypershift.dev/internal/operator"
	"hypershift.dev/internal/runtime/process"
)

const (
	upPIDFile = "up.pid"
	upLogFile = "up.log"
	// upChildEnv marks the background process of `up --detach`.
	upChildEnv = "HYPERSHIFT_UP_DETACHED"
)

type upOptions struct {
	*globalOptions
	detach         bool
	timeout        time.Duration
	metricsAddress string
	healthAddress  string
	endpointHost   string
}

func newUpCommand(g *globalOptions) *cobra.Command {
	o := &upOptions{globalOptions: g}
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start the embedded management plane and the operator on this machine",
		Long: "Start a real management plane (etcd, kube-apiserver, garbage-collector and namespace controllers),\n" +
			"install the hypershift.dev API and run the operator, which runs hosted control planes as local processes.\n" +
			"A second `up` on the same data dir resumes everything; `hypershift down` stops it.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
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
	return cmd
}

func (o *upOptions) pidPath() string { return filepath.Join(o.dataDir, upPIDFile) }

func (o *upOptions) run(cmd *cobra.Command) error {
	if pid, _, ok := process.LivePID(o.pidPath()); ok {
		fmt.Fprintf(cmd.OutOrStdout(), "management plane already running (pid %d); kubeconfig: %s\n", pid, managementplane.KubeconfigPath(o.dataDir))
		return nil
	}
	if err := managementplane.EnsureDataDir(o.dataDir); err != nil {
		return err
	}
	lock, err := managementplane.LockDataDir(o.dataDir)
	if err != nil {
		return err
	}
	defer lock.Unlock()
	log := zap.New(zap.UseDevMode(false))
	ctrl.SetLogger(log)
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	start := time.Now()
	plane, err := managementplane.Start(ctx, managementplane.Options{DataDir: o.dataDir, Log: log})
	if err != nil {
		return fmt.Errorf("start management plane: %w", err)
	}
	mgr, hosted, nodes, err := newLocalOperator(o.dataDir, log, operator.Options{
		RESTConfig:             plane.RESTConfig,
		MetricsBindAddress:     o.metricsAddress,
		HealthProbeBindAddress: o.healthAddress,
		EndpointHost:           o.endpointHost,
	})
	if err != nil {
		return err
	}
	mgrCtx, stopMgr := context.WithCancel(context.Background())
	defer stopMgr()
	mgrDone := make(chan error, 1)
	go func() { mgrDone <- mgr.Start(mgrCtx) }()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		return errors.New("operator cache did not sync")
	}
	if err := process.RecordSelf(o.pidPath()); err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "management plane ready in %.1fs\nexport KUBECONFIG=%s\n",
		time.Since(start).Seconds(), plane.Kubeconfig)

	var mgrErr error
	select {
	case <-ctx.Done():
		stopMgr()
		mgrErr = <-mgrDone
	case mgrErr = <-mgrDone:
	}
	if mgrErr != nil {
		log.Error(mgrErr, "operator stopped")
	}
	fmt.Fprintln(cmd.OutOrStdout(), "stopping hosted control planes and the management plane (data is kept)")
	stopCtx := context.Background()
	// Node agents first: they would only log errors once their API is gone.
	nodes.StopAll(stopCtx)
	process.StopOrphans(nodesDir(o.dataDir), log)
	hosted.StopAll(stopCtx)
	process.StopOrphans(managementplane.ClustersDir(o.dataDir), log)
	plane.Stop(stopCtx)
	return process.RemovePIDFile(o.pidPath())
}

// runDetached starts `up` in its own session with output to DATA_DIR/up.log
// and returns once it reports ready.
func (o *upOptions) runDetached(cmd *cobra.Command) error {
	if pid, _, ok := process.LivePID(o.pidPath()); ok {
		fmt.Fprintf(cmd.OutOrStdout(), "management plane already running (pid %d); kubeconfig: %s\n", pid, managementplane.KubeconfigPath(o.dataDir))
		return nil
	}
	if err := managementplane.EnsureDataDir(o.dataDir); err != nil {
		return err
	}
	logPath := filepath.Join(o.dataDir, upLogFile)
	args := append([]string{"up", "--data-dir", o.dataDir}, childFlags(cmd)...)
	child, exited, err := startDetached(logPath, []string{upChildEnv + "=1"}, args...)
	if err != nil {
		return fmt.Errorf("start background management plane: %w", err)
	}
	deadline := time.After(o.timeout)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-exited:
			return fmt.Errorf("management plane exited (%w); last lines of %s:\n%s", err, logPath, process.LogTail(logPath, 15))
		case <-deadline:
			return fmt.Errorf("management plane not ready after %s; see %s", o.timeout, logPath)
		case <-tick.C:
			if pid, _, ok := process.LivePID(o.pidPath()); ok && pid == child.Process.Pid {
				fmt.Fprintf(cmd.OutOrStdout(), "management plane running (pid %d), logs in %s\nexport KUBECONFIG=%s\n",
					pid, logPath, managementplane.KubeconfigPath(o.dataDir))
				return nil
			}
		}
	}
}

// childFlags passes the flags the user set on to the background process.
func childFlags(cmd *cobra.Command) []string {
	var out []string
	for _, name := range []string{"metrics-bind-address", "health-probe-bind-address", "endpoint-host"} {
		if f := cmd.Flags().Lookup(name); f != nil && f.Changed {
			out = append(out, "--"+name+"="+f.Value.String())
		}
	}
	return out
}

// startDetached starts this binary with args in its own session (it outlives
// the command and the terminal), appending its output to logPath; exited
// reports its end.
func startDetached(logPath string, env []string, args ...string) (child *exec.Cmd, exited <-chan error, err error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, nil, err
	}
	defer logFile.Close()
	exe, err := os.Executable()
	if err != nil {
		return nil, nil, err
	}
	child = exec.Command(exe, args...) //nolint:gosec // our own binary
	child.Stdout, child.Stderr = logFile, logFile
	child.Env = append(os.Environ(), env...)
	child.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := child.Start(); err != nil {
		return nil, nil, err
	}
	done := make(chan error, 1)
	go func() { done <- child.Wait() }()
	return child, done, nil
}
