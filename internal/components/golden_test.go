package components

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"sigs.k8s.io/yaml"

	"hypershift.dev/internal/pki"
	"hypershift.dev/internal/runtime"
	"hypershift.dev/internal/workloadidentity"
)

// goldenSpec is a runtime.Spec as its golden file shows it: the same fields in the
// same order, plus what each file holds and the probe's CA, so that a
// change to an encryption config, audit policy or kubeconfig shows in
// review. Key material never appears: keys, certificates and other opaque
// files are shown by digest, and the key fields of structured secret files
// (encryption config, kubeconfigs) are replaced.
type goldenSpec struct {
	Name      string         `json:"name"`
	Component string         `json:"component"`
	Version   string         `json:"version,omitempty"`
	Command   string         `json:"command,omitempty"`
	Args      []string       `json:"args"`
	Files     []goldenFile   `json:"files"`
	Ports     map[string]int `json:"ports"`
	Readiness goldenProbe    `json:"readiness"`
	After     []string       `json:"after,omitempty"`
	Env       []string       `json:"env,omitempty"`
	// Placement (not part of the hash).
	StopLast   bool              `json:"stopLast,omitempty"`
	Data       string            `json:"data,omitempty"`
	DataVolume *runtime.Volume   `json:"dataVolume,omitempty"`
	Beside     string            `json:"beside,omitempty"`
	Requests   runtime.Resources `json:"requests"`
	Publish    []runtime.Publish `json:"publish,omitempty"`
	// OperatorPorts the operator connects to.
	OperatorPorts []string `json:"operatorPorts,omitempty"`
	// Restore's files (the archive's URL, key, credentials), by digest
	// where secret; the renderer leaves it to the controller.
	Restore []goldenFile `json:"restore,omitempty"`
}

type goldenFile struct {
	Path   string `json:"path"`
	Secret bool   `json:"secret,omitempty"`
	// Reloadable files are replaced in place, not by a restart.
	Reloadable bool `json:"reloadable,omitempty"`
	// Content is a text file's lines, key material replaced.
	Content []string `json:"content,omitempty"`
	// SHA256 identifies a file shown by digest only.
	SHA256 string `json:"sha256,omitempty"`
}

type goldenProbe struct {
	Scheme   string `json:"scheme"`
	Host     string `json:"host,omitempty"`
	Port     int    `json:"port"`
	Path     string `json:"path"`
	CASHA256 string `json:"caSHA256,omitempty"`
}

// redactedValue replaces secret values in structured files.
const redactedValue = "REDACTED"

// secretFields are the keys whose values structured files keep secret:
// encryption keys, client keys, tokens.
var secretFields = map[string]bool{"secret": true, "client-key-data": true, "token": true, "password": true}

// digestFields hold certificates: shown by digest, so a changed CA shows.
var digestFields = map[string]bool{"certificate-authority-data": true, "client-certificate-data": true}

func digest(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])[:16]
}

// goldenView converts specs for their golden file.
func goldenView(t *testing.T, specs []runtime.Spec) []goldenSpec {
	t.Helper()
	out := make([]goldenSpec, 0, len(specs))
	for _, s := range specs {
		g := goldenSpec{
			Name: s.Name, Component: s.Component, Version: s.Version, Command: s.Command, Args: s.Args,
			Files: []goldenFile{}, Ports: s.Ports, After: s.After, Env: s.Env,
			StopLast: s.StopLast, Data: s.Data, Beside: s.Beside, Requests: s.Requests, Publish: s.Publish, OperatorPorts: s.OperatorPorts,
			Readiness: goldenProbe{
				Scheme: s.Readiness.Scheme, Host: s.Readiness.Host, Port: s.Readiness.Port,
				Path: s.Readiness.Path, CASHA256: digest(s.Readiness.CAPEM),
			},
		}
		if s.Files == nil {
			g.Files = nil
		}
		if s.DataVolume != (runtime.Volume{}) {
			g.DataVolume = &s.DataVolume
		}
		for _, f := range s.Files {
			g.Files = append(g.Files, goldenContent(t, f))
		}
		if s.Restore != nil {
			for _, f := range s.Restore.Files {
				g.Restore = append(g.Restore, goldenContent(t, f))
			}
		}
		out = append(out, g)
	}
	return out
}

// goldenContent shows a file: text as lines, structured secret files with
// their key fields replaced, everything else (keys, certificates) by digest.
func goldenContent(t *testing.T, f runtime.File) goldenFile {
	t.Helper()
	g := goldenFile{Path: f.Path, Secret: f.Secret, Reloadable: f.Reloadable}
	base := filepath.Base(f.Path)
	structured := strings.HasSuffix(base, ".yaml") || base == "kubeconfig"
	switch {
	case f.Secret && structured:
		var doc any
		if err := yaml.Unmarshal(f.Content, &doc); err != nil {
			t.Fatalf("%s: a secret file the golden shows must be YAML: %v", f.Path, err)
		}
		redacted, err := yaml.Marshal(redact(doc))
		if err != nil {
			t.Fatal(err)
		}
		g.Content = lines(redacted)
	case f.Secret, bytes.Contains(f.Content, []byte("-----BEGIN")), !utf8.Valid(f.Content),
		strings.HasSuffix(base, ".crt"), strings.HasSuffix(base, ".pub"), strings.HasSuffix(base, ".key"):
		g.SHA256 = digest(f.Content)
	default:
		g.Content = lines(f.Content)
	}
	return g
}

func redact(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, val := range v {
			switch {
			case secretFields[k]:
				v[k] = redactedValue
			case digestFields[k]:
				s, _ := val.(string)
				raw, err := base64.StdEncoding.DecodeString(s)
				if err != nil {
					raw = []byte(s)
				}
				v[k] = digest(raw)
			default:
				v[k] = redact(val)
			}
		}
	case []any:
		for i := range v {
			v[i] = redact(v[i])
		}
	}
	return v
}

func lines(b []byte) []string {
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// TestGoldenViewHasEverySpecField: a field added to runtime.Spec (or Probe) must be
// added to the golden view too, or golden files would stop showing it; the
// placement fields too, though the hash leaves them out.
func TestGoldenViewHasEverySpecField(t *testing.T) {
	for _, pair := range [][2]reflect.Type{
		{reflect.TypeFor[runtime.Spec](), reflect.TypeFor[goldenSpec]()},
		{reflect.TypeFor[runtime.Probe](), reflect.TypeFor[goldenProbe]()},
		{reflect.TypeFor[runtime.File](), reflect.TypeFor[goldenFile]()},
	} {
		for i := range pair[0].NumField() {
			f := pair[0].Field(i)
			if _, ok := pair[1].FieldByName(f.Name); !ok && (f.Tag.Get("json") != "-" || pair[0] == reflect.TypeFor[runtime.Spec]()) {
				t.Errorf("%s.%s is not shown in golden files: add it to %s", pair[0].Name(), f.Name, pair[1].Name())
			}
		}
	}
}

// goldenScenarios are the configurations the golden files pin.
func goldenScenarios() []struct {
	name string
	cfg  Config
} {
	management := testConfig()
	management.Name, management.Layout.Dir, management.Management = "management", "/var/lib/hypershift/management", true
	ha := testConfig()
	ha.Replicas, ha.Ports = HighlyAvailable, testPorts(HighlyAvailable)
	single := testConfig()
	single.SingleProcess = true
	haSingle := ha
	haSingle.SingleProcess = true // ignored: replicas need their own processes
	// Another release: its components are separate processes, even when
	// a single process was asked for (that is a command of hypershift).
	release := testConfig()
	release.SingleProcess, release.KubernetesVersion = true, "v1.36.3"
	// Platform None: joined nodes fetch their kubelet from the release
	// server, published at the endpoint host.
	none := routable(testConfig())
	none.ReleaseServer, none.ReleasesDir = true, "/opt/hypershift/releases"
	none.Ports[ReleaseServerPort] = 31090
	// An issuer of its own and the workload-identity webhook beside the
	// API server.
	identity := testConfig()
	identity.ServiceAccountIssuer = "https://oidc.example.com/clusters/c"
	identity.WorkloadIdentityWebhook = &workloadidentity.Config{Azure: workloadidentity.AzureConfig{TenantID: "tenant"}, AWS: workloadidentity.AWSConfig{Region: "eu-west-1"}}
	identity.Ports[WorkloadIdentityWebhookPort] = 31095
	return []struct {
		name string
		cfg  Config
	}{
		{"hosted", testConfig()},
		{"hosted-endpoint-host", routable(testConfig())},
		{"highly-available", ha},
		{"highly-available-endpoint-host", routable(ha)},
		{"management", management},
		{"single-process", single},
		{"highly-available", haSingle},
		{"pods", inPods(testConfig(), SingleReplica)},
		{"hosted-v1.36", release},
		{"hosted-none", none},
		{"pods-highly-available", inPods(testConfig(), HighlyAvailable)},
		{"hosted-workload-identity", identity},
	}
}

// secretValues are what must never appear in a golden file of cfg: every
// private key (as PEM and as a kubeconfig carries it, base64) and the
// encryption key (raw and base64).
func secretValues(cfg Config) []string {
	p := cfg.PKI
	values := []string{string(cfg.EncryptionKey), base64.StdEncoding.EncodeToString(cfg.EncryptionKey)}
	for _, kp := range []pki.KeyPair{
		p.EtcdCA, p.RootCA, p.ClientCA, p.KubeletCA, p.FrontProxyCA, p.EtcdServer, p.EtcdPeer, p.EtcdClient,
		p.KubeAPIServer, p.KubeAPIServerKubeletClient, p.FrontProxyClient, p.Admin, p.KubeControllerManager,
		p.KubeScheduler, p.ServiceAccountKey, p.KonnectivityServer, p.KonnectivityAgent, p.KonnectivityServerClient,
		p.WorkloadIdentityWebhook,
	} {
		values = append(values, string(kp.KeyPEM), base64.StdEncoding.EncodeToString(kp.KeyPEM))
	}
	return values
}

// TestGoldenFilesHoldNoSecrets scans every golden file for private keys and
// the test key values, and renders every scenario with a real PKI and a
// real encryption key to check that the golden view shows none of them.
func TestGoldenFilesHoldNoSecrets(t *testing.T) {
	goldens, err := filepath.Glob(filepath.Join("testdata", "*.golden.json"))
	if err != nil || len(goldens) == 0 {
		t.Fatalf("no golden files (%v)", err)
	}
	for _, golden := range goldens {
		data, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(data, []byte("PRIVATE KEY")) {
			t.Errorf("%s holds a private key", golden)
		}
		for _, secret := range secretValues(testConfig())[:2] { // the encryption key
			if bytes.Contains(data, []byte(secret)) {
				t.Errorf("%s holds the encryption key %q", golden, secret)
			}
		}
		var specs []goldenSpec
		if err := json.Unmarshal(data, &specs); err != nil {
			t.Fatalf("%s: %v", golden, err)
		}
		// The fake keys ("client-ca.key") are also file names, which args
		// name; they must not be any file's content.
		for _, s := range specs {
			for _, f := range s.Files {
				content := strings.Join(f.Content, "\n")
				for _, secret := range secretValues(testConfig()) {
					if strings.Contains(content, secret) {
						t.Errorf("%s: %s/%s shows secret %q", golden, s.Name, f.Path, secret)
					}
				}
			}
		}
	}

	store := pki.FileStore{Dir: t.TempDir()}
	realPKI, err := pki.EnsureControlPlane(store, pki.ControlPlaneOptions{})
	if err != nil {
		t.Fatal(err)
	}
	key, err := pki.NewEncryptionKey()
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range goldenScenarios() {
		cfg := sc.cfg
		cfg.PKI, cfg.EncryptionKey = realPKI, key
		specs, err := Render(cfg)
		if err != nil {
			t.Fatal(err)
		}
		view, err := json.MarshalIndent(goldenView(t, specs), "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(view, []byte("PRIVATE KEY")) {
			t.Errorf("%s: the golden view of a real PKI shows a private key", sc.name)
		}
		for _, secret := range secretValues(cfg) {
			if bytes.Contains(view, []byte(secret)) {
				t.Errorf("%s: the golden view shows secret material %.40q", sc.name, secret)
			}
		}
	}
}

// inPods renders cfg for a runtime that runs each instance in a pod of its
// own, named like the kube runtime names them.
func inPods(cfg Config, r Replicas) Config {
	cfg.Replicas = r
	cfg.Ports = map[string]int{}
	for _, name := range PortNames(r) {
		cfg.Ports[name] = WellKnownPort(name)
	}
	ns := cfg.Name
	cfg.Layout = runtime.Layout{
		Dir: "/var/lib/hypershift", Pods: true, Self: "$(POD_NAME)", SelfIP: "$(POD_IP)",
		Host: func(component, instance string) string {
			if instance == "" {
				return component + "." + ns + ".svc"
			}
			return instance + "." + component + "-discovery." + ns + ".svc"
		},
	}
	cfg.APIServer = runtime.Publish{Type: runtime.NodePort, Address: "192.0.2.10", NodePort: 30443}
	cfg.Konnectivity = runtime.Publish{Type: runtime.NodePort, Address: "192.0.2.10"}
	cfg.EtcdStorageClass, cfg.EtcdStorageSize = "fast", "4Gi"
	return cfg
}
