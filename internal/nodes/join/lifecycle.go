package join

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"hypershift.dev/internal/atomicfile"
	"hypershift.dev/internal/daemon"
	"hypershift.dev/internal/image"
	"hypershift.dev/internal/runtime"
	"hypershift.dev/internal/runtime/process"
)

// Prerequisites are the host programs a node runs, from Debian's containerd,
// runc, containernetworking-plugins and iptables packages.
type Prerequisites struct {
	Containerd, Ctr, CNIBinDir string
}

// DefaultCNIBinDir is where Debian's containernetworking-plugins live.
const DefaultCNIBinDir = "/usr/lib/cni"

// CheckHost finds the host programs a node needs and says how to install
// what is missing.
func CheckHost(cniBinDir string) (Prerequisites, error) {
	var p Prerequisites
	var missing []string
	find := func(name string) string {
		path, err := exec.LookPath(name)
		if err != nil {
			missing = append(missing, name)
		}
		return path
	}
	p.Containerd = find("containerd")
	p.Ctr = find("ctr")
	find("runc")
	find("containerd-shim-runc-v2")
	find("iptables")
	find("iptables-save")
	p.CNIBinDir = cniBinDir
	for _, plugin := range []string{"bridge", "host-local", "portmap"} {
		if _, err := os.Stat(filepath.Join(cniBinDir, plugin)); err != nil {
			missing = append(missing, filepath.Join(cniBinDir, plugin))
		}
	}
	if len(missing) > 0 {
		return p, fmt.Errorf("missing on this host: %s; install them with `apt-get install -y containerd runc containernetworking-plugins iptables`",
			strings.Join(missing, ", "))
	}
	return p, nil
}

// Prepare writes a new node's configuration under n.DataDir (created and
// marked as the node's), after recording the host as it is, and creates the
// node's cgroup root. Nothing runs yet.
func Prepare(ctx context.Context, n *Node, c *Cluster) error {
	if err := createNodeDir(n.DataDir); err != nil {
		return err
	}
	if n.CgroupRoot == "" {
		root, err := newCgroupRoot()
		if err != nil {
			return err
		}
		n.CgroupRoot = root
	}
	if err := EnsureCgroupRoot(n); err != nil {
		return err
	}
	before, err := ReadHostState()
	if err != nil {
		return err
	}
	if err := before.save(n.DataDir); err != nil {
		return err
	}
	if err := ensureLoopbackAddress(n.Network.APIServerAdvertiseAddress); err != nil {
		return err
	}
	if err := AllocatePorts(ctx, n); err != nil {
		return err
	}
	kc, err := BootstrapKubeconfig(c)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(n.BootstrapKubeconfigPath(), kc, 0o600); err != nil {
		return err
	}
	return n.Save()
}

// newRuntime is the process runtime of a node's processes.
func newRuntime(n *Node, log logr.Logger) (*process.Runtime, error) {
	return process.New(process.Options{Root: n.DataDir, Log: log})
}

// AllocatePorts picks the node's ports once (kept in the data directory),
// beside the kubelet's, which join chose.
func AllocatePorts(ctx context.Context, n *Node) error {
	rt, err := newRuntime(n, logr.Discard())
	if err != nil {
		return err
	}
	return n.takePorts(ctx, rt)
}

// takePorts sets the node's allocated ports from rt, which picks each once
// and keeps it.
func (n *Node) takePorts(ctx context.Context, rt *process.Runtime) error {
	ports, err := rt.Ports(ctx, Ref, runtime.Named(allocatedPorts()...))
	if err != nil {
		return err
	}
	if n.Ports == nil {
		n.Ports = map[string]int{}
	}
	for name, port := range ports {
		n.Ports[name] = port
	}
	return nil
}

// Run supervises a node's containerd, kubelet, API server proxy and
// kube-proxy until ctx ends; they keep running after it returns, and the
// next Run adopts them. The API server address on lo and bridged traffic
// through iptables are (re)established first (both are gone after a
// reboot); the sandbox image and hypershift's own image are imported into
// containerd before the kubelet starts; the bootstrap kubeconfig (the
// token) is removed once the kubelet has its client certificate.
func Run(ctx context.Context, n *Node, ctrPath string, log logr.Logger) error {
	if err := n.checkRunnable(); err != nil {
		return err
	}
	if err := ensureLoopbackAddress(n.Network.APIServerAdvertiseAddress); err != nil {
		return err
	}
	if err := enableBridgeNetfilter(); err != nil {
		log.Info("warning: "+err.Error(), "node", n.Name)
	}
	rt, err := newRuntime(n, log)
	if err != nil {
		return err
	}
	defer rt.Release()
	// A node joined before a component was added (the pod network) has no
	// port for it yet.
	if slices.ContainsFunc(allocatedPorts(), func(name string) bool { return n.Ports[name] == 0 }) {
		if err := n.takePorts(ctx, rt); err != nil {
			return err
		}
	}
	// Building the image reads the whole binary once (its digest): done
	// while containerd starts.
	built := make(chan error, 1)
	var img v1.Image
	go func() {
		var err error
		img, err = image.Build(image.Options{})
		built <- err
	}()
	if err := rt.Apply(ctx, Ref, []runtime.Spec{n.ContainerdSpec()}); err != nil {
		return err
	}
	if err := waitRunning(ctx, rt, Containerd, 2*time.Minute); err != nil {
		return err
	}
	if err := importPauseImage(ctx, n, ctrPath); err != nil {
		return err
	}
	if err := <-built; err != nil {
		return fmt.Errorf("build hypershift's image: %w", err)
	}
	start := time.Now()
	imported, err := importHypershiftImage(ctx, n, ctrPath, img)
	if err != nil {
		return err
	}
	log.Info("hypershift's image in containerd", "image", image.Ref(), "imported", imported, "took", time.Since(start).Round(time.Millisecond).String())
	if err := n.ensureRunningRelease(ctx); err != nil {
		return err
	}
	if err := rt.Apply(ctx, Ref, n.Specs()); err != nil {
		return err
	}
	log.Info("node running", "node", n.Name, "cluster", n.Cluster)
	// Here rather than in join: it also happens when join was interrupted.
	dropBootstrapKubeconfigWhenCertified(ctx, n, log)
	applySpecs := func(ctx context.Context, specs []runtime.Spec) error { return rt.Apply(ctx, Ref, specs) }
	// A rotation's step is reported on the Node only once the kubelet runs
	// with it.
	go n.followTrust(ctx, func(ctx context.Context, specs []runtime.Spec) error {
		before := pidOf(rt, Kubelet)
		if err := rt.Apply(ctx, Ref, specs); err != nil {
			return err
		}
		return waitRestarted(ctx, rt, Kubelet, before, 2*time.Minute)
	}, log)
	n.watchUpgrades(ctx, applySpecs, log)
	<-ctx.Done()
	return nil
}

func waitRunning(ctx context.Context, rt *process.Runtime, name string, timeout time.Duration) error {
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		for _, s := range rt.Status(Ref) {
			if s.Name == name && s.Phase == runtime.Running {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("%s not running after %s", name, timeout)
	}
	return nil
}

func pidOf(rt *process.Runtime, name string) int {
	for _, s := range rt.Status(Ref) {
		if s.Name == name {
			return s.PID
		}
	}
	return 0
}

// waitRestarted waits until instance name runs (ready) with another pid
// than before.
func waitRestarted(ctx context.Context, rt *process.Runtime, name string, before int, timeout time.Duration) error {
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		for _, s := range rt.Status(Ref) {
			if s.Name == name && s.Phase == runtime.Running && s.PID != before {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("%s not running again after %s", name, timeout)
	}
	return nil
}

func importPauseImage(ctx context.Context, n *Node, ctrPath string) error {
	var buf bytes.Buffer
	if err := WritePauseImage(&buf); err != nil {
		return err
	}
	path := filepath.Join(n.DataDir, "pause.tar")
	if err := atomicfile.Write(path, buf.Bytes(), 0o600); err != nil {
		return err
	}
	return LoadImage(ctx, n, ctrPath, path)
}

// LoadImage imports an image tarball (docker-archive or OCI layout) into
// the node's containerd, where the kubelet finds it: pods then run it with
// imagePullPolicy Never or IfNotPresent, no registry needed.
func LoadImage(ctx context.Context, n *Node, ctrPath, file string) error {
	if _, err := os.Stat(file); err != nil {
		return fmt.Errorf("image tarball: %w", err)
	}
	cmd := exec.CommandContext(ctx, ctrPath, "--address", n.ContainerdSocket(), "--namespace", "k8s.io", "images", "import", file) //nolint:gosec // host program, our arguments
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("import %s: %w: %s", file, err, bytes.TrimSpace(out))
	}
	return nil
}

// Reset stops a node and removes everything its join made, and only
// that: the node daemon, kubelet and containerd by their pid records; pods
// through the node's containerd (CRI), which tears down their network; the
// node's shims by the shim.pid files in its containerd state; whatever is
// left in the node's own cgroup root; mounts under the node directory; the
// CNI bridge, iptables chains and rules, network namespaces and host
// directories that were not there before; kernel parameters; and the node
// directory — only if it bears join's marker, every mount under it is gone,
// and never crossing into another mount. It keeps going past errors and
// returns them all.
func Reset(ctx context.Context, n *Node, log logr.Logger) error {
	dataDir := n.DataDir
	if !hasMarker(dataDir) {
		return fmt.Errorf("--node-dir %s has no %s: it was not made by `hypershift join`, so reset touches nothing in it", dataDir, markerName)
	}
	var errs []error
	note := func(err error) {
		if err != nil {
			errs = append(errs, err)
			log.Info("reset: " + err.Error())
		}
	}
	before, err := loadHostState(dataDir)
	note(err)
	if n.CgroupRoot != "" {
		note(validCgroupRoot(n.CgroupRoot))
	}

	// The node daemon leaves its processes running when it stops (a new
	// daemon adopts them): the kubelet is stopped next, from its pid
	// record, so that it neither restarts nor removes pods while they are
	// removed here; containerd stays to remove the pods properly.
	if _, _, err := daemonPIDFile(dataDir).Stop(10 * time.Second); err != nil {
		note(err)
	}
	rt, err := newRuntime(n, log)
	note(err)
	if rt != nil {
		process.StopOrphans(filepath.Join(rt.Dir(Ref), Kubelet), log)
	}
	shims := n.recordShims()
	if rt != nil {
		note(rt.Apply(ctx, Ref, []runtime.Spec{n.ContainerdSpec()}))
		if err := waitRunning(ctx, rt, Containerd, 30*time.Second); err != nil {
			note(err)
		} else {
			note(removePods(ctx, n.ContainerdSocket()))
		}
		note(rt.Delete(ctx, Ref))
	}
	// Whatever is left: shims, and containers in the node's cgroups.
	n.killShims(shims)
	note(n.killCgroupProcesses())
	unmounted := unmountAll(dataDir)
	note(unmounted)
	note(n.removeCgroupRoot())
	if LinkExists(Bridge) && (before == nil || !before.Bridge) {
		if out, err := exec.Command("ip", "link", "delete", Bridge).CombinedOutput(); err != nil {
			note(fmt.Errorf("delete %s: %s", Bridge, bytes.TrimSpace(out)))
		}
	}
	if before != nil {
		note(restoreHost(before, dataDir))
		note(removeLoopbackAddress(before.Loopback, n.Network.APIServerAdvertiseAddress))
	}
	if unmounted != nil {
		note(fmt.Errorf("%s kept: a mount under it stays, and removing through it could delete host files", dataDir))
	} else {
		note(removeTree(dataDir))
	}
	return errors.Join(errs...)
}

// restoreHost undoes the host-wide changes recorded against before.
func restoreHost(before *HostState, dataDir string) error {
	errs := restoreIPTables(before)
	for _, ns := range added(before.Netns, listDir(netnsDir)) {
		p := filepath.Join(netnsDir, ns)
		_ = unmount(p)
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	// Only the parameters and paths join records are acted on, whatever
	// else host-before.json names.
	errs = append(errs, RestoreSysctls(procSys, trackedSysctls, before.Sysctls)...)
	// Entries the node made in host directories that were already there.
	for _, link := range listDir("/var/log/containers") {
		p := filepath.Join("/var/log/containers", link)
		if target, err := os.Readlink(p); err == nil && strings.HasPrefix(target, dataDir+"/") {
			_ = os.Remove(p)
		}
	}
	results, _ := filepath.Glob("/var/lib/cni/results/" + cniNetwork + "-*")
	for _, r := range results {
		_ = os.Remove(r)
	}
	for _, p := range trackedPaths {
		if existed, ok := before.Paths[p]; ok && !existed {
			if real, err := filepath.EvalSymlinks(p); err == nil {
				p = real // /var/run is /run: mountinfo names the real path
			}
			if err := unmountAll(p); err != nil {
				errs = append(errs, fmt.Errorf("%s kept: %w", p, err))
				continue
			}
			errs = append(errs, removeTree(p))
		}
	}
	return errors.Join(errs...)
}

// DaemonLogPath is the log of the node daemon (`hypershift node run`).
func DaemonLogPath(dataDir string) string { return filepath.Join(dataDir, "node.log") }

func daemonPIDFile(dataDir string) daemon.PIDFile {
	return daemon.PIDFile(filepath.Join(dataDir, "node.pid"))
}

// RecordDaemon marks the calling process as the node daemon.
func RecordDaemon(dataDir string) error { return daemonPIDFile(dataDir).RecordSelf() }

// DaemonPID returns the running node daemon's pid.
func DaemonPID(dataDir string) (int, bool) { return daemonPIDFile(dataDir).Live() }

// StartDaemon starts `hypershift node run` for the node under dataDir in
// its own session, so that it outlives `hypershift join`.
func StartDaemon(dataDir string) (*daemon.Child, error) {
	return daemon.Start(DaemonLogPath(dataDir), nil, "node", "run", "--node-dir", dataDir)
}
