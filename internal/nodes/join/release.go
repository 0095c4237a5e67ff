package join

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"hypershift.dev/internal/nodes/bootstrap"
	"hypershift.dev/internal/release"
	"hypershift.dev/internal/releaseserver"
)

// ReleaseBinary is where a node keeps the release of version.
func (n *Node) ReleaseBinary(version string) string {
	return n.path("releases", version, release.BinaryName)
}

// FetchRelease makes sure dest holds the release binary of version whose
// sha256 the cluster published in info: a cached file that matches is kept;
// otherwise it is downloaded from info's release server with client (which
// carries the node's credentials) into a temporary file beside dest, and
// renamed to dest (0755) only if its sha256 is the published one. The
// server's own sha256 header is not trusted: the published digest, read
// over the pinned API connection, is.
func FetchRelease(ctx context.Context, client *http.Client, info bootstrap.ReleasesInfo, version, dest string) error {
	want, ok := info.SHA256[version]
	if !ok {
		return fmt.Errorf("the control plane publishes no release %s (%s/%s lists %s): set the NodePool's spec.kubernetesVersion to one of them",
			version, bootstrap.ReleasesInfoNamespace, bootstrap.ReleasesInfoName, strings.Join(versionsOf(info), ", "))
	}
	if got, err := releaseserver.FileSHA256(dest); err == nil && got == want {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return err
	}
	url := strings.TrimSuffix(info.URL, "/") + releaseserver.Path(version)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("fetch release %s: %w", version, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("fetch release %s from %s: %s: %s", version, url, resp.Status, strings.TrimSpace(string(msg)))
	}
	tmp, err := os.CreateTemp(filepath.Dir(dest), "."+filepath.Base(dest)+".tmp")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	hash := sha256.New()
	_, err = io.Copy(io.MultiWriter(tmp, hash), resp.Body)
	if err == nil {
		err = tmp.Chmod(0o755)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("fetch release %s from %s: %w", version, url, err)
	}
	if got := hex.EncodeToString(hash.Sum(nil)); got != want {
		return fmt.Errorf("release %s from %s has sha256 %s, but %s/%s says %s: refused (the download was altered, or the release server is not this cluster's)",
			version, url, got, bootstrap.ReleasesInfoNamespace, bootstrap.ReleasesInfoName, want)
	}
	if err := os.Rename(tmp.Name(), dest); err != nil {
		return fmt.Errorf("install release %s: %w", version, err)
	}
	return nil
}

func versionsOf(info bootstrap.ReleasesInfo) []string {
	out := make([]string, 0, len(info.SHA256))
	for v := range info.SHA256 {
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return release.Less(out[j], out[i]) })
	return out
}
