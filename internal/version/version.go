// Package version tells which hypershift this is and which Kubernetes it
// hosts. Both are stamped at build time by the Makefile.
package version

// Set with -ldflags "-X hypershift.dev/internal/version.Version=…".
var (
	// Version is hypershift's own version.
	Version = "v0.1.0-dev"
	// KubernetesVersion is the version of the compiled-in Kubernetes
	// components; it must match go.mod's k8s.io/kubernetes.
	KubernetesVersion = "v1.37.1"
)
