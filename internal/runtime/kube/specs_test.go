package kube

import (
	"fmt"
	"strings"

	"hypershift.dev/internal/runtime"
)

// The specs below are written by hand the way the renderer renders for the
// kube runtime's Layout: paths under Dir/<Component>, $(POD_NAME) and
// $(POD_IP) for what differs between replicas, fixed upstream ports,
// listeners on 0.0.0.0, the Konnectivity server beside each API server and
// the API endpoint published as a NodePort.

const testNamespace = "clusters-demo"

var testRef = runtime.ControlPlaneRef{Namespace: testNamespace, Name: "demo", Owner: "5f7c6a4e-0000-4000-8000-000000000001"}

func testOptions() Options {
	return Options{Image: "hypershift.dev/hypershift:test", Namespace: "hypershift"}
}

const mib = 1 << 20

// testSpecs renders a control plane of n etcd members and m API servers,
// controller managers and schedulers.
func testSpecs(etcd, m int) []runtime.Spec {
	layout := (&Runtime{}).Layout(testRef)
	var specs []runtime.Spec
	members := make([]string, 0, etcd)
	for i := range etcd {
		name := fmt.Sprintf("etcd-%d", i)
		members = append(members, fmt.Sprintf("%s=https://%s:2380", name, layout.Host("etcd", name)))
	}
	peerURL := "https://" + layout.Host("etcd", layout.Self) + ":2380"
	for i := range etcd {
		specs = append(specs, runtime.Spec{
			Name:      fmt.Sprintf("etcd-%d", i),
			Component: "etcd",
			Args: []string{
				"--name=" + layout.Self,
				"--data-dir=/var/lib/hypershift/etcd/data",
				"--listen-client-urls=https://0.0.0.0:2379",
				"--advertise-client-urls=https://" + layout.Host("etcd", layout.Self) + ":2379",
				"--listen-peer-urls=https://0.0.0.0:2380",
				"--initial-advertise-peer-urls=" + peerURL,
				"--initial-cluster=" + strings.Join(members, ","),
				"--initial-cluster-state=new",
				"--listen-metrics-urls=http://0.0.0.0:2381",
				"--cert-file=/var/lib/hypershift/etcd/server.crt",
				"--key-file=/var/lib/hypershift/etcd/server.key",
				"--trusted-ca-file=/var/lib/hypershift/etcd/ca.crt",
				"--peer-cert-file=/var/lib/hypershift/etcd/peer.crt",
				"--peer-key-file=/var/lib/hypershift/etcd/peer.key",
			},
			Files: []runtime.File{
				{Path: "ca.crt", Content: []byte("etcd-ca.crt")},
				{Path: "server.crt", Content: []byte("etcd-server.crt")},
				{Path: "server.key", Content: []byte("etcd-server.key"), Secret: true},
				{Path: "peer.crt", Content: []byte("etcd-peer.crt")},
				{Path: "peer.key", Content: []byte("etcd-peer.key"), Secret: true},
			},
			Ports:     map[string]int{"client": 2379, "peer": 2380, "metrics": 2381},
			Readiness: runtime.Probe{Scheme: "http", Port: 2381, Path: "/health"},
			Env:       []string{"GOGC=50"},
			StopLast:  true,
			Data:      "data",
			Requests:  runtime.Resources{MilliCPU: 50, MemoryBytes: 128 * mib},
		})
	}
	instance := func(component string, i int) string {
		if m == 1 {
			return component
		}
		return fmt.Sprintf("%s-%d", component, i)
	}
	publish := func(name, port string, nodePort int) []runtime.Publish {
		return []runtime.Publish{{Name: name, Port: port, Type: runtime.NodePort, Address: "203.0.113.10", NodePort: nodePort}}
	}
	for i := range m {
		specs = append(specs, runtime.Spec{
			Name: instance("kube-apiserver", i), Component: "kube-apiserver",
			Args: []string{
				"--advertise-address=" + layout.SelfIP,
				"--bind-address=0.0.0.0",
				"--secure-port=6443",
				"--etcd-servers=https://" + layout.Host("etcd", "") + ":2379",
				"--tls-cert-file=/var/lib/hypershift/kube-apiserver/apiserver.crt",
				"--tls-private-key-file=/var/lib/hypershift/kube-apiserver/apiserver.key",
				"--encryption-provider-config=/var/lib/hypershift/kube-apiserver/encryption-config.yaml",
				"--egress-selector-config-file=/var/lib/hypershift/kube-apiserver/egress-selector.yaml",
			},
			Files: []runtime.File{
				{Path: "ca.crt", Content: []byte("root-ca.crt")},
				{Path: "apiserver.crt", Content: []byte("apiserver.crt")},
				{Path: "apiserver.key", Content: []byte("apiserver.key"), Secret: true},
				{Path: "encryption-config.yaml", Content: []byte("kind: EncryptionConfiguration\n"), Secret: true},
				{Path: "egress-selector.yaml", Content: []byte("kind: EgressSelectorConfiguration\n")},
			},
			Ports:     map[string]int{"https": 6443},
			Readiness: runtime.Probe{Scheme: "https", Port: 6443, Path: "/readyz"},
			Env:       []string{"GOGC=50"},
			Requests:  runtime.Resources{MilliCPU: 200, MemoryBytes: 384 * mib},
			Publish:   publish("endpoint", "https", 30443),
		})
	}
	for i := range m {
		specs = append(specs, runtime.Spec{
			Name: instance("konnectivity-server", i), Component: "konnectivity-server",
			Args: []string{
				fmt.Sprintf("--server-count=%d", m),
				"--uds-name=/var/lib/hypershift/konnectivity-server/konnectivity-server.socket",
				"--agent-port=8091", "--health-port=8092", "--admin-port=8093",
				"--cluster-cert=/var/lib/hypershift/konnectivity-server/cluster.crt",
				"--cluster-key=/var/lib/hypershift/konnectivity-server/cluster.key",
			},
			Files: []runtime.File{
				{Path: "cluster.crt", Content: []byte("konnectivity-server.crt")},
				{Path: "cluster.key", Content: []byte("konnectivity-server.key"), Secret: true},
			},
			Ports:     map[string]int{"agent": 8091, "health": 8092, "admin": 8093},
			Readiness: runtime.Probe{Scheme: "http", Port: 8092, Path: "/healthz"},
			Beside:    "kube-apiserver",
			Requests:  runtime.Resources{MilliCPU: 10, MemoryBytes: 32 * mib},
			Publish:   publish("konnectivity", "agent", 0),
		})
	}
	controller := func(component string, port int, cpu, mem int64) {
		for i := range m {
			specs = append(specs, runtime.Spec{
				Name: instance(component, i), Component: component,
				Args: []string{
					"--kubeconfig=/var/lib/hypershift/" + component + "/kubeconfig",
					"--bind-address=0.0.0.0",
					fmt.Sprintf("--secure-port=%d", port),
					fmt.Sprintf("--leader-elect=%t", m > 1),
				},
				Files:     []runtime.File{{Path: "kubeconfig", Content: []byte(component + " kubeconfig"), Secret: true}},
				Ports:     map[string]int{"https": port},
				Readiness: runtime.Probe{Scheme: "https", Port: port, Path: "/healthz"},
				Requests:  runtime.Resources{MilliCPU: cpu, MemoryBytes: mem},
			})
		}
	}
	controller("kube-controller-manager", 10257, 50, 128*mib)
	controller("kube-scheduler", 10259, 20, 64*mib)
	return specs
}
