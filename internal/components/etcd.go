package components

import (
	"fmt"
)

func renderEtcd(cfg Config) Spec {
	const name = "etcd-0"
	p := cfg.PKI
	dir := func(f string) string { return path(cfg.Dir, name, f) }
	peerURL := fmt.Sprintf("https://127.0.0.1:%d", cfg.Ports.EtcdPeer)
	clientURL := fmt.Sprintf("https://127.0.0.1:%d", cfg.Ports.EtcdClient)
	return Spec{
		Name:      name,
		Component: Etcd,
		Args: []string{
			"--name=" + name,
			"--data-dir=" + dir("data"),
			"--listen-client-urls=" + clientURL,
			"--advertise-client-urls=" + clientURL,
			"--listen-peer-urls=" + peerURL,
			"--initial-advertise-peer-urls=" + peerURL,
			"--initial-cluster=" + name + "=" + peerURL,
			"--initial-cluster-state=new",
			"--initial-cluster-token=" + cfg.Name,
			fmt.Sprintf("--listen-metrics-urls=http://127.0.0.1:%d", cfg.Ports.EtcdMetrics),
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
		Files: []File{
			{Path: "ca.crt", Content: p.EtcdCA.CertPEM},
			{Path: "server.crt", Content: p.EtcdServer.CertPEM},
			{Path: "server.key", Content: p.EtcdServer.KeyPEM, Secret: true},
			{Path: "peer.crt", Content: p.EtcdPeer.CertPEM},
			{Path: "peer.key", Content: p.EtcdPeer.KeyPEM, Secret: true},
		},
		Ports: map[string]int{
			"client":  cfg.Ports.EtcdClient,
			"peer":    cfg.Ports.EtcdPeer,
			"metrics": cfg.Ports.EtcdMetrics,
		},
		Readiness: Probe{Scheme: "http", Port: cfg.Ports.EtcdMetrics, Path: "/health"},
	}
}
