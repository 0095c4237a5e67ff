// Package process runs control-plane components as supervised local OS
// processes, each in its own session with its files, data and log under
// ROOT/<control-plane namespace>/<instance>/. ROOT/<namespace>/owner names
// the object that owns the directory (see OwnerFile). Processes outlive the
// operator: a new operator adopts those still running (same pids) and
// restarts the ones that died meanwhile.
package process

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"hypershift.dev/internal/release"
	"hypershift.dev/internal/runtime"
)

// Runtime is the process runtime.
type Runtime struct {
	root     string
	binary   string
	releases *release.Catalog
	log      logr.Logger
	onChange func(ref runtime.ControlPlaneRef)
	nice     int
	period   time.Duration

	mu     sync.Mutex
	planes map[runtime.ControlPlaneRef]map[string]*instance
	// ports handed out by this runtime, so two control planes never get the
	// same one between allocation and bind.
	usedPorts map[int]bool
}

var _ runtime.Runtime = (*Runtime)(nil)

// Options configure a Runtime.
type Options struct {
	// Root is the directory that holds one directory per control plane.
	Root string
	// Binary is the hypershift binary that runs `component <name>`.
	Binary string
	// Releases are the Kubernetes releases a Spec.Version can name; nil:
	// the compiled-in one only.
	Releases *release.Catalog
	Log      logr.Logger
	// OnChange is called when an instance of a control plane changes phase.
	OnChange func(ref runtime.ControlPlaneRef)
	// Nice (0-19) lowers the CPU priority of every process this runtime
	// starts: its nice value and, on kernels that group each session for
	// scheduling (autogroup), its session's group — each process runs in a
	// session of its own. Processes adopted from an earlier run keep the
	// priority they were started with.
	Nice int
	// ProbePeriod is how often a ready instance's readiness is probed;
	// zero: DefaultProbePeriod. An instance not ready yet, or failing, is
	// probed faster whatever this is.
	ProbePeriod time.Duration
}

// DefaultProbePeriod is how often a ready instance is probed: the
// kubelet's default period. Each probe is a request the component serves
// (the API server's /readyz runs all its checks, etcd's among them), and at
// one every 2 s the probes were about a seventh of an idle control plane's
// CPU (docs/performance.md). A process that exits is seen at once whatever
// the period; the period bounds how long a hung one goes unnoticed.
const DefaultProbePeriod = 10 * time.Second

// New returns a process runtime.
func New(opts Options) (*Runtime, error) {
	if opts.Binary == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("find own binary: %w", err)
		}
		opts.Binary = exe
	}
	if opts.Nice < 0 || opts.Nice > 19 {
		return nil, fmt.Errorf("nice %d: use 0 to 19", opts.Nice)
	}
	if opts.ProbePeriod < 0 {
		return nil, fmt.Errorf("probe period %s: use a positive duration, or zero for the default", opts.ProbePeriod)
	}
	if opts.ProbePeriod == 0 {
		opts.ProbePeriod = DefaultProbePeriod
	}
	if err := os.MkdirAll(opts.Root, 0o700); err != nil {
		return nil, fmt.Errorf("create %s: %w", opts.Root, err)
	}
	r := &Runtime{
		root:      opts.Root,
		binary:    opts.Binary,
		releases:  opts.Releases,
		log:       opts.Log,
		onChange:  opts.OnChange,
		nice:      opts.Nice,
		period:    opts.ProbePeriod,
		planes:    map[runtime.ControlPlaneRef]map[string]*instance{},
		usedPorts: map[int]bool{},
	}
	r.reserveKnownPorts()
	return r, nil
}

// Dir returns the directory of a control plane.
func (r *Runtime) Dir(ref runtime.ControlPlaneRef) string {
	return filepath.Join(r.root, ref.Namespace)
}

// Capabilities implements runtime.Runtime: runtime.Process.
func (*Runtime) Capabilities() runtime.Capabilities { return runtime.Process }

// Sleep implements runtime.Runtime: not in place (runtime.ErrNotInPlace).
func (*Runtime) Sleep(context.Context, runtime.ControlPlaneRef) error { return runtime.ErrNotInPlace }

// Fence implements runtime.Runtime: not in place (runtime.ErrNotInPlace).
func (*Runtime) Fence(context.Context, runtime.ControlPlaneRef, []runtime.Spec) ([]string, error) {
	return nil, runtime.ErrNotInPlace
}

// Layout implements runtime.Runtime: the instances share this host's
// network and keep their files under Dir(ref).
func (r *Runtime) Layout(ref runtime.ControlPlaneRef) runtime.Layout {
	return runtime.Layout{Dir: r.Dir(ref)}
}

// Apply implements runtime.Runtime.
func (r *Runtime) Apply(_ context.Context, ref runtime.ControlPlaneRef, specs []runtime.Spec) error {
	r.mu.Lock()
	if err := r.claim(ref); err != nil {
		r.mu.Unlock()
		return err
	}
	plane := r.planes[ref]
	if plane == nil {
		plane = map[string]*instance{}
		r.planes[ref] = plane
	}
	want := map[string]bool{}
	var removed []*instance
	for _, spec := range specs {
		want[spec.Name] = true
		if in := plane[spec.Name]; in != nil {
			in.setSpec(spec)
			continue
		}
		in := newInstance(filepath.Join(r.Dir(ref), spec.Name), r.command, spec,
			r.log.WithValues("controlPlane", ref.Namespace), r.notifier(ref), r.readiness(ref))
		in.nice, in.probePeriod, in.binary = r.nice, r.period, r.binary
		plane[spec.Name] = in
		go in.run()
	}
	for name, in := range plane {
		if !want[name] {
			removed = append(removed, in)
			delete(plane, name)
		}
	}
	r.mu.Unlock()
	stopInOrder(removed)
	return nil
}

// stopInOrder stops instances, those with StopLast (the datastore) after
// the others: an API server whose etcd is gone cannot finish its graceful
// shutdown. A hibernating control plane loses every instance at once.
func stopInOrder(instances []*instance) {
	var servers, datastores []*instance
	for _, in := range instances {
		if in.currentSpec().StopLast {
			datastores = append(datastores, in)
		} else {
			servers = append(servers, in)
		}
	}
	stopAll(servers)
	stopAll(datastores)
}

// readiness reports whether a named instance of a control plane runs and
// passes its probe.
func (r *Runtime) readiness(ref runtime.ControlPlaneRef) func(string) bool {
	return func(name string) bool {
		r.mu.Lock()
		in := r.planes[ref][name]
		r.mu.Unlock()
		return in != nil && in.getStatus().Phase == runtime.Running
	}
}

func (r *Runtime) notifier(ref runtime.ControlPlaneRef) func() {
	return func() {
		if r.onChange != nil {
			r.onChange(ref)
		}
	}
}

// Status implements runtime.Runtime.
func (r *Runtime) Status(ref runtime.ControlPlaneRef) []runtime.InstanceStatus {
	r.mu.Lock()
	plane := r.planes[ref]
	out := make([]runtime.InstanceStatus, 0, len(plane))
	for _, in := range plane {
		out = append(out, in.getStatus())
	}
	r.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Running implements runtime.Runtime: an instance this runtime
// runs is not Stopped, or, for a control plane not applied yet, a pid.json
// of its directory names a live process (pid and start time) — which the
// first Apply adopts. A directory of another owner runs nothing of ref's.
func (r *Runtime) Running(ref runtime.ControlPlaneRef) bool {
	r.mu.Lock()
	plane, applied := r.planes[ref]
	running := false
	for _, in := range plane {
		running = running || in.getStatus().Phase != runtime.Stopped
	}
	r.mu.Unlock()
	if applied {
		return running
	}
	if r.checkOwner(ref) != nil {
		return false
	}
	records, _ := filepath.Glob(filepath.Join(r.Dir(ref), "*", "pid.json"))
	for _, path := range records {
		if _, _, ok := LivePID(path); ok {
			return true
		}
	}
	return false
}

// Published implements runtime.Runtime: a process listens on the host, so a
// published port is reached at its Address and the port it was given.
func (r *Runtime) Published(_ context.Context, ref runtime.ControlPlaneRef, name string) (string, int, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, in := range r.planes[ref] {
		spec := in.currentSpec()
		for _, p := range spec.Publish {
			if p.Name == name {
				return p.Address, spec.Ports[p.Port], spec.Ports[p.Port] != 0, nil
			}
		}
	}
	return "", 0, false, nil
}

// Stop stops a control plane's processes and keeps its data.
func (r *Runtime) Stop(_ context.Context, ref runtime.ControlPlaneRef) {
	r.mu.Lock()
	plane := r.planes[ref]
	delete(r.planes, ref)
	r.mu.Unlock()
	instances := make([]*instance, 0, len(plane))
	for _, in := range plane {
		instances = append(instances, in)
	}
	stopInOrder(instances)
	// Processes of this control plane that no supervisor knows (an operator
	// that died before adopting them) are stopped from their pid files.
	StopOrphans(r.Dir(ref), r.log)
}

// Delete implements runtime.Runtime. A directory another owner claimed is
// left alone, its processes too (ErrNotOwner).
func (r *Runtime) Delete(ctx context.Context, ref runtime.ControlPlaneRef) error {
	if err := r.ForgetPorts(ctx, ref); err != nil {
		return err
	}
	if err := os.RemoveAll(r.Dir(ref)); err != nil {
		return fmt.Errorf("remove %s: %w", r.Dir(ref), err)
	}
	return nil
}

// StopAll stops every control plane this runtime supervises, keeping data.
func (r *Runtime) StopAll(ctx context.Context) {
	r.mu.Lock()
	refs := make([]runtime.ControlPlaneRef, 0, len(r.planes))
	for ref := range r.planes {
		refs = append(refs, ref)
	}
	r.mu.Unlock()
	var wg sync.WaitGroup
	for _, ref := range refs {
		wg.Go(func() { r.Stop(ctx, ref) })
	}
	wg.Wait()
}

// Release stops supervising without stopping any process: the processes keep
// serving and a later runtime adopts them.
func (r *Runtime) Release() {
	r.mu.Lock()
	var all []*instance
	for _, plane := range r.planes {
		for _, in := range plane {
			all = append(all, in)
		}
	}
	r.planes = map[runtime.ControlPlaneRef]map[string]*instance{}
	r.mu.Unlock()
	for _, in := range all {
		close(in.release)
	}
	for _, in := range all {
		<-in.done
	}
}

func stopAll(instances []*instance) {
	for _, in := range instances {
		close(in.stop)
	}
	for _, in := range instances {
		<-in.done
	}
}

// legacyDatastorePrefix names the directories of the instances recorded
// before a record said StopLast: etcd's members (etcd-N), the datastore.
const legacyDatastorePrefix = "etcd-"

// StopOrphans stops every process recorded in a pid file under dir, for
// control planes that no running supervisor owns. Instances recorded with
// StopLast stop last; so do etcd members recorded before the record said
// so (their directory is etcd-N).
func StopOrphans(dir string, log logr.Logger) {
	var servers, datastores []string
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "pid.json" {
			return nil //nolint:nilerr // keep sweeping
		}
		rec, _ := readPidRecord(path)
		if rec.StopLast || strings.HasPrefix(filepath.Base(filepath.Dir(path)), legacyDatastorePrefix) {
			datastores = append(datastores, path)
		} else {
			servers = append(servers, path)
		}
		return nil
	})
	stopRecorded(servers, log)
	stopRecorded(datastores, log)
}

func stopRecorded(pidFiles []string, log logr.Logger) {
	var wg sync.WaitGroup
	for _, path := range pidFiles {
		wg.Go(func() {
			rec, ok := readPidRecord(path)
			if !ok {
				return
			}
			if alive(rec.PID, rec.StartTime) {
				log.Info("stopping process", "pid", rec.PID, "pidFile", path)
				if err := terminate(rec.PID, rec.StartTime, stopGrace); err != nil {
					log.Error(err, "stop process", "pid", rec.PID)
				}
			}
			_ = removePidRecord(path)
		})
	}
	wg.Wait()
}

// command returns the program and arguments that run spec: a host program
// it names, or its component of the release of its Version (the
// hypershift binary for the compiled-in release).
func (r *Runtime) command(spec runtime.Spec) (string, []string, error) {
	if spec.Command != "" {
		return spec.Command, spec.Args, nil
	}
	rel, ok := r.releases.Lookup(spec.Version)
	if !ok {
		return "", nil, fmt.Errorf("%s runs Kubernetes %s, which this install does not have: it runs %s (releases directory %q)",
			spec.Name, spec.Version, strings.Join(r.releases.Versions(), ", "), r.releases.Dir())
	}
	path, prefix := release.Command(rel, spec.Component)
	if rel.CompiledIn() {
		path = r.binary
	}
	return path, append(prefix, spec.Args...), nil
}
