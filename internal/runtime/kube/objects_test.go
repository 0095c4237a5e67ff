package kube

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"hypershift.dev/internal/components"
	"hypershift.dev/internal/golden"
	"hypershift.dev/internal/runtime"
)

// renderYAML shows objects as they are applied, `---` separated.
func renderYAML(t *testing.T, objs []client.Object) []byte {
	t.Helper()
	var buf bytes.Buffer
	for i, obj := range objs {
		if secret, ok := obj.(*corev1.Secret); ok {
			// Files by digest: a changed file shows, its content (keys) not.
			secret = secret.DeepCopy()
			secret.StringData = map[string]string{}
			for k, v := range secret.Data {
				sum := sha256.Sum256(v)
				secret.StringData[k] = "sha256:" + hex.EncodeToString(sum[:])[:16]
			}
			secret.Data = nil
			obj = secret
		}
		u, err := toUnstructured(obj)
		if err != nil {
			t.Fatal(err)
		}
		data, err := yaml.Marshal(u.Object)
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			buf.WriteString("---\n")
		}
		buf.Write(data)
	}
	return buf.Bytes()
}

// TestObjectsGolden pins every object of a single-replica and a highly
// available control plane.
func TestObjectsGolden(t *testing.T) {
	for _, tt := range []struct {
		name    string
		r       components.Replicas
		version string
	}{
		{"single-replica", components.SingleReplica, ""},
		{"highly-available", components.HighlyAvailable, ""},
		// Another release: its components run the image's release binary.
		{"single-replica-v1.36", components.SingleReplica, "v1.36.3"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// What the renderer gives this runtime, as the controller
			// hands it over.
			objs, err := Objects(testRef, renderedSpecsOf(t, testRef, tt.r, 30443, tt.version), testOptions())
			if err != nil {
				t.Fatal(err)
			}
			got := renderYAML(t, objs)
			golden.Check(t, filepath.Join("testdata", tt.name+".yaml"), got)
		})
	}
}

// TestObjectsGroupsByComponent: replicas of one component are one workload
// of that many replicas, a Beside component a container of its pods.
func TestObjectsGroupsByComponent(t *testing.T) {
	objs, err := Objects(testRef, testSpecs(3, 2), testOptions())
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, obj := range objs {
		kinds = append(kinds, obj.GetObjectKind().GroupVersionKind().Kind+"/"+obj.GetName())
		if obj.GetLabels()[OwnerUIDLabel] != testRef.Owner || obj.GetLabels()[ControlPlaneLabel] != testRef.Name {
			t.Errorf("%s/%s lacks the control plane's labels: %v", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), obj.GetLabels())
		}
		switch w := obj.(type) {
		case *appsv1.StatefulSet:
			if w.Name != "etcd" || *w.Spec.Replicas != 3 {
				t.Errorf("StatefulSet %s with %d replicas, want etcd with 3", w.Name, *w.Spec.Replicas)
			}
		case *appsv1.Deployment:
			if *w.Spec.Replicas != 2 {
				t.Errorf("Deployment %s has %d replicas, want 2", w.Name, *w.Spec.Replicas)
			}
			if w.Name == "kube-apiserver" && len(w.Spec.Template.Spec.Containers) != 2 {
				t.Errorf("kube-apiserver pods have %d containers, want the API server and the Konnectivity server", len(w.Spec.Template.Spec.Containers))
			}
		}
	}
	for _, want := range []string{
		"StatefulSet/etcd", "Service/etcd-discovery", "Deployment/kube-apiserver", "Secret/kube-apiserver-files",
		"Service/kube-apiserver-https-published", "Service/konnectivity-server-agent-published",
		"PodDisruptionBudget/kube-scheduler", "NetworkPolicy/kube-controller-manager",
	} {
		if !strings.Contains(strings.Join(kinds, " "), want) {
			t.Errorf("no %s among %v", want, kinds)
		}
	}
	for _, unwanted := range []string{"Deployment/konnectivity-server", "Secret/konnectivity-server-files"} {
		if strings.Contains(strings.Join(kinds, " "), unwanted) {
			t.Errorf("%s rendered: a Beside component runs in its host's pods", unwanted)
		}
	}
}

// TestObjectsFilesRollPods: a changed file changes the pod template's hash
// annotation, so the pods are replaced and read it.
func TestObjectsFilesRollPods(t *testing.T) {
	hash := func(specs []runtime.Spec) string {
		objs, err := Objects(testRef, specs, testOptions())
		if err != nil {
			t.Fatal(err)
		}
		for _, obj := range objs {
			if d, ok := obj.(*appsv1.Deployment); ok && d.Name == "kube-scheduler" {
				return d.Spec.Template.Annotations[FilesHashAnnotation]
			}
		}
		t.Fatal("no kube-scheduler Deployment")
		return ""
	}
	specs := testSpecs(1, 1)
	before := hash(specs)
	for i := range specs {
		if specs[i].Component == "kube-scheduler" {
			specs[i].Files[0].Content = []byte("another kubeconfig")
		}
	}
	if after := hash(specs); after == before || after == "" {
		t.Errorf("files hash %q before and %q after a file changed", before, after)
	}
}

// TestObjectsDataVolume: the spec's own volume choice (the cluster's
// spec.etcd.managed.storage) wins over the runtime's defaults.
func TestObjectsDataVolume(t *testing.T) {
	claim := func(specs []runtime.Spec, opts Options) (string, string) {
		objs, err := Objects(testRef, specs, opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, obj := range objs {
			if s, ok := obj.(*appsv1.StatefulSet); ok {
				c := s.Spec.VolumeClaimTemplates[0].Spec
				class := ""
				if c.StorageClassName != nil {
					class = *c.StorageClassName
				}
				size := c.Resources.Requests[corev1.ResourceStorage]
				return class, size.String()
			}
		}
		t.Fatal("no StatefulSet")
		return "", ""
	}
	opts := testOptions()
	opts.StorageClassName = "standard"
	if class, size := claim(testSpecs(3, 1), opts); class != "standard" || size != "8Gi" {
		t.Errorf("defaults: class %q, size %s; want standard, 8Gi", class, size)
	}
	specs := testSpecs(3, 1)
	for i := range 3 {
		specs[i].DataVolume = runtime.Volume{StorageClassName: "fast", Size: "20Gi"}
	}
	if class, size := claim(specs, opts); class != "fast" || size != "20Gi" {
		t.Errorf("the spec's choice: class %q, size %s; want fast, 20Gi", class, size)
	}
}

func TestObjectsRefusesUnequalReplicas(t *testing.T) {
	specs := testSpecs(3, 1)
	specs[1].Args = append([]string{"--name=etcd-1"}, specs[1].Args[1:]...)
	objs, err := Objects(testRef, specs, testOptions())
	if err == nil || objs != nil {
		t.Fatalf("rendered %d objects, want an error", len(objs))
	}
	for _, want := range []string{"etcd-0", "etcd-1", "differ"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
}

// changeSpec is a change of a test case that changes the i-th spec only.
func changeSpec(i int, change func(*runtime.Spec)) func(*Options, []runtime.Spec) []runtime.Spec {
	return func(_ *Options, s []runtime.Spec) []runtime.Spec {
		change(&s[i])
		return s
	}
}

func TestObjectsRefusesBadInput(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Options, []runtime.Spec) []runtime.Spec
		want   string
	}{
		{"no image", func(o *Options, s []runtime.Spec) []runtime.Spec { o.Image = ""; return s }, "Options.Image"},
		{"host port", changeSpec(1, func(s *runtime.Spec) { s.Publish[0].Type = runtime.HostPort }), "use NodePort or LoadBalancer"},
		{"probe host", changeSpec(0, func(s *runtime.Spec) { s.Readiness.Host = "127.0.0.1" }), "Readiness.Host"},
		{"sidecar of nothing", changeSpec(2, func(s *runtime.Spec) { s.Beside = "kube-proxy" }), "spec.Beside"},
		{"more sidecars than pods", func(_ *Options, s []runtime.Spec) []runtime.Spec {
			extra := s[2]
			extra.Name = "konnectivity-server-1"
			return append(s, extra)
		}, "one per pod"},
		{"sidecar with data", changeSpec(2, func(s *runtime.Spec) { s.Data = "data" }), "spec.Data"},
		{"volume size", changeSpec(0, func(s *runtime.Spec) { s.DataVolume.Size = "lots" }), "spec.DataVolume.Size"},
		{"file outside its directory", changeSpec(0, func(s *runtime.Spec) { s.Files[0].Path = "../kube-apiserver/ca.crt" }), "file path"},
		{"files volume name too long", changeSpec(2, func(s *runtime.Spec) { s.Component = strings.Repeat("k", 60) }), "too long for the volume of its files"},
		{"env without value", changeSpec(0, func(s *runtime.Spec) { s.Env = []string{"GOGC"} }), "spec.Env"},
		{"unpublishable port", changeSpec(1, func(s *runtime.Spec) { s.Publish[0].Port = "nope" }), "spec.Publish"},
		{"host executable", changeSpec(0, func(s *runtime.Spec) { s.Command = "/usr/bin/containerd" }), "spec.Command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := testOptions()
			specs := tt.change(&opts, testSpecs(1, 1))
			objs, err := Objects(testRef, specs, opts)
			if err == nil || objs != nil {
				t.Fatalf("rendered %d objects, want an error", len(objs))
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not say %q", err, tt.want)
			}
		})
	}
}

// TestPortsAreTheUpstreamDefaults: pods have a network each, so every port
// is the upstream default the caller names (components.PortRequest), and a
// port without one is refused, named.
func TestPortsAreTheUpstreamDefaults(t *testing.T) {
	rt := New(nil, testOptions())
	want := map[string]int{"endpoint": 6443, "etcd-0-client": 2379, "kube-scheduler-1": 10259}
	ports, err := rt.Ports(t.Context(), testRef, want)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(ports, want) {
		t.Errorf("ports %v, want %v", ports, want)
	}
	if _, err := rt.Ports(t.Context(), testRef, runtime.Named("etcd-0-gossip")); err == nil || !strings.Contains(err.Error(), "etcd-0-gossip") {
		t.Errorf("a port without a default gave %v, want an error naming it", err)
	}
}

func TestLayoutAndDNSNames(t *testing.T) {
	l := New(nil, testOptions()).Layout(testRef)
	if !l.Pods || l.Dir != "/var/lib/hypershift" || l.Self != "$(POD_NAME)" || l.SelfIP != "$(POD_IP)" {
		t.Errorf("layout %+v", l)
	}
	if got := l.Host("kube-apiserver", ""); got != "kube-apiserver.clusters-demo.svc" {
		t.Errorf("Host(kube-apiserver) = %s", got)
	}
	if got := l.Host("etcd", "etcd-1"); got != "etcd-1.etcd-discovery.clusters-demo.svc" {
		t.Errorf("Host(etcd, etcd-1) = %s", got)
	}
	if got := MemberDNSName(testNamespace, "etcd"); got != "*.etcd-discovery.clusters-demo.svc" {
		t.Errorf("MemberDNSName = %s", got)
	}
	if got := strings.Join(ServiceDNSNames(testNamespace, "etcd"), " "); got != "etcd etcd.clusters-demo etcd.clusters-demo.svc" {
		t.Errorf("ServiceDNSNames = %s", got)
	}
}
