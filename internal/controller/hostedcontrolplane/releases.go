package hostedcontrolplane

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/components"
	"hypershift.dev/internal/dataplane"
	"hypershift.dev/internal/releaseserver"
	"hypershift.dev/internal/runtime"
)

// servesReleases: a control plane of real nodes (every platform but
// Simulated) runs the release server, from which its joined nodes fetch
// their kubelet, where
// the runtime's instances share this host's files (not in pods, see
// docs/real-nodes.md).
func servesReleases(hcp *hypershiftv1alpha1.HostedControlPlane, caps runtime.Capabilities) bool {
	t := hcp.Spec.Platform.Type
	return t != hypershiftv1alpha1.SimulatedPlatform && caps.HostFiles
}

// selfSHA256 is the hypershift binary's sha256: the compiled-in release
// the release server serves. Hashed once per operator process.
var selfSHA256 = sync.OnceValues(func() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	return releaseserver.FileSHA256(exe)
})

// releasesInput is what the data plane publishes of the release server:
// its published address and the sha256 of every release it serves; nil
// while its port is not published yet.
func (r *Reconciler) releasesInput(ctx context.Context, s *scope) (*dataplane.Releases, error) {
	host, port, ok, err := r.Runtime.Published(ctx, s.ref, components.ReleaseServerPort)
	if err != nil || !ok {
		return nil, err
	}
	sums := map[string]string{}
	for _, rel := range r.Releases.Releases() {
		if !rel.CompiledIn() {
			sums[rel.Version] = rel.SHA256
			continue
		}
		sum, err := selfSHA256()
		if err != nil {
			return nil, fmt.Errorf("sha256 of the hypershift binary: %w", err)
		}
		sums[rel.Version] = sum
	}
	return &dataplane.Releases{URL: "https://" + net.JoinHostPort(host, strconv.Itoa(port)), SHA256: sums}, nil
}
