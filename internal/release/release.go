// Package release says which Kubernetes releases this install can run and
// how to run a component of each. The compiled-in release is the one linked
// into the hypershift binary; every other is a `kubernetes` binary built by
// `make` from its own module (releases/v<minor>) and found in a releases
// directory, checked against its SHA256SUMS before it is ever used.
package release

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"hypershift.dev/internal/version"
)

// BinaryName is the file of a release in <dir>/<version>/.
const BinaryName = "kubernetes"

// SumsName is the file beside it holding its sha256 (sha256sum's format).
const SumsName = "SHA256SUMS"

// Release is one Kubernetes version this install can run.
type Release struct {
	// Version is the Kubernetes version (v1.36.3).
	Version string
	// Binary is the release's `kubernetes` binary; empty for the release
	// compiled into hypershift.
	Binary string
	// SHA256 is the binary's checked digest (hex); empty when compiled in.
	SHA256 string
}

// CompiledIn reports whether the release is the one linked into hypershift.
func (r Release) CompiledIn() bool { return r.Binary == "" }

// Catalog is the set of releases of one install. A nil *Catalog holds the
// compiled-in release only.
type Catalog struct {
	dir      string
	releases map[string]Release
}

// New returns a catalog of the compiled-in release and rs, taken as they
// are (no checksum is checked): for tests and for callers that already
// checked them.
func New(rs ...Release) *Catalog {
	c := &Catalog{releases: map[string]Release{
		version.KubernetesVersion: {Version: version.KubernetesVersion},
	}}
	for _, r := range rs {
		c.releases[r.Version] = r
	}
	return c
}

// DefaultDir is where an install keeps its releases: beside the hypershift
// binary (bin/hypershift → bin/releases), as `make build` lays them out.
func DefaultDir() string { return BesideExecutable("releases") }

// BesideExecutable is name in the directory of the running executable
// (symbolic links resolved): where `make build` puts what hypershift runs
// besides itself (bin/releases, bin/clusterapi). Empty when the executable
// is not known.
func BesideExecutable(name string) string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	if resolved, err := filepath.EvalSymlinks(exe); err == nil {
		exe = resolved
	}
	return filepath.Join(filepath.Dir(exe), name)
}

// Load returns the compiled-in release and every <dir>/<version>/kubernetes
// whose sha256 matches the SHA256SUMS beside it. A missing dir holds no
// release; a binary that does not match its sums, or a version directory
// without a binary or sums, is an error naming the file: never run
// something other than what was built.
func Load(dir string) (*Catalog, error) {
	c := New()
	if dir == "" {
		return c, nil
	}
	// Absolute: the runtime starts a release's binary from the instance's
	// own directory.
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("releases directory: %w", err)
	}
	c.dir = dir
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read releases directory: %w", err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		v := e.Name()
		if _, ok := parse(v); !ok {
			return nil, fmt.Errorf("releases directory %s: %s is not a Kubernetes version (vMAJOR.MINOR.PATCH)", dir, v)
		}
		if v == version.KubernetesVersion {
			// The compiled-in release wins: it needs no second binary.
			continue
		}
		r, err := verify(filepath.Join(dir, v))
		if err != nil {
			return nil, err
		}
		r.Version = v
		c.releases[v] = r
	}
	return c, nil
}

// Installed lists the compiled-in version and those of dir's releases,
// newest first, without checking their binaries: cheap enough for a help
// text. Load is what decides what runs.
func Installed(dir string) []string {
	out := []string{version.KubernetesVersion}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if _, ok := parse(e.Name()); ok && e.Name() != version.KubernetesVersion {
			if _, err := os.Stat(filepath.Join(dir, e.Name(), BinaryName)); err == nil {
				out = append(out, e.Name())
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return Less(out[j], out[i]) })
	return out
}

// verify returns the release in vdir if its binary matches its sums.
func verify(vdir string) (Release, error) {
	bin := filepath.Join(vdir, BinaryName)
	sums := filepath.Join(vdir, SumsName)
	want, err := readSum(sums, BinaryName)
	if err != nil {
		return Release{}, err
	}
	f, err := os.Open(bin)
	if err != nil {
		return Release{}, fmt.Errorf("release binary: %w", err)
	}
	defer func() { _ = f.Close() }()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return Release{}, fmt.Errorf("hash %s: %w", bin, err)
	}
	got := hex.EncodeToString(h.Sum(nil))
	if got != want {
		return Release{}, fmt.Errorf("release binary %s has sha256 %s, but %s says %s: it is not the binary that was built; rebuild it with make build", bin, got, sums, want)
	}
	return Release{Binary: bin, SHA256: got}, nil
}

// readSum returns the digest of name in a sha256sum file.
func readSum(path, name string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("release checksums: %w", err)
	}
	defer func() { _ = f.Close() }()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) == 2 && strings.TrimPrefix(fields[1], "*") == name && len(fields[0]) == sha256.Size*2 {
			return strings.ToLower(fields[0]), nil
		}
	}
	if err := s.Err(); err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	return "", fmt.Errorf("release checksums %s have no sha256 for %s", path, name)
}

// Dir is the directory the catalog was loaded from ("" for none).
func (c *Catalog) Dir() string {
	if c == nil {
		return ""
	}
	return c.dir
}

// Lookup returns the release of version v ("" is the compiled-in one).
func (c *Catalog) Lookup(v string) (Release, bool) {
	v = Normalize(v)
	if c == nil {
		if v == version.KubernetesVersion {
			return Release{Version: v}, true
		}
		return Release{}, false
	}
	r, ok := c.releases[v]
	return r, ok
}

// Releases returns every release, newest first.
func (c *Catalog) Releases() []Release {
	if c == nil {
		return []Release{{Version: version.KubernetesVersion}}
	}
	out := make([]Release, 0, len(c.releases))
	for _, r := range c.releases {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return Less(out[j].Version, out[i].Version) })
	return out
}

// Versions returns the versions of every release, newest first.
func (c *Catalog) Versions() []string {
	rs := c.Releases()
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Version
	}
	return out
}

// Command returns how to run component of release r: the hypershift
// binary's `component <name>` for the compiled-in release, the release's
// own `kubernetes <name>` otherwise. The component's flags follow
// argsPrefix.
func Command(r Release, component string) (path string, argsPrefix []string) {
	if r.CompiledIn() {
		exe, _ := os.Executable()
		return exe, []string{"component", component}
	}
	return r.Binary, []string{component}
}

// Normalize names the compiled-in release for "", and returns any other
// version as it is.
func Normalize(v string) string {
	if v == "" {
		return version.KubernetesVersion
	}
	return v
}

// Minor returns the minor of a version (36 for v1.36.3); ok is false when v
// is not vMAJOR.MINOR.PATCH.
func Minor(v string) (int, bool) {
	p, ok := parse(v)
	return p[1], ok
}

// Less reports whether version a is older than b; versions that do not
// parse sort first.
func Less(a, b string) bool {
	pa, oka := parse(a)
	pb, okb := parse(b)
	if oka != okb {
		return !oka
	}
	for i := range pa {
		if pa[i] != pb[i] {
			return pa[i] < pb[i]
		}
	}
	return a < b
}

// parse splits vMAJOR.MINOR.PATCH.
func parse(v string) ([3]int, bool) {
	var out [3]int
	rest, ok := strings.CutPrefix(v, "v")
	if !ok {
		return out, false
	}
	parts := strings.Split(rest, ".")
	if len(parts) != 3 {
		return out, false
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || strconv.Itoa(n) != p {
			return out, false
		}
		out[i] = n
	}
	return out, true
}
