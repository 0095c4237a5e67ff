package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/scheme"
	"hypershift.dev/internal/version"
)

// clusterNamespace is where the bench creates HostedClusters, as the CLI does.
const clusterNamespace = "clusters"

// plane is an embedded management plane in its own data dir, started with
// `hypershift up --detach` and removed with `hypershift down --purge`.
type plane struct {
	bin     string
	dataDir string
	upArgs  []string
	client  client.Client
	// endpointHost, when set, is the one address besides loopback a hosted
	// API server of this plane may have: the gateway of the machine network
	// host_machines made, this host's own address on the bridge it made.
	endpointHost string
}

func startPlane(ctx context.Context, opts *options, dataDir string) (*plane, error) {
	p := &plane{bin: opts.bin, dataDir: dataDir, upArgs: opts.upArgs}
	start := time.Now()
	if out, err := p.up(ctx); err != nil {
		p.stop() // a half-started plane is still ours to remove
		return nil, fmt.Errorf("start management plane in %s: %w\n%s", dataDir, err, out)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dataDir, "management.kubeconfig"))
	if err != nil {
		p.stop()
		return nil, fmt.Errorf("load management kubeconfig: %w", err)
	}
	// The bench polls often; the default 5 QPS would throttle it, not the product.
	cfg.QPS, cfg.Burst = 500, 1000
	p.client, err = client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		p.stop()
		return nil, fmt.Errorf("connect to the management plane: %w", err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: clusterNamespace}}
	if err := p.client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		p.stop()
		return nil, fmt.Errorf("create namespace %s: %w", clusterNamespace, err)
	}
	fmt.Printf("   management plane up in %s (%s)\n", time.Since(start).Round(100*time.Millisecond), dataDir)
	return p, nil
}

// stop removes everything of the plane, whatever state it is in. It runs on
// a context of its own: it is also the clean-up after Ctrl-C.
func (p *plane) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	if out, err := p.hypershift(ctx, "down", "--purge"); err != nil {
		fmt.Fprintf(os.Stderr, "   warning: down --purge %s: %v\n%s", p.dataDir, err, out)
	}
	// Anything that outlived `down` (it should not) is killed by pid.
	if n := killUnder(p.dataDir); n > 0 {
		fmt.Fprintf(os.Stderr, "   warning: killed %d processes left under %s\n", n, p.dataDir)
		_ = os.RemoveAll(p.dataDir)
	}
	fmt.Printf("   management plane %s removed in %s\n", p.dataDir, time.Since(start).Round(100*time.Millisecond))
}

// hypershift runs the CLI against this plane's data dir. The child gets its
// own process group so a terminal's Ctrl-C reaches only the bench, which
// then cleans up in order.
// up starts (or resumes) the plane in the background with the bench's
// --up-args.
func (p *plane) up(ctx context.Context) ([]byte, error) {
	return p.hypershift(ctx, append([]string{"up", "--detach", "--metrics-bind-address", "0"}, p.upArgs...)...)
}

func (p *plane) hypershift(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, p.bin, append([]string{"--data-dir", p.dataDir}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.Bytes(), err
}

// cli runs a CLI command that talks to the management plane, naming its
// kubeconfig so that a $KUBECONFIG in the environment cannot redirect it.
func (p *plane) cli(ctx context.Context, args ...string) ([]byte, error) {
	return p.hypershift(ctx, append(args, "--kubeconfig", filepath.Join(p.dataDir, "management.kubeconfig"))...)
}

// hostedKubeconfig writes the cluster's admin kubeconfig with `hypershift
// create kubeconfig` into the plane's data dir and loads it; like
// hostedRESTConfig it refuses a server that is not on loopback (or at the
// plane's endpointHost).
func (p *plane) hostedKubeconfig(ctx context.Context, name string) (*rest.Config, error) {
	path := filepath.Join(p.dataDir, name+".kubeconfig")
	if out, err := p.cli(ctx, "create", "kubeconfig", "--name", name, "-o", path); err != nil {
		return nil, fmt.Errorf("create kubeconfig --name %s: %w\n%s", name, err, out)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig of %s: %w", name, err)
	}
	cfg.QPS, cfg.Burst = 100, 200
	return cfg, p.requireOwnEndpoint(cfg.Host)
}

// clusterDir is the directory of a hosted control plane; every one of its
// processes has it on the command line. The trailing slash keeps c1 from
// matching c10.
func (p *plane) clusterDir(name string) string {
	return filepath.Join(p.dataDir, "clusters", clusterNamespace+"-"+name) + "/"
}

// hostedCluster is what `hypershift create cluster none --name NAME` creates.
func hostedCluster(name string) *hypershiftv1alpha1.HostedCluster {
	return hypershiftv1alpha1.NewHostedCluster(clusterNamespace, name, hypershiftv1alpha1.NonePlatform, version.KubernetesVersion)
}

func (p *plane) create(ctx context.Context, name string) error {
	return p.createCluster(ctx, hostedCluster(name))
}

func (p *plane) createCluster(ctx context.Context, hc *hypershiftv1alpha1.HostedCluster) error {
	if err := p.client.Create(ctx, hc); err != nil {
		return fmt.Errorf("create hosted cluster %s: %w", hc.Name, err)
	}
	return nil
}

func isAvailable(hc *hypershiftv1alpha1.HostedCluster) bool {
	c := meta.FindStatusCondition(hc.Status.Conditions, hypershiftv1alpha1.Available.String())
	return c != nil && c.Status == metav1.ConditionTrue
}

// waitAvailable polls every 50 ms until the cluster is Available and
// returns when it saw it; observe (may be nil) runs on every tick.
func (p *plane) waitAvailable(ctx context.Context, name string, timeout time.Duration, observe func()) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	key := client.ObjectKey{Namespace: clusterNamespace, Name: name}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	hc := &hypershiftv1alpha1.HostedCluster{}
	for {
		if err := p.client.Get(ctx, key, hc); err == nil && isAvailable(hc) {
			return nil
		}
		if observe != nil {
			observe()
		}
		select {
		case <-ctx.Done():
			if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("interrupted while waiting for hosted cluster %s", name)
			}
			return fmt.Errorf("hosted cluster %s not Available after %s: %s", name, timeout, conditionSummary(hc))
		case <-tick.C:
		}
	}
}

func conditionSummary(hc *hypershiftv1alpha1.HostedCluster) string {
	c := meta.FindStatusCondition(hc.Status.Conditions, hypershiftv1alpha1.Available.String())
	if c == nil {
		return "no Available condition"
	}
	return fmt.Sprintf("Available=%s (%s): %s", c.Status, c.Reason, c.Message)
}

// destroy deletes the cluster and waits until it is gone: its finalizers
// stop its processes and remove its data first.
func (p *plane) destroy(ctx context.Context, name string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	hc := hostedCluster(name)
	if err := p.client.Delete(ctx, hc); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("delete hosted cluster %s: %w", name, err)
	}
	for {
		err := p.client.Get(ctx, client.ObjectKeyFromObject(hc), hc)
		if apierrors.IsNotFound(err) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("hosted cluster %s still present after %s", name, timeout)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// hostedRESTConfig reads the cluster's admin kubeconfig from its Secret. It
// refuses an API server that is not on loopback (or at the plane's
// endpointHost): the bench sends traffic only to this machine's loopback
// addresses and to the machine network it made.
func (p *plane) hostedRESTConfig(ctx context.Context, name string) (*rest.Config, error) {
	hc := &hypershiftv1alpha1.HostedCluster{}
	if err := p.client.Get(ctx, client.ObjectKey{Namespace: clusterNamespace, Name: name}, hc); err != nil {
		return nil, fmt.Errorf("get hosted cluster %s: %w", name, err)
	}
	ref := hc.Status.KubeConfig
	if ref == nil {
		return nil, fmt.Errorf("hosted cluster %s has no kubeconfig yet", name)
	}
	secret := &corev1.Secret{}
	if err := p.client.Get(ctx, client.ObjectKey{Namespace: clusterNamespace, Name: ref.Name}, secret); err != nil {
		return nil, fmt.Errorf("read kubeconfig of %s: %w", name, err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(secret.Data[ref.Key])
	if err != nil {
		return nil, fmt.Errorf("parse kubeconfig of %s: %w", name, err)
	}
	return cfg, p.requireOwnEndpoint(cfg.Host)
}

// requireOwnEndpoint refuses a hosted API server that is neither on
// loopback nor at the plane's endpointHost.
func (p *plane) requireOwnEndpoint(server string) error {
	if p.endpointHost != "" {
		if u, err := url.Parse(server); err == nil && u.Hostname() == p.endpointHost {
			return nil
		}
	}
	return requireLoopback(server)
}

func requireLoopback(server string) error {
	u, err := url.Parse(server)
	if err != nil {
		return fmt.Errorf("parse server %q: %w", server, err)
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); (ip != nil && ip.IsLoopback()) || host == "localhost" {
		return nil
	}
	return fmt.Errorf("server %s is not a loopback address; the bench only talks to loopback", server)
}
