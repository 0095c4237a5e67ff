// Package pkitest gives tests a control plane's PKI whose every certificate
// and key is its own name ("etcd-ca.crt", "etcd-ca.key"): renderers can be
// checked for which file carries which, without real key material.
package pkitest

import "hypershift.dev/internal/pki"

// Named returns a control plane's PKI with each pair named after its role.
func Named() *pki.ControlPlane {
	kp := func(name string) pki.KeyPair {
		return pki.KeyPair{CertPEM: []byte(name + ".crt"), KeyPEM: []byte(name + ".key")}
	}
	return &pki.ControlPlane{
		EtcdCA: kp("etcd-ca"), RootCA: kp("root-ca"), ClientCA: kp("client-ca"), KubeletCA: kp("kubelet-ca"),
		FrontProxyCA: kp("front-proxy-ca"), EtcdServer: kp("etcd-server"), EtcdPeer: kp("etcd-peer"),
		EtcdClient: kp("etcd-client"), KubeAPIServer: kp("apiserver"), KubeAPIServerKubeletClient: kp("apiserver-kubelet"),
		FrontProxyClient: kp("front-proxy-client"), Admin: kp("admin"), KubeControllerManager: kp("kcm"),
		KubeScheduler: kp("scheduler"), ServiceAccountKey: kp("sa"),
		KonnectivityCA: kp("konnectivity-ca"), KonnectivityServer: kp("konnectivity-server"), KonnectivityAgent: kp("konnectivity-agent"),
		KonnectivityServerClient: kp("konnectivity-server-client"), WorkloadIdentityWebhook: kp("workload-identity-webhook-client"),
	}
}
