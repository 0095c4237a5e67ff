package runtime

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
)

// File is a file a component reads, relative to its directory.
type File struct {
	Path    string `json:"path"`
	Content []byte `json:"-"`
	// Secret files are written 0600, others 0644.
	Secret bool `json:"secret,omitempty"`
	// Reloadable files are re-read by the running component (a serving
	// certificate the API server watches, a certificate etcd reads per
	// handshake): their content is not part of the hash, and a runtime
	// that can replaces them in place while the instance runs instead of
	// restarting it. A runtime that cannot (files in a pod's Secret)
	// rolls the instance.
	Reloadable bool `json:"-"`
}

// Probe is an HTTP(S) health check.
type Probe struct {
	Scheme string `json:"scheme"`
	// Host is the address probed; empty means 127.0.0.1.
	Host string `json:"host,omitempty"`
	Port int    `json:"port"`
	Path string `json:"path"`
	// CAPEM verifies the server; empty means the server's certificate is
	// self-signed and only the answer matters.
	CAPEM []byte `json:"-"`
}

// Spec is one component instance, ready for a runtime.
type Spec struct {
	// Name of the instance, unique within a control plane (etcd-0,
	// kube-apiserver, …). Its directory is Dir/Name.
	Name string `json:"name"`
	// Component is the compiled-in component run by
	// `hypershift component <Component>`.
	Component string `json:"component"`
	// Version is the Kubernetes release the instance runs
	// (internal/release); empty: the one compiled into hypershift, so the
	// hashes of specs that never chose one stay as they were.
	Version string `json:"version,omitempty"`
	// Command, when set, is an executable of the host run instead of a
	// compiled-in component (a node's containerd).
	Command string `json:"command,omitempty"`
	// Args are the component's upstream flags.
	Args []string `json:"args"`
	// Files are written into the instance directory before it starts.
	Files []File `json:"files"`
	// Ports the instance listens on, by name.
	Ports map[string]int `json:"ports"`
	// Readiness says when the instance serves.
	Readiness Probe `json:"readiness"`
	// After names instances that must be ready before this one starts
	// (a controller started before its API server only crash-loops).
	After []string `json:"after,omitempty"`
	// Env adds environment variables.
	Env []string `json:"env,omitempty"`
	// StopLast instances are stopped after every other instance of their
	// control plane (the datastore: an API server whose etcd is gone
	// cannot finish its graceful shutdown). It says how to stop, not what
	// runs, so it is not part of the hash.
	StopLast bool `json:"-"`

	// The fields below say how to place the instance; they change nothing
	// in what a process runs, so they are not part of the hash either.

	// Data is a directory under the instance's own (Args name it) whose
	// content must outlive the instance: etcd's data. The process runtime
	// keeps it on the host's disk; the kube runtime on a
	// PersistentVolumeClaim per instance.
	Data string `json:"-"`
	// DataVolume is the instance's own choice of volume for Data; empty
	// fields are the runtime's defaults.
	DataVolume Volume `json:"-"`
	// Beside names a component whose instances this one runs next to,
	// sharing their network and directory tree (the Konnectivity server
	// beside each API server, over a unix socket). Empty: on its own. On
	// one host every instance shares both; the kube runtime makes it a
	// container of that component's pods.
	Beside string `json:"-"`
	// Requests is what the kube runtime asks the scheduler for: above the
	// instance's use at rest, with room for its start and for load
	// (docs/kube-runtime.md gives both).
	Requests Resources `json:"-"`
	// Publish lists the ports clients outside the control plane reach, and
	// how (Runtime.Published says where).
	Publish []Publish `json:"-"`
	// OperatorPorts names the ports (of Ports) the operator itself
	// connects to: the API server's, etcd's client port for backups. A
	// runtime that fences instances' networks lets the operator in there.
	OperatorPorts []string `json:"-"`
	// Restore fills Data from a backup archive before the instance first
	// starts: the runtime runs the restore step (package restore) with
	// Restore's files before it starts the instance on empty data — the
	// kube runtime in an init container of the instance's pods, the
	// process runtime in a child process. The operator never writes an
	// instance's data itself.
	Restore *Restore `json:"-"`
}

// Restore is how an instance's Data is filled from a backup archive.
type Restore struct {
	// Files are what the restore reads: the archive's URL, its key and the
	// bucket's credentials (RestoreURLFile and the keys of a backup
	// request's Secret). They are put where only the restore sees them.
	// Empty once the restore is done: the step then leaves Data alone,
	// and the instance's workload stays as it was.
	Files []File
}

// Validate refuses files a runtime cannot put where the restore reads
// them: each is a plain file name, as a Secret key is (1 to 253 of
// letters, digits, '-', '_' and '.'; not "." or "..").
func (r *Restore) Validate() error {
	if r == nil {
		return nil
	}
	for _, f := range r.Files {
		if !secretKey(f.Path) {
			return fmt.Errorf("restore file %q must be a plain file name (a Secret key)", f.Path)
		}
	}
	return nil
}

func secretKey(name string) bool {
	if name == "" || len(name) > 253 || name == "." || name == ".." {
		return false
	}
	for _, c := range name {
		if (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') && c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return true
}

// Files of Restore.Files with a meaning of their own; the others are the
// keys of the request's Secret.
const (
	// RestoreURLFile holds the archive's URL.
	RestoreURLFile = "url"
	// RestoreFileRootFile holds the directory a file:// archive must be
	// in, on a runtime whose instances share the operator's files; without
	// it the restore refuses file:// URLs.
	RestoreFileRootFile = "file-root"
)

// Volume is a kind and size of volume.
type Volume struct {
	// StorageClassName of the claim; empty: the runtime's default.
	StorageClassName string
	// Size is a quantity ("8Gi"); empty: the runtime's default.
	Size string
}

// Resources is an amount of CPU and memory.
type Resources struct {
	MilliCPU    int64
	MemoryBytes int64
}

// PublishType is how a port is published.
type PublishType string

// Publish types, HyperShift's service publishing strategies.
const (
	// HostPort: on the management host, at Address (the process runtime).
	HostPort PublishType = "HostPort"
	// NodePort: on every node of the management cluster; clients use
	// Address, an address of those nodes.
	NodePort PublishType = "NodePort"
	// LoadBalancer: through a load balancer the management cluster
	// provides; clients use Address, the load balancer's DNS name.
	LoadBalancer PublishType = "LoadBalancer"
)

// Publish is one published port.
type Publish struct {
	// Name is what Runtime.Published is asked for: unique within a control
	// plane (the endpoint, the Konnectivity server's agent port).
	Name string
	// Port names the port in Spec.Ports.
	Port string
	Type PublishType
	// Address is the host clients use; it is in the serving certificate.
	Address string
	// NodePort fixes the node port of a NodePort; 0 lets the management
	// cluster choose.
	NodePort int
}

// Hash identifies the spec's content: a runtime restarts an instance whose
// hash changed.
func (s Spec) Hash() string {
	h := sha256.New()
	enc := json.NewEncoder(h)
	_ = enc.Encode(s)
	files := append([]File(nil), s.Files...)
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	for _, f := range files {
		h.Write([]byte(f.Path))
		if f.Reloadable {
			// The path is what the process was started with; the content
			// it re-reads.
			h.Write([]byte{0})
			continue
		}
		h.Write(f.Content)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}
