package clusterapi

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

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
