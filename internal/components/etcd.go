package components

import (
	"fmt"
	"strings"

	"hypershift.dev/internal/runtime"
)

func renderEtcd(cfg Config, i int) runtime.Spec {
	n := cfg.replicas().Etcd
	name := instanceName(Etcd, i, n)
	p := cfg.PKI
	dir := func(f string) string { return path(cfg.Layout.Dir, name, f) }
	peerURL := func(m int) string { return fmt.Sprintf("https://127.0.0.1:%d", cfg.Ports[etcdPort(m, "peer")]) }
	clientURL := fmt.Sprintf("https://127.0.0.1:%d", cfg.Ports[etcdPort(i, "client")])
	members := make([]string, n)
	for m := range n {
		members[m] = instanceName(Etcd, m, n) + "=" + peerURL(m)
	}
	return runtime.Spec{
		StopLast:  true,
		Name:      name,
		Component: Etcd,
		Args: []string{
			"--name=" + name,
			"--data-dir=" + dir("data"),
			"--listen-client-urls=" + clientURL,
			"--advertise-client-urls=" + clientURL,
			"--listen-peer-urls=" + peerURL(i),
			"--initial-advertise-peer-urls=" + peerURL(i),
			"--initial-cluster=" + strings.Join(members, ","),
			"--initial-cluster-state=new",
			"--initial-cluster-token=" + cfg.Name,
			fmt.Sprintf("--listen-metrics-urls=http://127.0.0.1:%d", cfg.Ports[etcdPort(i, "metrics")]),
			"--cert-file=" + dir("server.crt"),
			"--key-file=" + dir("server.key"),
			"--trusted-ca-file=" + dir("ca.crt"),
			"--client-cert-auth=true",
			"--peer-cert-file=" + dir("peer.crt"),
			"--peer-key-file=" + dir("peer.key"),
			"--peer-trusted-ca-file=" + dir("ca.crt"),
			"--peer-client-cert-auth=true",
			"--snapshot-count=10000",
			"--logger=zap",
			"--log-level=warn",
		},
		Files: []runtime.File{
			{Path: "ca.crt", Content: p.EtcdCA.CertPEM},
			{Path: "server.crt", Content: p.EtcdServer.CertPEM},
			{Path: "server.key", Content: p.EtcdServer.KeyPEM, Secret: true},
			{Path: "peer.crt", Content: p.EtcdPeer.CertPEM},
			{Path: "peer.key", Content: p.EtcdPeer.KeyPEM, Secret: true},
		},
		Ports: map[string]int{
			"client":  cfg.Ports[etcdPort(i, "client")],
			"peer":    cfg.Ports[etcdPort(i, "peer")],
			"metrics": cfg.Ports[etcdPort(i, "metrics")],
		},
		Readiness: runtime.Probe{Scheme: "http", Port: cfg.Ports[etcdPort(i, "metrics")], Path: "/health"},
		// GOGC=50: ~6 MiB less heap when idle.
		Env: cfg.hostedEnv(),
	}
}

// etcdServers lists every member's client URL.
func etcdServers(cfg Config) string {
	urls := make([]string, cfg.replicas().Etcd)
	for m := range urls {
		urls[m] = fmt.Sprintf("https://127.0.0.1:%d", cfg.Ports[etcdPort(m, "client")])
	}
	return strings.Join(urls, ",")
}
