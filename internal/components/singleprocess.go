package components

import (
	"path/filepath"
	"strings"

	"hypershift.dev/internal/runtime"
)

// KubeControlPlane is the instance (and compiled-in component) that runs
// kube-apiserver, kube-controller-manager and kube-scheduler in one process
// when a single-replica control plane asks for it
// (docs/hosted-clusters.md, "Single-process control planes").
const KubeControlPlane = "kube-control-plane"

// singleProcess folds the API server, controller manager and scheduler of a
// single-replica control plane into one instance: each keeps its own flags
// and files, moved into a subdirectory of the shared instance directory.
// The instance is ready when the API server is; it starts after etcd.
func singleProcess(cfg Config, specs []runtime.Spec) []runtime.Spec {
	folded := map[string]bool{KubeAPIServer: true, KubeControllerManager: true, KubeScheduler: true}
	combined := runtime.Spec{
		Name:      KubeControlPlane,
		Component: KubeControlPlane,
		Ports:     map[string]int{},
	}
	var out []runtime.Spec
	for _, s := range specs {
		if !folded[s.Name] {
			out = append(out, s)
			continue
		}
		from := filepath.Join(cfg.Layout.Dir, s.Name) + string(filepath.Separator)
		to := filepath.Join(cfg.Layout.Dir, KubeControlPlane, s.Name) + string(filepath.Separator)
		if len(combined.Args) > 0 {
			combined.Args = append(combined.Args, "--")
		}
		combined.Args = append(combined.Args, s.Component)
		for _, a := range s.Args {
			combined.Args = append(combined.Args, strings.ReplaceAll(a, from, to))
		}
		for _, f := range s.Files {
			f.Path = filepath.Join(s.Name, f.Path)
			combined.Files = append(combined.Files, f)
		}
		for name, port := range s.Ports {
			combined.Ports[s.Name+"-"+name] = port // each folded component has an "https"
		}
		for _, p := range s.Publish {
			p.Port = s.Name + "-" + p.Port
			combined.Publish = append(combined.Publish, p)
		}
		combined.Requests.MilliCPU += s.Requests.MilliCPU
		combined.Requests.MemoryBytes += s.Requests.MemoryBytes
		if s.Name == KubeAPIServer {
			combined.Readiness = s.Readiness
			combined.After = s.After
			combined.Env = s.Env
		}
	}
	return append(out, combined)
}
