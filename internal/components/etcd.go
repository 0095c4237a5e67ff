package components

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"hypershift.dev/internal/pki"
	"hypershift.dev/internal/runtime"
)

func renderEtcd(cfg Config, i int) runtime.Spec {
	n := cfg.replicas().Etcd
	name := instanceName(Etcd, i, n)
	p := cfg.PKI
	dir := cfg.dir(Etcd, name)
	self := cfg.self(name)
	// host is where member m is reached: loopback on one host, its own
	// name in pods.
	host := func(member string) string {
		if cfg.pods() {
			return cfg.Layout.Host(Etcd, member)
		}
		return loopback
	}
	url := func(member string, port int) string {
		return "https://" + net.JoinHostPort(host(member), strconv.Itoa(port))
	}
	clientPort, peerPort := cfg.Ports[etcdPort(i, "client")], cfg.Ports[etcdPort(i, "peer")]
	members := make([]string, n)
	for m := range n {
		member := instanceName(Etcd, m, n)
		members[m] = member + "=" + url(member, cfg.Ports[etcdPort(m, "peer")])
	}
	listen := func(port int) string { return "https://" + net.JoinHostPort(cfg.listen(), strconv.Itoa(port)) }
	spec := runtime.Spec{
		StopLast: true,
		Data:     "data",
		// The operator's backups take snapshots at the client port.
		OperatorPorts: []string{"client"},
		Name:          name,
		Component:     Etcd,
		Args: []string{
			"--name=" + self,
			"--data-dir=" + dir("data"),
			"--listen-client-urls=" + listen(clientPort),
			"--advertise-client-urls=" + url(self, clientPort),
			"--listen-peer-urls=" + listen(peerPort),
			"--initial-advertise-peer-urls=" + url(self, peerPort),
			"--initial-cluster=" + strings.Join(members, ","),
			"--initial-cluster-state=new",
			"--initial-cluster-token=" + cfg.Name,
			"--listen-metrics-urls=http://" + net.JoinHostPort(cfg.listen(), strconv.Itoa(cfg.Ports[etcdPort(i, "metrics")])),
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
		// etcd reads its serving and peer certificates on every TLS
		// handshake: a renewal needs no restart.
		Files: append(cfg.readOnceTrust("ca.crt", name, pki.EtcdCAName),
			runtime.File{Path: "server.crt", Content: p.EtcdServer.CertPEM, Reloadable: true},
			runtime.File{Path: "server.key", Content: p.EtcdServer.KeyPEM, Secret: true, Reloadable: true},
			runtime.File{Path: "peer.crt", Content: p.EtcdPeer.CertPEM, Reloadable: true},
			runtime.File{Path: "peer.key", Content: p.EtcdPeer.KeyPEM, Secret: true, Reloadable: true},
		),
		Ports: map[string]int{
			"client":  cfg.Ports[etcdPort(i, "client")],
			"peer":    cfg.Ports[etcdPort(i, "peer")],
			"metrics": cfg.Ports[etcdPort(i, "metrics")],
		},
		Readiness: runtime.Probe{Scheme: "http", Port: cfg.Ports[etcdPort(i, "metrics")], Path: "/health"},
		// GOGC=50: ~6 MiB less heap when idle; one thread (hostedEnv).
		Env:      cfg.hostedEnv(goGC),
		Requests: runtime.Resources{MilliCPU: 50, MemoryBytes: 128 << 20},
	}
	if cfg.pods() {
		// A peer's client certificate is checked against its address by
		// reverse DNS, which names a pod by the management cluster's own
		// domain; the peer CA is this control plane's alone, so the CA
		// check is what admits a peer.
		spec.Args = append(spec.Args, "--peer-skip-client-san-verification=true")
		spec.DataVolume = runtime.Volume{StorageClassName: cfg.EtcdStorageClass, Size: cfg.EtcdStorageSize}
	}
	return spec
}

// readOnceTrust is a CA bundle a component reads only at start (etcd's
// trusted CA, the API server's --etcd-cafile). Its content is left out of
// the hash, so a rotation adding or promoting a CA restarts nothing: until
// the old CA is dropped, every leaf of the new one verifies against the old
// CA alone through its cross-signed chain (pki.ReadOnceCANames). The
// oldest CA trusted is hashed instead (path + ".oldest", read by nobody):
// it changes when a rotation drops the old CA, and the component restarts
// with the new bundle alone (docs/security.md, "CA rotation"). A held
// instance (cfg.HeldTrust) keeps the dropped CA there, so it is not
// restarted yet.
func (cfg Config) readOnceTrust(path, instance, ca string) []runtime.File {
	p := cfg.PKI
	oldest := p.OldestTrusted(ca)
	if dropped, ok := p.Dropped[ca]; ok && cfg.HeldTrust[instance] {
		oldest = dropped.CertPEM
	}
	return []runtime.File{
		{Path: path, Content: p.Bundle(ca), Reloadable: true},
		{Path: path + ".oldest", Content: oldest},
	}
}

// etcdServers lists every member's client URL; in pods, the etcd Service.
func etcdServers(cfg Config) string {
	if cfg.pods() {
		return "https://" + net.JoinHostPort(cfg.Layout.Host(Etcd, ""), strconv.Itoa(cfg.Ports[etcdPort(0, "client")]))
	}
	urls := make([]string, cfg.replicas().Etcd)
	for m := range urls {
		urls[m] = fmt.Sprintf("https://127.0.0.1:%d", cfg.Ports[etcdPort(m, "client")])
	}
	return strings.Join(urls, ",")
}
