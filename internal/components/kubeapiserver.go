package components

import (
	"fmt"
)

func renderKubeAPIServer(cfg Config) Spec {
	const name = KubeAPIServer
	p := cfg.PKI
	dir := func(f string) string { return path(cfg.Dir, name, f) }
	args := []string{
		fmt.Sprintf("--etcd-servers=https://127.0.0.1:%d", cfg.Ports.EtcdClient),
		"--etcd-cafile=" + dir("etcd-ca.crt"),
		"--etcd-certfile=" + dir("etcd-client.crt"),
		"--etcd-keyfile=" + dir("etcd-client.key"),
		"--bind-address=0.0.0.0",
		fmt.Sprintf("--secure-port=%d", cfg.Ports.KubeAPIServer),
		"--cert-dir=" + dir("certs"),
		"--tls-cert-file=" + dir("server.crt"),
		"--tls-private-key-file=" + dir("server.key"),
		"--client-ca-file=" + dir("client-ca.crt"),
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + dir("service-account.pub"),
		"--service-account-signing-key-file=" + dir("service-account.key"),
		"--service-cluster-ip-range=" + cfg.ServiceCIDR,
		"--authorization-mode=Node,RBAC",
		"--enable-bootstrap-token-auth=true",
		"--enable-admission-plugins=NodeRestriction",
		"--kubelet-client-certificate=" + dir("kubelet-client.crt"),
		"--kubelet-client-key=" + dir("kubelet-client.key"),
		"--kubelet-certificate-authority=" + dir("kubelet-ca.crt"),
		"--kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname",
		"--requestheader-client-ca-file=" + dir("front-proxy-ca.crt"),
		"--requestheader-allowed-names=front-proxy-client",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-username-headers=X-Remote-User",
		"--proxy-client-cert-file=" + dir("front-proxy-client.crt"),
		"--proxy-client-key-file=" + dir("front-proxy-client.key"),
		"--allow-privileged=true",
		"--profiling=false",
	}
	if cfg.AdvertiseAddress != "" {
		args = append(args, "--advertise-address="+cfg.AdvertiseAddress)
	} else {
		// Without a routable host address the `kubernetes` Service cannot
		// point anywhere useful; the API server refuses a loopback one.
		args = append(args, "--endpoint-reconciler-type=none")
	}
	return Spec{
		Name:      name,
		Component: KubeAPIServer,
		Args:      args,
		Files: []File{
			{Path: "etcd-ca.crt", Content: p.EtcdCA.CertPEM},
			{Path: "etcd-client.crt", Content: p.EtcdClient.CertPEM},
			{Path: "etcd-client.key", Content: p.EtcdClient.KeyPEM, Secret: true},
			{Path: "server.crt", Content: p.KubeAPIServer.CertPEM},
			{Path: "server.key", Content: p.KubeAPIServer.KeyPEM, Secret: true},
			{Path: "client-ca.crt", Content: p.ClientCA.CertPEM},
			{Path: "service-account.pub", Content: p.ServiceAccountKey.CertPEM},
			{Path: "service-account.key", Content: p.ServiceAccountKey.KeyPEM, Secret: true},
			{Path: "kubelet-client.crt", Content: p.KubeAPIServerKubeletClient.CertPEM},
			{Path: "kubelet-client.key", Content: p.KubeAPIServerKubeletClient.KeyPEM, Secret: true},
			{Path: "kubelet-ca.crt", Content: p.KubeletCA.CertPEM},
			{Path: "front-proxy-ca.crt", Content: p.FrontProxyCA.CertPEM},
			{Path: "front-proxy-client.crt", Content: p.FrontProxyClient.CertPEM},
			{Path: "front-proxy-client.key", Content: p.FrontProxyClient.KeyPEM, Secret: true},
		},
		Ports:     map[string]int{"https": cfg.Ports.KubeAPIServer},
		Readiness: Probe{Scheme: "https", Port: cfg.Ports.KubeAPIServer, Path: "/readyz", CAPEM: p.RootCA.CertPEM},
	}
}
