// Command bench measures how fast hosted control planes come up and what
// they cost: create latency against a hand-started baseline of the same
// binary, idle footprint, recovery, a real node joining, the machines of a
// cluster of platform Host joining through Cluster API, kwokctl driving
// the same components as a peer, control planes as pods of a cluster
// (`hypershift install`), 1,000 simulated nodes, density, a burst of
// creates, and 300 hibernated clusters with 60 woken at once. It prints a table and writes JSON.
//
//	go run ./test/bench [--quick] [--only=baseline,create,rss,recovery,hibernation,real_node_join,host_machines,kube_runtime,peer,nodes_1000,density,burst,hibernated_300]
//
// Everything it starts lives in data dirs under /tmp and is stopped with
// `hypershift down --purge` (or killed by pid) before it exits, also on
// error or Ctrl-C. See docs/performance.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// phaseNames in run order: the quiet measurements first, the heavy ones last.
var phaseNames = []string{"baseline", "create", "rss", "recovery", "hibernation", "real_node_join", "host_machines", "kube_runtime", "peer", "nodes_1000", "density", "burst", "hibernated_300"}

type options struct {
	quick bool
	only  map[string]bool
	bin   string
	out   string
	root  string // repository root
	// tmp is the prefix of every data dir: short, for unix socket paths.
	tmp string
	// upArgs are passed to every `hypershift up` of the bench, so that a
	// lever behind a flag is measured on and off with one binary.
	upArgs []string
}

func main() {
	os.Exit(run())
}

func run() int {
	opts, err := parseFlags()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 2
	}
	ctrllog.SetLogger(logr.Discard()) // the bench prints its own progress
	// Signals cancel the context; the handler stays installed until the end
	// so that a second Ctrl-C cannot cut the clean-up short.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	done := make(chan struct{})
	defer close(done) // runs before stop: no "interrupted" at a normal end
	go func() {
		select {
		case <-ctx.Done():
			fmt.Fprintln(os.Stderr, "\nbench: interrupted, stopping everything it started…")
		case <-done:
		}
	}()

	rep := newReport(opts)
	start := time.Now()
	for _, name := range phaseNames {
		if !opts.only[name] {
			rep.skip(name, "not selected with --only")
			continue
		}
		if ctx.Err() != nil {
			rep.skip(name, "interrupted")
			continue
		}
		fmt.Printf("\n== %s\n", name)
		phaseStart := time.Now()
		runPhase(ctx, opts, rep, name)
		fmt.Printf("   (%s took %s)\n", name, time.Since(phaseStart).Round(time.Second))
	}
	if rep.shared != nil {
		rep.shared.stop()
		rep.shared = nil
	}
	rep.finish(time.Since(start))

	fmt.Println()
	rep.printTable(os.Stdout)
	if err := rep.write(opts.out); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	fmt.Printf("\nwrote %s\n", opts.out)
	if ctx.Err() != nil {
		return 130
	}
	return 0
}

func runPhase(ctx context.Context, opts *options, rep *report, name string) {
	switch name {
	case "baseline":
		rep.Baseline = runBaseline(ctx, opts)
	case "create", "rss":
		// create and rss share one management plane, started on first use.
		runCreateAndRSS(ctx, opts, rep, name)
	case "recovery":
		rep.Recovery = runRecovery(ctx, opts)
	case "hibernation":
		rep.Hibernation = runHibernation(ctx, opts)
	case "real_node_join":
		rep.RealJoin = runRealJoin(ctx, opts)
	case "host_machines":
		rep.HostMachines = runHostMachines(ctx, opts)
	case "kube_runtime":
		rep.KubeRuntime = runKubeRuntime(ctx, opts)
	case "peer":
		rep.Peer = runPeer(ctx, opts)
	case "nodes_1000":
		rep.Nodes = runNodes(ctx, opts)
	case "density":
		rep.Density = runDensity(ctx, opts)
	case "burst":
		rep.Burst = runBurst(ctx, opts)
	case "hibernated_300":
		rep.Sleepers = runSleepers(ctx, opts)
	}
}

// runCreateAndRSS runs create and rss on one management plane; whichever of
// the two is selected last stops it.
func runCreateAndRSS(ctx context.Context, opts *options, rep *report, name string) {
	if rep.shared == nil {
		p, err := startPlane(ctx, opts, opts.tmp+"-c")
		if err != nil {
			rep.fail(name, err)
			return
		}
		rep.shared = p
	}
	switch name {
	case "create":
		rep.Create = runCreate(ctx, opts, rep.shared)
	case "rss":
		rep.RSS, rep.IdleCPU = runFootprint(ctx, opts, rep.shared)
	}
	if name == "rss" || !opts.only["rss"] {
		rep.shared.stop()
		rep.shared = nil
	}
}

func parseFlags() (*options, error) {
	root, err := repoRoot()
	if err != nil {
		return nil, err
	}
	defaultBin := os.Getenv("HYPERSHIFT_BIN")
	if defaultBin == "" {
		defaultBin = "bin/hypershift"
	}
	opts := &options{root: root, tmp: fmt.Sprintf("/tmp/hsb%d", os.Getpid())}
	only := flag.String("only", strings.Join(phaseNames, ","), "comma list of phases to run: "+strings.Join(phaseNames, ","))
	flag.BoolVar(&opts.quick, "quick", false, "fewer and smaller runs (a few minutes)")
	flag.StringVar(&opts.bin, "bin", defaultBin, "hypershift binary, relative to the repository root")
	flag.StringVar(&opts.out, "out", "bench/out/latest.json", "JSON report, relative to the repository root")
	upArgs := flag.String("up-args", "", "flags added to every `hypershift up`, space-separated (e.g. --control-plane-nice=0)")
	flag.Parse()
	opts.upArgs = strings.Fields(*upArgs)
	if flag.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", flag.Args())
	}
	opts.only = map[string]bool{}
	for _, n := range strings.Split(*only, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if !contains(phaseNames, n) {
			return nil, fmt.Errorf("unknown phase %q in --only (phases: %s)", n, strings.Join(phaseNames, ","))
		}
		opts.only[n] = true
	}
	opts.bin = underRoot(root, opts.bin)
	opts.out = underRoot(root, opts.out)
	if _, err := os.Stat(opts.bin); err != nil {
		return nil, fmt.Errorf("no hypershift binary at %s: run `make build` or pass --bin", opts.bin)
	}
	return opts, nil
}

// repoRoot walks up from the working directory to the module's go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("working directory: %w", err)
	}
	for {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.HasPrefix(string(data), "module hypershift.dev\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("run from inside the hypershift.dev repository")
		}
		dir = parent
	}
}

func underRoot(root, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(root, p)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// scaled picks the full or the quick value.
func (o *options) scaled(full, quick int) int {
	if o.quick {
		return quick
	}
	return full
}

// idleWindow is how long idle control planes' CPU is measured (rss,
// peer): long enough to hold several of each component's 10 s readiness
// probes.
func (o *options) idleWindow() time.Duration {
	if o.quick {
		return 20 * time.Second
	}
	return 60 * time.Second
}

func (o *options) settle() time.Duration {
	if o.quick {
		return 15 * time.Second
	}
	return 60 * time.Second
}
