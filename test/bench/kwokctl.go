package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"hypershift.dev/internal/components"
	"hypershift.dev/internal/version"
)

const kwokModule = "sigs.k8s.io/kwok"

// kwokctl drives sigs.k8s.io/kwok's kwokctl with its binary runtime pointed
// at hypershift's own components, so that nothing is downloaded.
type kwokctl struct {
	path    string
	workdir string // KWOK_WORKDIR: clusters live in workdir/clusters/NAME
	wrapper string // directory of the component wrapper scripts
	config  string
}

// ensureKwokctl returns bin/tools/kwokctl, installing the newest version on
// the Go module proxy when it is missing.
func ensureKwokctl(ctx context.Context, root string) (string, error) {
	tools := filepath.Join(root, "bin", "tools")
	path := filepath.Join(tools, "kwokctl")
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Minute)
	defer cancel()
	out, err := goCommand(ctx, nil, "list", "-m", "-json", kwokModule+"@latest")
	if err != nil {
		return "", fmt.Errorf("find the latest %s on the Go module proxy: %w: %s", kwokModule, err, lastLines(out, 3))
	}
	var mod struct{ Version string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Version == "" {
		return "", fmt.Errorf("read the latest %s version from %q", kwokModule, lastLines(out, 3))
	}
	fmt.Printf("   installing kwokctl %s into %s (a few minutes on a cold build cache)\n", mod.Version, tools)
	if out, err := goCommand(ctx, []string{"GOBIN=" + tools}, "install", kwokModule+"/cmd/kwokctl@"+mod.Version); err != nil {
		return "", fmt.Errorf("go install %s/cmd/kwokctl@%s: %w: %s", kwokModule, mod.Version, err, lastLines(out, 5))
	}
	return path, nil
}

func kwokctlVersion(ctx context.Context, path string) string {
	out, err := exec.CommandContext(ctx, path, "--version").Output()
	if err != nil {
		return "kwokctl (unknown version)"
	}
	return strings.TrimSpace(string(out))
}

// goCommand runs the go tool outside any module, so that the repository's
// go.mod is neither read nor changed.
func goCommand(ctx context.Context, env []string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = os.TempDir()
	cmd.Env = append(append(os.Environ(), "GO111MODULE=on"), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.Bytes(), err
}

// newKwokctl writes the wrapper scripts and the configuration under dir.
func newKwokctl(path, bin, dir string) (*kwokctl, error) {
	k := &kwokctl{path: path, workdir: filepath.Join(dir, "wd"), wrapper: filepath.Join(dir, "bin"), config: filepath.Join(dir, "kwok.yaml")}
	if err := os.MkdirAll(k.wrapper, 0o700); err != nil {
		return nil, fmt.Errorf("create %s: %w", k.wrapper, err)
	}
	for _, c := range []string{components.Etcd, components.KubeAPIServer, components.KubeControllerManager, components.KubeScheduler} {
		script := fmt.Sprintf("#!/bin/sh\nexec %q component %s \"$@\"\n", bin, c)
		if err := os.WriteFile(filepath.Join(k.wrapper, c), []byte(script), 0o700); err != nil {
			return nil, fmt.Errorf("write wrapper %s: %w", c, err)
		}
	}
	// Every component listens on loopback only (kwokctl's default is 0.0.0.0).
	config := "apiVersion: config.kwok.x-k8s.io/v1alpha1\nkind: KwokctlConfiguration\noptions:\n  bindAddress: 127.0.0.1\n"
	if err := os.WriteFile(k.config, []byte(config), 0o600); err != nil {
		return nil, fmt.Errorf("write %s: %w", k.config, err)
	}
	return k, nil
}

func (k *kwokctl) run(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, k.path, append([]string{"-c", k.config}, args...)...)
	cmd.Env = append(os.Environ(), "KWOK_WORKDIR="+k.workdir, "KWOK_KUBE_VERSION="+version.KubernetesVersion)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.Bytes(), err
}

// create starts a cluster without kwokctl's --wait, which shells out to a
// kubectl; the caller probes /readyz itself.
func (k *kwokctl) create(ctx context.Context, name string) error {
	w := k.wrapper
	out, err := k.run(ctx, "create", "cluster", "--name", name, "--runtime", "binary",
		"--etcd-binary", filepath.Join(w, components.Etcd),
		"--kube-apiserver-binary", filepath.Join(w, components.KubeAPIServer),
		"--kube-controller-manager-binary", filepath.Join(w, components.KubeControllerManager),
		"--kube-scheduler-binary", filepath.Join(w, components.KubeScheduler),
		"--disable", "kwok-controller")
	if err != nil {
		return fmt.Errorf("kwokctl create cluster %s: %w: %s", name, err, lastLines(out, 5))
	}
	return nil
}

func (k *kwokctl) delete(name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if out, err := k.run(ctx, "delete", "cluster", "--name", name); err != nil {
		return fmt.Errorf("kwokctl delete cluster %s: %w: %s", name, err, lastLines(out, 5))
	}
	return nil
}

func (k *kwokctl) clusterDir(name string) string {
	return filepath.Join(k.workdir, "clusters", name) + "/"
}

func (k *kwokctl) kubeconfig(name string) string {
	return filepath.Join(k.workdir, "clusters", name, "kubeconfig.yaml")
}

func lastLines(out []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
