package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"hypershift.dev/internal/nodes/join"
)

// waitClusterDNS waits until the hosted cluster's DNS (the kube-dns
// Service's ClusterIP, reached from this host through the node's
// kube-proxy) answers kubernetes.default.svc.cluster.local, and returns
// the seconds since start.
func waitClusterDNS(ctx context.Context, kube kubernetes.Interface, start time.Time) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	var lastErr error
	for ctx.Err() == nil {
		svc, err := kube.CoreV1().Services("kube-system").Get(ctx, "kube-dns", metav1.GetOptions{})
		if err == nil {
			addr := net.JoinHostPort(svc.Spec.ClusterIP, "53")
			r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, network, addr)
			}}
			qctx, qcancel := context.WithTimeout(ctx, time.Second)
			ips, err := r.LookupHost(qctx, "kubernetes.default.svc.cluster.local.")
			qcancel()
			if err == nil && len(ips) > 0 {
				return round3(time.Since(start).Seconds()), nil
			}
			lastErr = err
		} else {
			lastErr = err
		}
		time.Sleep(100 * time.Millisecond)
	}
	if lastErr == nil {
		lastErr = ctx.Err()
	}
	return 0, fmt.Errorf("cluster DNS did not answer within 3 minutes of the join: %w", lastErr)
}

// dataPlaneMemory samples the node's data-plane processes: kube-proxy and
// the API server proxy (node processes naming the node dir) and the
// coredns and konnectivity-agent containers (processes in the node's own
// cgroup root, recorded in node.json). The largest process of each.
func dataPlaneMemory(nodeDir string) map[string]memoryMiB {
	out := map[string]memoryMiB{}
	keep := func(pid int, component string) {
		switch component {
		case join.KubeProxy, join.APIServerProxy, "coredns", "konnectivity-agent":
		default:
			return
		}
		if mem, ok := readMemory(pid, false); ok && mem.rss/1024 > out[component].RSS {
			out[component] = memoryMiB{RSS: round1(mem.rss / 1024), Anon: round1(mem.anon / 1024)}
		}
	}
	for _, pr := range findProcs(nodeDir+"/", nodeDir+" ") {
		keep(pr.pid, pr.component)
	}
	n, ok, err := join.Load(nodeDir)
	if err != nil || !ok || n.CgroupRoot == "" {
		return out
	}
	inCgroupRoot := func(pid int, _ []string) bool {
		cg, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cgroup"))
		return err == nil && strings.Contains(string(cg), ":"+n.CgroupRoot+"/")
	}
	for _, pr := range listProcs(inCgroupRoot) {
		keep(pr.pid, pr.component)
	}
	return out
}
