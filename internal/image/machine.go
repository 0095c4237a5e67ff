package image

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"hypershift.dev/internal/version"
)

// MachineRepository is the machine image's name without its tag.
const MachineRepository = "hypershift.dev/hypershift-machine"

// MachineRef is the machine image's name: one tag per hypershift version.
func MachineRef() string { return MachineRepository + ":" + version.Version }

// MachineCommand is the link that puts hypershift on the machine's PATH,
// so that its userdata's `hypershift join` runs the image's binary.
const MachineCommand = "/usr/local/bin/hypershift"

// machinePath is the machine image's PATH, Debian's.
const machinePath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// MachinePackages are the Debian packages whose files the machine image
// holds besides hypershift: a shell and the core utilities for the
// userdata, and the programs a node runs — containerd with its runc shim
// and ctr, runc, the CNI plugins (bridge, host-local, portmap), iptables
// (kube-proxy, the CNI plugins, the pod network), ip (join's loopback
// address) and mount (the kubelet's volumes).
func MachinePackages() []string {
	return []string{"dash", "coreutils", "mount", "iproute2", "iptables", "containerd", "runc", "containernetworking-plugins"}
}

// MachineOptions say what goes into the machine image.
type MachineOptions struct {
	// Image builds the first layer: hypershift's own image's, unchanged.
	Image Options
	// DpkgRoot is the root of the Debian system whose installed packages
	// the second layer copies; default "/".
	DpkgRoot string
	// Packages default to MachinePackages().
	Packages []string
	// Ref is the tag; default MachineRef().
	Ref string
}

func (o MachineOptions) withDefaults() MachineOptions {
	if o.DpkgRoot == "" {
		o.DpkgRoot = "/"
	}
	if o.Packages == nil {
		o.Packages = MachinePackages()
	}
	if o.Ref == "" {
		o.Ref = MachineRef()
	}
	return o
}

// WriteMachine writes the machine image as a docker-archive tarball tagged
// opts.Ref.
func WriteMachine(w io.Writer, opts MachineOptions) error {
	opts = opts.withDefaults()
	img, err := BuildMachine(opts)
	if err != nil {
		return err
	}
	return Save(w, img, opts.Ref)
}

// BuildMachine assembles the machine image, what a machine of the kube
// runtime runs as a privileged pod: hypershift's image's layer, the same
// bytes (a node that has hypershift's image stores it once), and a layer of
// the Debian packages' files with the shared libraries they load, the
// alternatives they are reached through, merged /usr's links and
// MachineCommand. No entrypoint: the pod runs its userdata with /bin/sh.
// Reading the packages needs no root.
func BuildMachine(opts MachineOptions) (v1.Image, error) {
	opts = opts.withDefaults()
	base, err := Build(opts.Image)
	if err != nil {
		return nil, err
	}
	layers, err := base.Layers()
	if err != nil {
		return nil, err
	}
	entries, err := packageEntries(opts.DpkgRoot, opts.Packages)
	if err != nil {
		return nil, err
	}
	packages, err := newUncompressedLayer(func(w io.Writer) error { return writeLayer(w, entries) })
	if err != nil {
		return nil, err
	}
	return imageOf(v1.Config{Cmd: []string{"/bin/sh"}, Env: []string{machinePath}, WorkingDir: "/"}, layers[0], packages)
}

// packageEntries are the machine layer's entries: the files of pkgs as
// installed under root, what they need, and MachineCommand.
func packageEntries(root string, pkgs []string) ([]entry, error) {
	t := newPackageTree(root)
	if err := t.addMergedUsr(); err != nil {
		return nil, err
	}
	if err := t.addPackages(pkgs); err != nil {
		return nil, err
	}
	if err := t.addAlternatives(); err != nil {
		return nil, err
	}
	if err := t.addLibraries(); err != nil {
		return nil, err
	}
	t.put(MachineCommand, entry{link: Entrypoint})
	return t.layerEntries(), nil
}

// addMergedUsr adds /bin, /sbin, /lib and /lib64 as the links into /usr
// Debian has made them since 12 (/lib64 where the architecture has it).
// Files are kept under /usr only, so a system whose /bin is a directory
// is refused.
func (t *packageTree) addMergedUsr() error {
	for _, dir := range []string{"/bin", "/sbin", "/lib", "/lib64"} {
		info, err := os.Lstat(t.host(dir))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if info.Mode()&fs.ModeSymlink == 0 {
			return fmt.Errorf("%s is a directory, not a link to usr%s: the machine image is built from a Debian system with merged /usr (Debian 12 or later)", t.host(dir), dir)
		}
		if err := t.add(dir); err != nil {
			return err
		}
	}
	return nil
}
