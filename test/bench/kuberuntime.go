package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// kubeRuntimeResult is kube_runtime: hypershift installed into a
// Kubernetes cluster of our own parts (a None cluster with this host joined
// as its real node), and control planes created in it as pods.
type kubeRuntimeResult struct {
	status
	Rounds int `json:"rounds"`
	// Kept is how many clusters of the last rounds stay up (not destroyed
	// in their round) for the usage sample; they are destroyed after it.
	Kept   int    `json:"kept_for_usage"`
	Node   string `json:"node"`
	NodeIP string `json:"node_ip"`
	// MgmtCreateS is `create cluster none --name mgmt --wait`; JoinS the
	// join line until it exited (its Node Ready).
	MgmtCreateS float64 `json:"mgmt_create_wait_s"`
	JoinS       float64 `json:"join_s"`
	// InstallS is `hypershift install` until it returned: the objects
	// applied, the CRDs served and the operator Deployment available.
	InstallS float64 `json:"install_s"`
	// CreateS is `create cluster none … --wait` until it returned (the CLI
	// polls Available every 200 ms); DestroyS `destroy cluster --wait`.
	CreateS  *dist `json:"create_to_available_s,omitempty"`
	DestroyS *dist `json:"destroy_s,omitempty"`
	// Usage is what the kubelet measured of the kept control planes' pods.
	Usage *kubeUsage `json:"usage,omitempty"`
	// Burst is clusters created at once after the rounds.
	Burst *kubeBurst `json:"burst,omitempty"`
}

// kubeRuntimeCounts is how many clusters are created one after another,
// and how many of the last stay up for the usage sample.
func kubeRuntimeCounts(o *options) (rounds, kept int) {
	return o.scaled(5, 2), 2
}

// kubeRuntimeSettle is how long the kept clusters idle after the last one
// was Available before the usage sample.
func kubeRuntimeSettle(o *options) time.Duration {
	if o.quick {
		return 20 * time.Second
	}
	return 60 * time.Second
}

var joinedAs = regexp.MustCompile(`as node (\S+) \((\S+)\)`)

func runKubeRuntime(ctx context.Context, opts *options) (res *kubeRuntimeResult) {
	res = &kubeRuntimeResult{}
	res.Rounds, res.Kept = kubeRuntimeCounts(opts)
	if why := realJoinSkipReason(); why != "" {
		res.Skipped = why
		fmt.Printf("   skipped: %s\n", why)
		return res
	}
	p, err := startPlane(ctx, opts, opts.tmp+"-k")
	if err != nil {
		res.Error = err.Error()
		return res
	}
	defer p.stop()
	// The node's dir and etcd's volumes, next to the plane's: the plane's
	// purge never reaches into a node's mounts.
	nodeRoot := opts.tmp + "-kn"
	nodeDir := filepath.Join(nodeRoot, "node")
	defer removeNodeRoot(nodeRoot)
	defer func() {
		// The node goes first, with every pod on it; then the plane.
		if _, err := resetNode(p, nodeDir); err != nil {
			res.Error = joinErrors(res.Error, err.Error())
		}
	}()

	if err := kubeRuntimeFlow(ctx, opts, p, nodeRoot, nodeDir, res); err != nil {
		res.Error = joinErrors(err.Error(), res.Error)
	}
	return res
}

func joinErrors(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "\n" + b
}

// kubeRuntimeFlow is the phase from the management cluster to the usage
// sample; the caller cleans up whatever it left.
func kubeRuntimeFlow(ctx context.Context, opts *options, p *plane, nodeRoot, nodeDir string, res *kubeRuntimeResult) error {
	kube, mgmtKC, err := kubeRuntimeSetup(ctx, p, nodeRoot, nodeDir, res)
	if err != nil {
		return err
	}
	mgmt := func(args ...string) ([]byte, error) {
		return p.hypershift(ctx, append([]string{"--kubeconfig", mgmtKC}, args...)...)
	}
	start := time.Now()
	if out, err := mgmt("install", "--timeout", "5m"); err != nil {
		return fmt.Errorf("install: %w\n%s", err, tail(out, 20))
	}
	res.InstallS = round3(time.Since(start).Seconds())
	fmt.Printf("   install → operator available: %.1fs\n", res.InstallS)

	var creates, destroys []float64
	defer func() {
		res.CreateS = summarizeIfAny(creates)
		res.DestroyS = summarizeIfAny(destroys)
	}()
	destroy := func(name string) error {
		start := time.Now()
		if out, err := mgmt("destroy", "cluster", "--name", name, "--wait", "--timeout", "3m"); err != nil {
			return fmt.Errorf("destroy cluster %s: %w\n%s", name, err, tail(out, 20))
		}
		destroys = append(destroys, round3(time.Since(start).Seconds()))
		return nil
	}
	var kept []string
	var lastAvailable time.Time
	for k := 1; k <= res.Rounds; k++ {
		name := fmt.Sprintf("inner%d", k)
		start := time.Now()
		out, err := mgmt("create", "cluster", "none", "--name", name,
			"--api-server-publishing", "NodePort", "--api-server-address", res.NodeIP,
			"--etcd-storage-size", "1Gi", "--wait", "--timeout", "5m")
		if err != nil {
			return fmt.Errorf("round %d: create cluster %s: %w\n%s", k, name, err, tail(out, 20))
		}
		lastAvailable = time.Now()
		creates = append(creates, round3(lastAvailable.Sub(start).Seconds()))
		if k > res.Rounds-res.Kept {
			kept = append(kept, name)
			fmt.Printf("   round %d: %s Available after %.2fs (kept for the usage sample)\n", k, name, creates[len(creates)-1])
			continue
		}
		if err := destroy(name); err != nil {
			return fmt.Errorf("round %d: %w", k, err)
		}
		fmt.Printf("   round %d: %s Available after %.2fs, destroyed after %.2fs\n", k, name, creates[len(creates)-1], destroys[len(destroys)-1])
	}

	if err := sleep(ctx, time.Until(lastAvailable.Add(kubeRuntimeSettle(opts)))); err != nil {
		return errors.New("interrupted before the usage sample")
	}
	if err := sampleKept(ctx, kube, res, kept, lastAvailable); err != nil {
		return err
	}
	for _, name := range kept {
		if err := destroy(name); err != nil {
			return err
		}
		fmt.Printf("   %s destroyed after %.2fs\n", name, destroys[len(destroys)-1])
	}
	return runKubeBurst(ctx, opts, p, kube, nodeRoot, mgmt, res)
}

// kubeRuntimeSetup makes the management cluster (a None cluster with this
// host joined as its node) and etcd's volumes, and returns a client of it
// and its kubeconfig.
func kubeRuntimeSetup(ctx context.Context, p *plane, nodeRoot, nodeDir string, res *kubeRuntimeResult) (kubernetes.Interface, string, error) {
	start := time.Now()
	out, err := p.cli(ctx, "create", "cluster", "none", "--name", "mgmt", "--wait", "--timeout", "5m")
	if err != nil {
		return nil, "", fmt.Errorf("create cluster none --name mgmt --wait: %w\n%s", err, tail(out, 20))
	}
	res.MgmtCreateS = round3(time.Since(start).Seconds())
	line, err := joinLine(out)
	if err != nil {
		return nil, "", err
	}
	if err := requireLoopback(flagAfter(line, "--server")); err != nil {
		return nil, "", err
	}
	cfg, err := p.hostedKubeconfig(ctx, "mgmt")
	if err != nil {
		return nil, "", err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, "", fmt.Errorf("client of mgmt: %w", err)
	}

	start = time.Now()
	out, err = p.hypershift(ctx, append(line, "--node-dir", nodeDir)...)
	if err != nil {
		return nil, "", fmt.Errorf("hypershift join: %w\n%s", err, tail(out, 20))
	}
	res.JoinS = round3(time.Since(start).Seconds())
	m := joinedAs.FindSubmatch(out)
	if m == nil || !readyLine.Match(out) {
		return nil, "", fmt.Errorf("join exited without reporting a Ready node:\n%s", tail(out, 20))
	}
	res.Node, res.NodeIP = string(m[1]), string(m[2])
	fmt.Printf("   mgmt Available after %.1fs; node %s (%s) Ready after %.1fs\n", res.MgmtCreateS, res.Node, res.NodeIP, res.JoinS)

	// No provisioner: one volume per inner cluster's etcd, as the e2e test
	// makes them. Retain keeps a released volume from being bound again.
	for k := 1; k <= res.Rounds; k++ {
		if err := makeEtcdVolume(ctx, kube, fmt.Sprintf("inner%d-etcd", k), filepath.Join(nodeRoot, "volumes", fmt.Sprintf("inner%d", k))); err != nil {
			return nil, "", err
		}
	}
	return kube, filepath.Join(p.dataDir, "mgmt.kubeconfig"), nil
}

// sampleKept records the kubelet's figures of the kept clusters' pods.
func sampleKept(ctx context.Context, kube kubernetes.Interface, res *kubeRuntimeResult, kept []string, lastAvailable time.Time) error {
	var namespaces []string
	for _, name := range kept {
		namespaces = append(namespaces, "clusters-"+name)
	}
	usage, err := sampleKubeUsage(ctx, kube, res.Node, namespaces)
	if err != nil {
		return err
	}
	usage.MeasuredAfterS = round1(time.Since(lastAvailable).Seconds())
	res.Usage = usage
	pc := usage.PerControlPlane
	fmt.Printf("   usage after %.0fs: per control plane %.0f MiB working set, %.0f millicores (requests %.0f MiB, %.0f m); operator %v MiB\n",
		usage.MeasuredAfterS, pc.WorkingSetMiB, pc.CPUMillicores, pc.RequestMemoryMiB, pc.RequestCPUMillicores, usage.OperatorWorkingSetMiB)
	return nil
}

// makeEtcdVolume makes a 1Gi hostPath PersistentVolume on a directory of
// this host (the one node), owned by the pods' user (65532), without a
// storage class.
func makeEtcdVolume(ctx context.Context, kube kubernetes.Interface, name, dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("volume %s: %w", name, err)
	}
	if err := os.Chown(dir, 65532, 65532); err != nil {
		return fmt.Errorf("volume %s: %w", name, err)
	}
	dirType := corev1.HostPathDirectory
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: dir, Type: &dirType},
			},
		},
	}
	if _, err := kube.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create persistent volume %s: %w", name, err)
	}
	return nil
}
