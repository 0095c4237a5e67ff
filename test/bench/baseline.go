package main

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"hypershift.dev/internal/components"
	"hypershift.dev/internal/components/apiseed"
	"hypershift.dev/internal/hostnet"
	"hypershift.dev/internal/pki"
	"hypershift.dev/internal/runtime"
)

// baselineResult is baseline_start_s: the same binary's etcd and
// kube-apiserver, with the product's own rendered flags and files and
// certificates made beforehand, started by a plain Go routine until the
// API server's /readyz answers. It is the floor a create could reach.
type baselineResult struct {
	status
	dist
	// EtcdReadyP50 is when etcd's /health first answered.
	EtcdReadyP50 float64 `json:"etcd_health_ok_p50"`
	// ServingP50 is when the API server first answered at all.
	ServingP50 float64 `json:"apiserver_serving_p50"`
	// CPUSecondsP50 is the CPU time etcd and kube-apiserver used until
	// ready: the floor of what a burst of creates costs.
	CPUSecondsP50 float64 `json:"cpu_s_to_ready_p50"`
	// LastChecks are the /readyz checks that passed last: where the API
	// server's start time goes.
	LastChecks []readyzCheck `json:"last_readyz_checks_p50_s"`
	// Seeded is the same start with the bootstrap objects seeded; the
	// figures above are the bare, upstream start.
	Seeded *seededStart `json:"seeded,omitempty"`
}

// readyzCheck is when one /readyz?verbose check first passed.
type readyzCheck struct {
	Name string  `json:"name"`
	S    float64 `json:"s"`
}

func runBaseline(ctx context.Context, opts *options) *baselineResult {
	res := &baselineResult{Seeded: &seededStart{}}
	var totals, etcds, serving, cpu, seededTotals, seededCPU []float64
	checks := map[string][]float64{}
	// Bare and seeded starts alternate, so a change of the machine's load
	// meanwhile weighs on both alike.
runs:
	for i := 1; i <= opts.scaled(5, 3) && ctx.Err() == nil; i++ {
		for _, seeded := range []bool{false, true} {
			dir := fmt.Sprintf("%s-base/%d", opts.tmp, i)
			tl, err := startBaseline(ctx, opts.bin, dir, seeded)
			_ = os.RemoveAll(filepath.Dir(dir))
			if err != nil {
				// The runs so far are still reported.
				res.Error = err.Error()
				break runs
			}
			kind := "bare"
			if seeded {
				kind = "seeded"
				seededTotals = append(seededTotals, tl.ready.Seconds())
				seededCPU = append(seededCPU, tl.cpuSeconds)
			} else {
				totals = append(totals, tl.ready.Seconds())
				etcds = append(etcds, tl.etcd.Seconds())
				serving = append(serving, tl.serving.Seconds())
				cpu = append(cpu, tl.cpuSeconds)
				for name, d := range tl.checks {
					checks[name] = append(checks[name], d.Seconds())
				}
			}
			fmt.Printf("   run %d, %-6s: etcd /health %.2fs, kube-apiserver serving %.2fs, /readyz %.2fs; %.2f CPU-seconds\n",
				i, kind, tl.etcd.Seconds(), tl.serving.Seconds(), tl.ready.Seconds(), tl.cpuSeconds)
		}
	}
	res.dist = distOf(totals)
	res.EtcdReadyP50 = median(etcds)
	res.ServingP50 = median(serving)
	res.CPUSecondsP50 = median(cpu)
	res.LastChecks = lastChecks(checks, 5)
	res.Seeded.P50 = median(seededTotals)
	res.Seeded.CPUSecondsP50 = median(seededCPU)
	return res
}

// seededStart is the same start with the bootstrap objects seeded into the
// empty etcd, as every hypershift control plane of the compiled-in release
// starts (docs/performance.md, "Seeded first start").
type seededStart struct {
	P50           float64 `json:"p50"`
	CPUSecondsP50 float64 `json:"cpu_s_to_ready_p50"`
}

// lastChecks returns the n checks with the latest median pass time.
func lastChecks(byName map[string][]float64, n int) []readyzCheck {
	out := make([]readyzCheck, 0, len(byName))
	for name, xs := range byName {
		out = append(out, readyzCheck{Name: name, S: median(xs)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].S > out[j].S })
	if len(out) > n {
		out = out[:n]
	}
	return out
}

// startTimeline is when each step of a baseline start was first seen.
type startTimeline struct {
	etcd, serving, ready time.Duration
	checks               map[string]time.Duration
	cpuSeconds           float64
}

// startBaseline starts etcd and kube-apiserver together, as the process
// runtime does (the API server has no start dependency), and stops them
// before it returns. Unless seeded, the API server creates its bootstrap
// objects itself, as upstream's does.
func startBaseline(ctx context.Context, bin, dir string, seeded bool) (*startTimeline, error) {
	specs, certs, err := renderBaseline(dir)
	if err != nil {
		return nil, err
	}
	if !seeded {
		specs[1].Env = append(specs[1].Env, apiseed.DisableEnv+"=off")
	}
	start := time.Now()
	var started []*exec.Cmd
	defer func() { stopBaseline(started) }()
	for _, spec := range specs {
		cmd, err := startComponent(bin, dir, spec)
		if err != nil {
			return nil, err
		}
		started = append(started, cmd)
	}
	etcdHealth := fmt.Sprintf("http://127.0.0.1:%d/health", specs[0].Readiness.Port)
	readyz, err := readyzClient(certs.RootCA.CertPEM)
	if err != nil {
		return nil, err
	}
	apiReadyz := fmt.Sprintf("https://127.0.0.1:%d/readyz?verbose", specs[1].Readiness.Port)
	tl := &startTimeline{checks: map[string]time.Duration{}}
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if tl.etcd == 0 && probeWith(ctx, http.DefaultClient, etcdHealth) {
			tl.etcd = time.Since(start)
		}
		code, body := getBody(ctx, readyz, apiReadyz)
		now := time.Since(start)
		if code != 0 && tl.serving == 0 {
			tl.serving = now
		}
		for _, line := range strings.Split(body, "\n") {
			if name, ok := strings.CutPrefix(line, "[+]"); ok {
				name = strings.TrimSuffix(name, " ok")
				if _, seen := tl.checks[name]; !seen {
					tl.checks[name] = now
				}
			}
		}
		if code == http.StatusOK {
			tl.ready = now
			for _, cmd := range started {
				if ticks, ok := cpuTicks(cmd.Process.Pid); ok {
					tl.cpuSeconds += float64(ticks) / clockTicks
				}
			}
			return tl, nil
		}
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("baseline kube-apiserver not ready after 2m; see logs under %s", dir)
}

// getBody GETs url and returns the status code (0 when there was no
// answer) and up to 64 KiB of the body.
func getBody(ctx context.Context, c *http.Client, url string) (int, string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, ""
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, string(body)
}

// renderBaseline makes the certificates and renders the components exactly
// as the operator does for a hosted cluster, and returns etcd and
// kube-apiserver in that order.
func renderBaseline(dir string) ([]runtime.Spec, *pki.ControlPlane, error) {
	ips := []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1"), net.ParseIP("172.31.0.1")}
	if ip := hostnet.HostIPv4(); ip != nil {
		ips = append(ips, ip)
	}
	certs, err := pki.EnsureControlPlane(pki.FileStore{Dir: filepath.Join(dir, "pki")}, pki.ControlPlaneOptions{
		APIServerIPs:      ips,
		APIServerDNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
	})
	if err != nil {
		return nil, nil, fmt.Errorf("baseline PKI: %w", err)
	}
	names := components.PortNames(components.SingleReplica)
	free, err := loopbackPorts(len(names))
	if err != nil {
		return nil, nil, err
	}
	ports := map[string]int{}
	for i, name := range names {
		ports[name] = free[i]
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, nil, fmt.Errorf("encryption key: %w", err)
	}
	all, err := components.Render(components.Config{
		Name:             "clusters-baseline",
		Replicas:         components.SingleReplica,
		Layout:           runtime.Layout{Dir: dir},
		PKI:              certs,
		Ports:            ports,
		ServiceCIDR:      "172.31.0.0/16",
		ClusterCIDR:      "10.132.0.0/14",
		NodeCIDRMaskSize: 23,
		EncryptionKey:    key,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("render baseline components: %w", err)
	}
	var specs []runtime.Spec
	for _, want := range []string{components.Etcd, components.KubeAPIServer} {
		for _, s := range all {
			if s.Component == want {
				specs = append(specs, s)
				break
			}
		}
	}
	if len(specs) != 2 {
		return nil, nil, errors.New("rendered components lack etcd or kube-apiserver")
	}
	return specs, certs, nil
}

// startComponent writes the spec's files and starts it as the process
// runtime does: in its directory, in its own session, output to a log.
func startComponent(bin, dir string, spec runtime.Spec) (*exec.Cmd, error) {
	instDir := filepath.Join(dir, spec.Name)
	for _, f := range spec.Files {
		mode := os.FileMode(0o644)
		if f.Secret {
			mode = 0o600
		}
		path := filepath.Join(instDir, f.Path)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("create %s: %w", filepath.Dir(path), err)
		}
		if err := os.WriteFile(path, f.Content, mode); err != nil {
			return nil, fmt.Errorf("write %s: %w", path, err)
		}
	}
	log, err := os.Create(filepath.Join(instDir, spec.Name+".log"))
	if err != nil {
		return nil, fmt.Errorf("create log of %s: %w", spec.Name, err)
	}
	defer log.Close()
	cmd := exec.Command(bin, append([]string{"component", spec.Component}, spec.Args...)...)
	cmd.Dir = instDir
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Env = append(os.Environ(), spec.Env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start baseline %s: %w", spec.Name, err)
	}
	return cmd, nil
}

// stopBaseline stops the API server before etcd, as the runtime does:
// SIGTERM to each session, SIGKILL after 10 s.
func stopBaseline(cmds []*exec.Cmd) {
	for i := len(cmds) - 1; i >= 0; i-- {
		cmd := cmds[i]
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) // it may have exited already
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}
}

func readyzClient(caPEM []byte) (*http.Client, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("baseline root CA does not parse")
	}
	return &http.Client{
		Timeout:   time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, DisableKeepAlives: true},
	}, nil
}

func probeWith(ctx context.Context, c *http.Client, url string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := c.Do(req)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// loopbackPorts reserves n distinct free loopback ports and releases them.
func loopbackPorts(n int) ([]int, error) {
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
