package kube

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"hypershift.dev/internal/components"
	"hypershift.dev/internal/pki/pkitest"
	"hypershift.dev/internal/runtime"
	"hypershift.dev/internal/testenv"
)

// renderedSpecs renders a control plane with the renderer itself, for this
// runtime's Layout and Ports: what the HostedControlPlane controller hands
// to Apply.
func renderedSpecs(t *testing.T, ref runtime.ControlPlaneRef, r components.Replicas, nodePort int) []runtime.Spec {
	t.Helper()
	return renderedSpecsOf(t, ref, r, nodePort, "")
}

// renderedSpecsOf renders a control plane of Kubernetes version (""
// the compiled-in one).
func renderedSpecsOf(t *testing.T, ref runtime.ControlPlaneRef, r components.Replicas, nodePort int, version string) []runtime.Spec {
	t.Helper()
	rt := New(nil, testOptions())
	ports, err := rt.Ports(t.Context(), ref, components.PortRequest(components.PortNames(r)))
	if err != nil {
		t.Fatal(err)
	}
	specs, err := components.Render(components.Config{
		Name:              ref.Namespace,
		Layout:            rt.Layout(ref),
		Replicas:          r,
		Ports:             ports,
		PKI:               pkitest.Named(),
		EncryptionKey:     []byte("0123456789abcdef0123456789abcdef"),
		ServiceCIDR:       "172.31.0.0/16",
		ClusterCIDR:       "10.132.0.0/14",
		NodeCIDRMaskSize:  23,
		APIServer:         runtime.Publish{Type: runtime.NodePort, Address: "192.0.2.10", NodePort: nodePort},
		Konnectivity:      runtime.Publish{Type: runtime.NodePort, Address: "192.0.2.10"},
		KubernetesVersion: version,
	})
	if err != nil {
		t.Fatal(err)
	}
	return specs
}

// TestObjectsOfTheRenderer: what the renderer renders for this Layout is
// accepted (replicas equal but for their name, sidecars one per pod) and
// becomes the workloads the contract names.
func TestObjectsOfTheRenderer(t *testing.T) {
	for _, tt := range []struct {
		name string
		r    components.Replicas
	}{
		{"single-replica", components.SingleReplica},
		{"highly-available", components.HighlyAvailable},
	} {
		t.Run(tt.name, func(t *testing.T) {
			specs := renderedSpecs(t, testRef, tt.r, 30443)
			objs, err := Objects(testRef, specs, testOptions())
			if err != nil {
				t.Fatal(err)
			}
			replicas := map[string]int32{}
			containers := map[string]int{}
			for _, obj := range objs {
				switch w := obj.(type) {
				case *appsv1.Deployment:
					replicas[w.Name], containers[w.Name] = *w.Spec.Replicas, len(w.Spec.Template.Spec.Containers)
				case *appsv1.StatefulSet:
					replicas[w.Name], containers[w.Name] = *w.Spec.Replicas, len(w.Spec.Template.Spec.Containers)
				case *corev1.Service:
					if w.Spec.Type == corev1.ServiceTypeNodePort {
						replicas[w.Name] = -1
					}
				}
			}
			want := map[string]int32{
				components.Etcd: int32(tt.r.Etcd), components.KubeAPIServer: int32(tt.r.KubeAPIServer),
				components.KubeControllerManager: int32(tt.r.Controllers), components.KubeScheduler: int32(tt.r.Controllers),
			}
			for name, n := range want {
				if replicas[name] != n {
					t.Errorf("%s has %d replicas, want %d (all workloads: %v)", name, replicas[name], n, replicas)
				}
			}
			if containers[components.KubeAPIServer] != 2 {
				t.Errorf("the API server's pods have %d containers, want it and the Konnectivity server", containers[components.KubeAPIServer])
			}
			if len(replicas) != len(want)+2 {
				t.Errorf("workloads and published Services %v, want the four workloads and two NodePort Services", replicas)
			}
			rt := New(nil, testOptions())
			rt.applied[testRef], _ = groupWorkloads(specs)
			for _, name := range []string{components.EndpointPort, components.KonnectivityPort} {
				if _, _, ok := rt.publishedSpec(testRef, name); !ok {
					t.Errorf("nothing publishes %q, which the controllers ask Published for", name)
				}
			}
		})
	}
}

// testRenderedApplies: the renderer's highly available control plane is
// accepted by a real API server, and its endpoint is published.
func testRenderedApplies(t *testing.T, env *testenv.Env, ref runtime.ControlPlaneRef) {
	rt := New(env.Client, testOptions())
	specs := renderedSpecs(t, ref, components.HighlyAvailable, nodePort(ref))
	if err := rt.Apply(t.Context(), ref, specs); err != nil {
		t.Fatal(err)
	}
	if n := len(resourceVersions(t, env.Client, ref, specs)); n < 20 {
		t.Errorf("only %d objects applied", n)
	}
	host, port, ok, err := rt.Published(t.Context(), ref, components.EndpointPort)
	if err != nil || !ok || host != "192.0.2.10" || port != nodePort(ref) {
		t.Errorf("Published(endpoint) = %s, %d, %v, %v; want 192.0.2.10:%d", host, port, ok, err, nodePort(ref))
	}
	if _, port, ok, err := rt.Published(t.Context(), ref, components.KonnectivityPort); err != nil || !ok || port == 0 {
		t.Errorf("Published(konnectivity) = %d, %v, %v; want an allocated node port", port, ok, err)
	}
}
