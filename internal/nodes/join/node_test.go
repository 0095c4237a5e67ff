package join

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	kubeletconfig "k8s.io/kubernetes/pkg/kubelet/apis/config"
	kubeletscheme "k8s.io/kubernetes/pkg/kubelet/apis/config/scheme"
	kubeletvalidation "k8s.io/kubernetes/pkg/kubelet/apis/config/validation"

	"hypershift.dev/internal/golden"
	"hypershift.dev/internal/nodes/bootstrap"
	hsruntime "hypershift.dev/internal/runtime"
)

func testNode() *Node {
	return &Node{
		Cluster: "clusters/r", NodePool: "r", Name: "host-1", Server: "https://192.0.2.10:6443", NodeIP: "192.0.2.20",
		ContainerdPath: "/usr/bin/containerd", CNIBinDir: "/usr/lib/cni", CA: "CLUSTER-CA", ClientCA: "CLIENT-CA",
		Ports: map[string]int{portKubelet: 10250, portKubeletHealthz: 10248, portContainerdMetrics: 10260, portAPIServerProxy: 10270, portCSINode: 10280},
		Network: bootstrap.Network{
			ServiceCIDR: "172.31.0.0/16", ClusterCIDR: "10.132.0.0/14", ClusterDNS: "172.31.0.10", ClusterDomain: "cluster.local",
			APIServerAdvertiseAddress: "172.20.0.1", APIServerPort: 6443,
		},
		CgroupRoot: "/hypershift-node-0123456789ab",
		VolumesDir: "/var/lib/hypershift/hotplug",
		DataDir:    "/var/lib/hypershift-node",
	}
}

// A node runs the CSI plugin only when its machine has a volumes
// directory; join refuses one that is not an absolute directory.
func TestNodeCSIPlugin(t *testing.T) {
	n := testNode()
	last := n.Specs()[len(n.Specs())-1]
	if last.Name != "csi-node" || strings.Join(last.After, ",") != Kubelet ||
		!strings.Contains(strings.Join(last.Args, " "), "--attached-dir=/var/lib/hypershift/hotplug --kubelet-dir=/var/lib/hypershift-node/kubelet") {
		t.Errorf("last spec %s after %v with %v, want the CSI plugin after the kubelet on the volumes directory", last.Name, last.After, last.Args)
	}
	n.VolumesDir = ""
	for _, s := range n.Specs() {
		if s.Name == "csi-node" {
			t.Error("a node without a volumes directory runs the CSI plugin")
		}
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"relative/dir", file, filepath.Join(t.TempDir(), "missing")} {
		if err := checkVolumesDir(dir); err == nil || !strings.Contains(err.Error(), "--volumes-dir") {
			t.Errorf("checkVolumesDir(%s): %v, want an error naming --volumes-dir", dir, err)
		}
	}
	if err := checkVolumesDir(t.TempDir()); err != nil {
		t.Errorf("checkVolumesDir of a directory: %v", err)
	}
}

// A node's processes and their files are pinned by a golden file, as the
// control plane's are.
func TestNodeSpecsGolden(t *testing.T) {
	var got bytes.Buffer
	for _, s := range testNode().Specs() {
		spec, err := json.MarshalIndent(s, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		got.Write(spec)
		got.WriteByte('\n')
		for _, f := range s.Files {
			got.WriteString("--- " + s.Name + "/" + f.Path + "\n")
			got.Write(f.Content)
		}
	}
	golden.Check(t, filepath.Join("testdata", "node.golden"), got.Bytes())
}

// Rendering is deterministic: the node daemon and reset adopt the processes
// a join started only if their spec hashes match.
func TestNodeSpecsStable(t *testing.T) {
	a, b := testNode().Specs(), testNode().Specs()
	for i := range a {
		if a[i].Hash() != b[i].Hash() {
			t.Errorf("%s renders differently twice", a[i].Name)
		}
	}
}

func TestSaveLoad(t *testing.T) {
	n := testNode()
	n.DataDir = t.TempDir()
	if _, ok, err := Load(n.DataDir); ok || err != nil {
		t.Fatalf("Load of an empty dir = %v, %v; want not joined", ok, err)
	}
	if err := n.Save(); err != nil {
		t.Fatal(err)
	}
	got, ok, err := Load(n.DataDir)
	if err != nil || !ok {
		t.Fatalf("Load = %v, %v", ok, err)
	}
	for i, s := range got.Specs() {
		if want := n.Specs()[i]; s.Hash() != want.Hash() {
			t.Errorf("%s renders differently after Save/Load", s.Name)
		}
	}
	info, _ := os.Stat(statePath(n.DataDir))
	if info.Mode().Perm() != 0o600 {
		t.Errorf("node.json mode %v, want 0600", info.Mode().Perm())
	}
}

// The kubelet accepts its configuration as its own loader and validation
// read it, and the node keeps its images: no garbage collection by disk
// usage (the sandbox image cannot be pinned with containerd 1.6, and the
// node has no registry to pull it again), eviction at absolute free space.
func TestKubeletConfigAccepted(t *testing.T) {
	_, codecs, err := kubeletscheme.NewSchemeAndCodecs()
	if err != nil {
		t.Fatal(err)
	}
	n := testNode()
	n.ProviderID = "hypershift-host://m1"
	obj, err := runtimeDecode(codecs, []byte(n.kubeletConfig("/ca.crt")))
	if err != nil {
		t.Fatal(err)
	}
	kc, ok := obj.(*kubeletconfig.KubeletConfiguration)
	if !ok {
		t.Fatalf("decoded a %T", obj)
	}
	if err := kubeletvalidation.ValidateKubeletConfiguration(kc, utilfeature.DefaultFeatureGate); err != nil {
		t.Fatalf("the kubelet refuses its configuration: %v", err)
	}
	if kc.ProviderID != n.ProviderID {
		t.Errorf("providerID %q, want the machine's %q", kc.ProviderID, n.ProviderID)
	}
	if kc.ImageGCHighThresholdPercent != 100 {
		t.Errorf("imageGCHighThresholdPercent %d: the kubelet would remove the sandbox image under disk usage", kc.ImageGCHighThresholdPercent)
	}
	for _, signal := range []string{"nodefs.available", "imagefs.available"} {
		if v := kc.EvictionHard[signal]; v == "" || strings.HasSuffix(v, "%") {
			t.Errorf("evictionHard[%s] = %q, want an absolute quantity", signal, v)
		}
	}
}

func runtimeDecode(codecs *serializer.CodecFactory, data []byte) (runtime.Object, error) {
	obj, _, err := codecs.UniversalDecoder().Decode(data, nil, nil)
	return obj, err
}

// Every process that reads the kubelet's kubeconfig only at start is
// restarted by a CA rotation (its spec changes with the trust), and none
// that does not: containerd and the API server proxy keep running.
func TestTrustChangeRestartsKubeconfigReaders(t *testing.T) {
	before := testNode()
	after := testNode()
	after.Trust = "0123456789abcdef"
	hashes := map[string]string{}
	for _, s := range before.Specs() {
		hashes[s.Name] = s.Hash()
	}
	for _, s := range after.Specs() {
		readsKubeconfig := strings.Contains(strings.Join(s.Args, " ")+string(fileContents(s)), after.KubeletKubeconfig())
		if changed := hashes[s.Name] != s.Hash(); changed != readsKubeconfig {
			t.Errorf("%s: restarted by a trust change %v, reads the kubelet's kubeconfig %v", s.Name, changed, readsKubeconfig)
		}
	}
}

func fileContents(s hsruntime.Spec) []byte {
	var out []byte
	for _, f := range s.Files {
		out = append(out, f.Content...)
	}
	return out
}

func TestCheckProviderID(t *testing.T) {
	for id, ok := range map[string]bool{
		"":                                true,
		"hypershift-host://m1":            true,
		"aws:///us-east-1a/i-01":          true,
		"m1":                              false,
		"://m1":                           false,
		"kubevirt://":                     false,
		"a://b c":                         false,
		`a://b"`:                          false,
		"a://" + strings.Repeat("x", 300): false,
	} {
		if err := CheckProviderID(id); (err == nil) != ok {
			t.Errorf("CheckProviderID(%q) = %v, want ok %v", id, err, ok)
		}
	}
}
