// Package releaseserver is the control-plane component that serves a
// cluster's Kubernetes releases to its nodes: `GET
// /releases/<version>/kubernetes` returns the release binary (for the
// compiled-in release, the hypershift binary, whose kubelet runs as
// `hypershift component kubelet`) with its sha256 in a header, over TLS,
// to nodes of this cluster only (Authenticator). Nodes check the sha256
// against what the control plane published in kube-public.
package releaseserver

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"

	"github.com/go-logr/logr"

	"hypershift.dev/internal/release"
)

// SHA256Header carries the hex sha256 of the served binary.
const SHA256Header = "X-Hypershift-Sha256"

// Path is the URL path of a release's binary.
func Path(version string) string { return "/releases/" + version + "/" + release.BinaryName }

// Handler serves the releases of a catalog to authenticated nodes.
type Handler struct {
	Releases *release.Catalog
	Authn    *Authenticator
	// Self is the hypershift binary (the compiled-in release); empty: the
	// running executable.
	Self string
	Log  logr.Logger

	mu   sync.Mutex
	sums map[string]string // path → sha256 of binaries hashed here
}

// ServeHTTP answers GET /releases/<version>/kubernetes.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/healthz" {
		// The readiness probe's: says nothing about the releases.
		_, _ = w.Write([]byte("ok"))
		return
	}
	who, err := h.Authn.Authenticate(r)
	switch {
	case errors.Is(err, errUnauthenticated):
		h.Log.V(1).Info("refused", "reason", err.Error(), "remote", r.RemoteAddr)
		http.Error(w, "Unauthorized: present a client certificate of this cluster's nodes or a bootstrap token", http.StatusUnauthorized)
		return
	case errors.Is(err, errForbidden):
		h.Log.Info("refused", "reason", err.Error(), "remote", r.RemoteAddr)
		http.Error(w, "Forbidden: only nodes (system:nodes, system:bootstrappers) may fetch releases", http.StatusForbidden)
		return
	case err != nil:
		h.Log.Error(err, "authenticate", "remote", r.RemoteAddr)
		http.Error(w, "cannot authenticate the request now", http.StatusServiceUnavailable)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "only GET", http.StatusMethodNotAllowed)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/releases/")
	version, file, _ := strings.Cut(rest, "/")
	if !ok || file != release.BinaryName {
		http.NotFound(w, r)
		return
	}
	rel, ok := h.Releases.Lookup(version)
	if !ok || version == "" {
		http.Error(w, fmt.Sprintf("release %q is not served here: this control plane has %s", version, strings.Join(h.Releases.Versions(), ", ")), http.StatusNotFound)
		return
	}
	path, sum, err := h.binary(rel)
	if err != nil {
		h.Log.Error(err, "release binary", "version", version)
		http.Error(w, "release binary unavailable", http.StatusInternalServerError)
		return
	}
	f, err := os.Open(path) //nolint:gosec // the catalog's file of a version it has, never a path from the request
	if err != nil {
		h.Log.Error(err, "open release", "version", version)
		http.Error(w, "release binary unavailable", http.StatusInternalServerError)
		return
	}
	defer func() { _ = f.Close() }()
	st, err := f.Stat()
	if err != nil {
		http.Error(w, "release binary unavailable", http.StatusInternalServerError)
		return
	}
	h.Log.Info("serving release", "version", version, "to", who)
	w.Header().Set(SHA256Header, sum)
	w.Header().Set("Content-Type", "application/octet-stream")
	http.ServeContent(w, r, release.BinaryName, st.ModTime(), f)
}

// binary returns the file of a release and its sha256: the catalog's
// checked digest, or for the compiled-in release the hypershift binary's,
// hashed once.
func (h *Handler) binary(rel release.Release) (string, string, error) {
	if !rel.CompiledIn() {
		return rel.Binary, rel.SHA256, nil
	}
	path := h.Self
	if path == "" {
		exe, err := os.Executable()
		if err != nil {
			return "", "", err
		}
		path = exe
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if sum, ok := h.sums[path]; ok {
		return path, sum, nil
	}
	sum, err := FileSHA256(path)
	if err != nil {
		return "", "", err
	}
	if h.sums == nil {
		h.sums = map[string]string{}
	}
	h.sums[path] = sum
	return path, sum, nil
}

// FileSHA256 is the hex sha256 of a file.
func FileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }()
	hash := sha256.New()
	if _, err := io.Copy(hash, f); err != nil {
		return "", fmt.Errorf("hash %s: %w", path, err)
	}
	return hex.EncodeToString(hash.Sum(nil)), nil
}
