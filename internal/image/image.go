// Package image builds hypershift's own container image from the running
// binary, so that pods of a hosted cluster (CoreDNS, the konnectivity
// agent) run the same components as the control plane without a registry:
// `hypershift join` imports the image into the node's containerd, and pods
// use it with imagePullPolicy Never.
package image

import (
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	goruntime "runtime"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"hypershift.dev/internal/clusterapi"
	"hypershift.dev/internal/release"
	"hypershift.dev/internal/version"
)

// Repository is the image's name without its tag.
const Repository = "hypershift.dev/hypershift"

// Entrypoint is the binary's path in the image.
const Entrypoint = "/hypershift"

// ReleasesDir holds the image's Kubernetes releases besides the
// compiled-in one, as ReleasesDir/<version>/kubernetes with its SHA256SUMS:
// the releases directory of a hypershift running in the image (docs/releases.md).
const ReleasesDir = "/releases"

// ClusterAPIDir holds Cluster API's manager as clusterapi.Manager expects
// it: ClusterAPIDir/cluster-api-manager and the CRDs it installs in
// ClusterAPIDir/crds. It is clusterapi.DirName beside /hypershift, so a
// hypershift running in the image finds it where `make build` puts it
// beside bin/hypershift (clusterapi.DefaultDir).
const ClusterAPIDir = "/" + clusterapi.DirName

// CABundle is where Debian keeps the CA roots: the host's are copied to the
// same path in the image when present, for components that dial out over
// TLS.
const CABundle = "/etc/ssl/certs/ca-certificates.crt"

// Ref is the image's name: one tag per hypershift version.
func Ref() string { return Repository + ":" + version.Version }

// Options say what goes into the image; empty fields take this process's.
type Options struct {
	// Executable is the hypershift binary; default: os.Executable().
	Executable string
	// CABundle is the host's CA roots; default CABundle, left out when
	// missing.
	CABundle string
	// Ref is the tag; default Ref().
	Ref string
	// Releases are packed under ReleasesDir; nil: the catalog of the
	// releases directory beside the binary (release.DefaultDir).
	Releases *release.Catalog
	// ClusterAPIDir is the directory of the Cluster API manager and its
	// CRDs (`make clusterapi`), packed under ClusterAPIDir; default:
	// clusterapi.DefaultDir(). A directory that exists without the binary
	// or the CRDs is an error.
	ClusterAPIDir string
	// RequireClusterAPI makes a missing ClusterAPIDir an error. Without it
	// the image has no Cluster API manager then: `join` builds the image
	// for its pods, which never run the manager, from a binary that may
	// have been copied to the node alone.
	RequireClusterAPI bool
}

func (o Options) withDefaults() (Options, error) {
	if o.Executable == "" {
		exe, err := os.Executable()
		if err != nil {
			return o, fmt.Errorf("find the running binary: %w", err)
		}
		o.Executable = exe
	}
	if o.CABundle == "" {
		o.CABundle = CABundle
	}
	if o.Ref == "" {
		o.Ref = Ref()
	}
	if o.ClusterAPIDir == "" {
		o.ClusterAPIDir = clusterapi.DefaultDir()
	}
	if o.Releases == nil {
		c, err := release.Load(release.DefaultDir())
		if err != nil {
			return o, fmt.Errorf("releases of the image: %w", err)
		}
		o.Releases = c
	}
	return o, nil
}

// passwd and group name root and nobody, so that tools and runAsNonRoot
// checks that look users up find them.
const (
	passwd = "root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" //nolint:gosec // user names, no password
	group  = "root:x:0:\nnobody:x:65534:\n"
)

// Write writes the image as a docker-archive tarball tagged opts.Ref (the
// form `ctr images import` and `hypershift node load-image` take). The
// layer is an uncompressed tar: the binary is ~250 MB and gzip, even at
// its fastest level, takes seconds on each join, while the import copies
// an uncompressed layer at disk speed (docs/real-nodes.md has the figures).
func Write(w io.Writer, opts Options) error {
	opts, err := opts.withDefaults()
	if err != nil {
		return err
	}
	img, err := Build(opts)
	if err != nil {
		return err
	}
	return Save(w, img, opts.Ref)
}

// Save writes a built image as a docker-archive tarball tagged ref.
func Save(w io.Writer, img v1.Image, ref string) error {
	tag, err := name.NewTag(ref)
	if err != nil {
		return fmt.Errorf("image name %q: %w", ref, err)
	}
	if err := tarball.Write(tag, img, w); err != nil {
		return fmt.Errorf("write image %s: %w", ref, err)
	}
	return nil
}

// Build assembles the image: one layer with the binary, the CA roots,
// /etc/passwd, /etc/group, /tmp, the releases and Cluster API's manager;
// entrypoint /hypershift.
func Build(opts Options) (v1.Image, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := checkStatic(opts.Executable); err != nil {
		return nil, err
	}
	entries, err := layerEntries(opts)
	if err != nil {
		return nil, err
	}
	layer, err := newUncompressedLayer(func(w io.Writer) error { return writeLayer(w, entries) })
	if err != nil {
		return nil, err
	}
	return imageOf(v1.Config{Entrypoint: []string{Entrypoint}, Env: []string{"PATH=/"}, WorkingDir: "/"}, layer)
}

func layerEntries(opts Options) ([]entry, error) {
	exe, err := os.Stat(opts.Executable)
	if err != nil {
		return nil, fmt.Errorf("image binary: %w", err)
	}
	entries := []entry{
		{path: "etc/", mode: 0o755, dir: true},
		{path: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		{path: "etc/group", mode: 0o644, data: []byte(group)},
	}
	if info, err := os.Stat(opts.CABundle); err == nil {
		entries = append(entries,
			entry{path: "etc/ssl/", mode: 0o755, dir: true},
			entry{path: "etc/ssl/certs/", mode: 0o755, dir: true},
			entry{path: CABundle[1:], mode: 0o644, src: opts.CABundle, size: info.Size()},
		)
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("CA bundle: %w", err)
	}
	entries = append(entries,
		entry{path: "tmp/", mode: 0o1777, dir: true},
		entry{path: Entrypoint[1:], mode: 0o755, src: opts.Executable, size: exe.Size()},
	)
	releases, err := releaseEntries(opts.Releases)
	if err != nil {
		return nil, err
	}
	entries = append(entries, releases...)
	manager, err := clusterAPIEntries(opts.ClusterAPIDir, opts.RequireClusterAPI)
	if err != nil {
		return nil, err
	}
	return append(entries, manager...), nil
}

// releaseEntries are ReleasesDir/<version>/kubernetes and its SHA256SUMS
// for every release that is not compiled in, oldest first. The sums are
// the ones checked when the catalog was loaded: a binary changed since
// then is refused where the image runs.
func releaseEntries(c *release.Catalog) ([]entry, error) {
	var out []entry
	rs := c.Releases()
	for i := len(rs) - 1; i >= 0; i-- {
		r := rs[i]
		if r.CompiledIn() {
			continue
		}
		if len(out) == 0 {
			out = append(out, entry{path: ReleasesDir[1:] + "/", mode: 0o755, dir: true})
		}
		info, err := os.Stat(r.Binary)
		if err != nil {
			return nil, fmt.Errorf("release %s: %w", r.Version, err)
		}
		dir := path.Join(ReleasesDir[1:], r.Version)
		out = append(out,
			entry{path: dir + "/", mode: 0o755, dir: true},
			entry{path: path.Join(dir, release.BinaryName), mode: 0o755, src: r.Binary, size: info.Size()},
			entry{path: path.Join(dir, release.SumsName), mode: 0o644, data: []byte(r.SHA256 + "  " + release.BinaryName + "\n")},
		)
	}
	return out, nil
}

// checkStatic refuses an executable that needs a dynamic loader: the image
// holds no C library, so such a binary (hypershift built with cgo) would
// fail in every pod with "no such file or directory".
func checkStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return nil // not ELF: nothing to load dynamically
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked (built with cgo), but hypershift's image has no C library: build it static with CGO_ENABLED=0 (make build does)", path)
		}
	}
	return nil
}

// imageOf is a linux image of this architecture with the layers, in order,
// and config.
func imageOf(config v1.Config, layers ...v1.Layer) (v1.Image, error) {
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", goruntime.GOARCH
	cfg.Config = config
	return mutate.ConfigFile(img, cfg)
}
