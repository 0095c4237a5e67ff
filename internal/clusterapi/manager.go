package clusterapi

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"hypershift.dev/internal/release"
	"hypershift.dev/internal/runtime"
)

const (
	// DirName is the directory beside the hypershift binary that holds the
	// manager and its CRDs (bin/clusterapi).
	DirName = "clusterapi"
	// BinaryName is the manager's file in that directory.
	BinaryName = "cluster-api-manager"
	// CRDDirName is the directory of the Cluster API CRDs in it.
	CRDDirName = "crds"
)

// Manager is a built Cluster API manager: the binary and its CRDs in one
// directory, as `make build` lays them out.
type Manager struct {
	// Dir holds BinaryName and CRDDirName.
	Dir string
}

// DefaultDir is bin/clusterapi for bin/hypershift: DirName beside the
// running executable (symbolic links resolved), as the releases are found.
func DefaultDir() string { return release.BesideExecutable(DirName) }

// Path is the manager binary.
func (m Manager) Path() string { return filepath.Join(m.Dir, BinaryName) }

// CRDDir is the directory of the Cluster API CRDs the manager installs.
func (m Manager) CRDDir() string { return filepath.Join(m.Dir, CRDDirName) }

// Check returns an error naming what is missing — the binary, or the CRDs —
// and how to build them.
func (m Manager) Check() error {
	if _, err := os.Stat(m.Path()); err != nil {
		return fmt.Errorf("no Cluster API manager at %s: run `make build`", m.Path())
	}
	crds, err := filepath.Glob(filepath.Join(m.CRDDir(), "*.yaml"))
	if err != nil || len(crds) == 0 {
		return fmt.Errorf("no Cluster API CRDs in %s: run `make build`", m.CRDDir())
	}
	return nil
}

// CRDs reads the Cluster API CRDs of CRDDir, in the order of their files'
// names: the CRDs the manager applies with --crd-dir (`up`), for whoever
// installs them itself (`hypershift install`). No CRD there is an error
// naming the directory, as Check's.
func (m Manager) CRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	files, err := filepath.Glob(filepath.Join(m.CRDDir(), "*.yaml"))
	if err != nil {
		return nil, err
	}
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, f := range files {
		crds, err := readCRDs(f)
		if err != nil {
			return nil, err
		}
		out = append(out, crds...)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no Cluster API CRDs in %s: run `make build`", m.CRDDir())
	}
	return out, nil
}

// readCRDs decodes every YAML document of path, each a
// CustomResourceDefinition.
func readCRDs(path string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []*apiextensionsv1.CustomResourceDefinition
	docs := utilyaml.NewYAMLReader(bufio.NewReader(f))
	for {
		doc, err := docs.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(doc, crd); err != nil {
			return nil, fmt.Errorf("decode %s: %w", path, err)
		}
		if crd.Kind == "" && crd.Name == "" {
			continue // an empty document
		}
		if crd.Kind != "CustomResourceDefinition" {
			return nil, fmt.Errorf("%s: a %s, not a CustomResourceDefinition", path, crd.Kind)
		}
		out = append(out, crd)
	}
}

// Command is the manager run against the API server of kubeconfig,
// installing (server-side applying) the CRDs of crdDir first when crdDir is
// not empty; args are further flags (--namespace, --health-addr, …).
func (m Manager) Command(kubeconfig, crdDir string, args ...string) *exec.Cmd {
	all := []string{"--kubeconfig", kubeconfig}
	if crdDir != "" {
		all = append(all, "--crd-dir", crdDir)
	}
	return exec.Command(m.Path(), append(all, args...)...) //nolint:gosec // our own binary, built beside hypershift
}

// ProcessName is the manager's instance name in a process runtime.
const ProcessName = "cluster-api-manager"

// HealthPort names the port of the manager's /readyz in its Spec.
const HealthPort = "health"

// Spec runs the manager as a supervised process against the API server of
// kubeconfig (a file), installing its CRDs first; it is ready once its
// /readyz answers on 127.0.0.1:healthPort.
func (m Manager) Spec(kubeconfig string, healthPort int) runtime.Spec {
	return runtime.Spec{
		Name:      ProcessName,
		Component: ProcessName,
		Command:   m.Path(),
		Args: []string{
			"--kubeconfig=" + kubeconfig,
			"--crd-dir=" + m.CRDDir(),
			fmt.Sprintf("--health-addr=127.0.0.1:%d", healthPort),
			"--metrics-addr=0",
		},
		Ports:     map[string]int{HealthPort: healthPort},
		Readiness: runtime.Probe{Scheme: "http", Port: healthPort, Path: "/readyz"},
	}
}

// PodArgs are the manager's arguments in a pod of the management cluster
// (`hypershift install`), beside Spec's on the process runtime: the pod's
// service account instead of a kubeconfig, no --crd-dir (install applies
// the CRDs, so the manager needs no right to write them), /healthz and
// /readyz on healthPort of every address (the kubelet probes the pod's),
// no metrics, and a leader elected among the replicas with a Lease in
// leaseNamespace.
func PodArgs(leaseNamespace string, healthPort int) []string {
	return []string{
		fmt.Sprintf("--health-addr=:%d", healthPort),
		"--metrics-addr=0",
		"--leader-elect",
		"--leader-elect-namespace=" + leaseNamespace,
	}
}
