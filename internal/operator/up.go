package operator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"github.com/go-logr/logr"

	"hypershift.dev/internal/clusterapi"
	"hypershift.dev/internal/daemon"
	"hypershift.dev/internal/datadir"
	"hypershift.dev/internal/managementplane"
	"hypershift.dev/internal/nodes/machine"
	"hypershift.dev/internal/runtime/process"
)

// UpHooks tell the caller of Up how far it got.
type UpHooks struct {
	// Ready is called once the operator serves and up.pid names this
	// process, with the management kubeconfig.
	Ready func(kubeconfig string)
	// Stopping is called when Up starts to stop everything.
	Stopping func()
}

// Up runs `hypershift up` on the data dir until ctx ends: the embedded
// management plane and the local operator, with hosted control planes and
// node agents as local processes. It holds the data dir's lock, records
// itself in up.pid once ready, and on the way out stops node agents, hosted
// control planes and the management plane (their data stays).
func Up(ctx context.Context, layout datadir.Layout, opts Options, log logr.Logger, hooks UpHooks) error {
	lock, err := layout.Claim()
	if err != nil {
		return err
	}
	defer lock.Unlock()
	if opts.Machines != nil {
		m, err := layout.EnsureMachines(opts.Machines.Dir)
		if err != nil {
			return err
		}
		opts.MachineOwnerPrefix = m.OwnerPrefix()
	}
	plane, err := managementplane.Start(ctx, managementplane.Options{
		DataDir: layout.Root, Log: log, Versions: opts.Releases.Versions(),
		LeafValidity: opts.LeafCertificateValidity, CAValidity: opts.CAValidity,
	})
	if err != nil {
		return fmt.Errorf("start management plane: %w", err)
	}
	renewCtx, stopRenewing := context.WithCancel(ctx)
	defer stopRenewing()
	go plane.RenewCertificates(renewCtx)
	opts.RESTConfig = plane.RESTConfig
	// Cluster API's controllers run once a pool of a machine platform
	// needs them; one an earlier run left running is supervised again.
	capi := clusterapi.Manager{Dir: clusterapi.DefaultDir()}
	if err := plane.AdoptClusterAPI(ctx, capi); err != nil {
		log.Error(err, "adopt the Cluster API manager")
	}
	opts.ClusterAPI = func(ctx context.Context) error { return plane.StartClusterAPI(ctx, capi) }
	op, err := NewLocal(layout, log, opts)
	if err != nil {
		return err
	}
	// The manager outlives ctx just long enough to be stopped in order.
	mgrCtx, stopMgr := context.WithCancel(context.Background())
	defer stopMgr()
	mgrDone := make(chan error, 1)
	go func() { mgrDone <- op.Manager.Start(mgrCtx) }()
	if !op.Manager.GetCache().WaitForCacheSync(ctx) {
		return errors.New("operator cache did not sync")
	}
	pidFile := daemon.PIDFile(layout.UpPIDFile())
	// Ready only once the operator serves what it listens on: a listener
	// that fails to bind stops the plane before it says ready, not after.
	stopped, mgrErr := waitServing(ctx, mgrDone, opts.MetricsBindAddress, opts.HealthProbeBindAddress)
	if !stopped {
		if ctx.Err() == nil {
			if err := pidFile.RecordSelf(); err != nil {
				return err
			}
			hooks.Ready(plane.Kubeconfig)
		}
		select {
		case <-ctx.Done():
			stopMgr()
			mgrErr = <-mgrDone
		case mgrErr = <-mgrDone:
		}
	}
	if mgrErr != nil {
		log.Error(mgrErr, "operator stopped")
	}
	stopRenewing()
	hooks.Stopping()
	stopCtx := context.Background()
	op.StopAll(stopCtx)
	plane.Stop(stopCtx)
	if err := pidFile.Remove(); err != nil {
		return err
	}
	if stopped {
		return fmt.Errorf("the operator stopped before the management plane was ready: %w", mgrErr)
	}
	return nil
}

// waitServing waits until every listener address (HOST:PORT, "0" for none)
// accepts connections, or the manager stops (true, and its error). ctx
// ending is not a stop: the caller then tears down as it would after
// ready.
func waitServing(ctx context.Context, mgrDone <-chan error, addrs ...string) (stopped bool, mgrErr error) {
	for _, addr := range addrs {
		if addr == "0" || addr == "" {
			continue
		}
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			continue // the manager reports it
		}
		if host == "" || host == "0.0.0.0" || host == "::" {
			host = "127.0.0.1"
		}
		target := net.JoinHostPort(host, port)
		for {
			conn, err := net.DialTimeout("tcp", target, time.Second)
			if err == nil {
				_ = conn.Close()
				break
			}
			select {
			case err := <-mgrDone:
				if err == nil {
					err = errors.New("the operator's manager returned")
				}
				return true, err
			case <-ctx.Done():
				return false, nil
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return false, nil
}

// Run runs `hypershift operator` on the data dir until ctx ends: the local
// operator against the management cluster of opts.RESTConfig, with hosted
// control planes and node agents as local processes, which keep running
// when it exits (the next operator adopts them). It holds the data dir's
// lock; with installAPI it first installs or upgrades the CRDs.
func Run(ctx context.Context, layout datadir.Layout, opts Options, installAPI bool, log logr.Logger) error {
	lock, err := layout.Claim()
	if err != nil {
		return err
	}
	defer lock.Unlock()
	if installAPI {
		if err := InstallAPI(ctx, opts.RESTConfig, opts.Releases.Versions()); err != nil {
			return err
		}
	}
	op, err := NewLocal(layout, log, opts)
	if err != nil {
		return err
	}
	defer op.Release()
	return op.Manager.Start(ctx)
}

// Down stops the `hypershift up` of the data dir (stopping names it first)
// and whatever an earlier `up` left running without supervision; with
// purge it then removes the data dir. It refuses a directory that is not a
// data dir: its pid files name processes to stop, and purge removes all.
func Down(layout datadir.Layout, purge bool, stopping func(pid int)) error {
	if !layout.IsDataDir() {
		return fmt.Errorf("--data-dir %s is not a hypershift data dir (no %s, no management plane layout): nothing stopped or removed",
			layout.Root, datadir.MarkerFile)
	}
	pidFile := daemon.PIDFile(layout.UpPIDFile())
	if pid, ok := pidFile.Live(); ok {
		stopping(pid)
		if _, _, err := pidFile.Stop(2 * time.Minute); err != nil {
			return err
		}
	}
	// Held while stopping and purging, so that no `up` or `operator`
	// starts meanwhile, and none still runs.
	lock, err := layout.Lock()
	if err != nil {
		return err
	}
	defer lock.Unlock()
	process.StopOrphans(layout.Root, logr.Discard())
	_ = pidFile.Remove()
	if purge {
		// Its machines go first: once the data dir is gone, nothing says
		// which machines of the host were its plane's.
		if err := deleteMachines(layout); err != nil {
			return err
		}
		if err := os.RemoveAll(layout.Root); err != nil {
			return fmt.Errorf("purge %s: %w", layout.Root, err)
		}
	}
	return nil
}

// deleteMachines deletes the machines of the host that this data dir's
// plane made: those whose owner begins with its identity
// (datadir.Machines); a machine of another plane, or made by hand, is left
// alone. An error keeps the data dir, so that `down --purge` can try again.
func deleteMachines(layout datadir.Layout) error {
	m, ok, err := layout.ReadMachines()
	if err != nil || !ok {
		return err
	}
	host := machine.Host{Dir: m.Dir}
	records, err := host.List()
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("the machines of %s: %w", m.Dir, err)
	}
	var errs []error
	for _, r := range records {
		if !strings.HasPrefix(r.Owner, m.OwnerPrefix()) {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		if err := host.DeleteOwned(ctx, r.Name, r.Owner, io.Discard); err != nil {
			errs = append(errs, fmt.Errorf("delete machine %s: %w", r.Name, err))
		}
		cancel()
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w; the data dir %s is kept", err, layout.Root)
	}
	return nil
}
