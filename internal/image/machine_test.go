package image

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"hypershift.dev/internal/release"
)

// builtMachine is the machine image built once for this package's tests,
// from this host's packages and the hypershift binary `make build` wrote,
// saved as a tarball, read back and extracted in layer order into rootfs.
var builtMachine machineBuild

type machineBuild struct {
	once      sync.Once
	dir       string
	tarball   string
	rootfs    string
	base      v1.Hash                  // the layer of hypershift's own image
	layers    []map[string]*tar.Header // each layer's entries by path
	size      int64
	buildTime time.Duration
	err       error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if builtMachine.dir != "" {
		_ = os.RemoveAll(builtMachine.dir)
	}
	os.Exit(code)
}

// hypershiftBinary is testenv.Binary's choice (testenv imports this
// package): $HYPERSHIFT_BIN or bin/hypershift, skipped under -short.
func hypershiftBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: builds the machine image from the hypershift binary (make test runs it)")
	}
	if b := os.Getenv("HYPERSHIFT_BIN"); b != "" {
		return b
	}
	_, file, _, _ := runtime.Caller(0) //nolint:dogsled // only the file is needed
	b := filepath.Join(filepath.Dir(file), "..", "..", "bin", "hypershift")
	if _, err := os.Stat(b); err != nil {
		t.Fatalf("no hypershift binary at %s: run `make build` (or `make test`), or set HYPERSHIFT_BIN", b)
	}
	return b
}

// machineImage returns the machine image built from this host: skipped
// when its packages are missing and the test does not run as root (root
// runs `make deps`, which installs them).
func machineImage(t *testing.T) *machineBuild {
	t.Helper()
	binary := hypershiftBinary(t)
	builtMachine.once.Do(func() { builtMachine.err = buildMachineImage(binary) })
	var missing *MissingPackagesError
	if errors.As(builtMachine.err, &missing) && os.Geteuid() != 0 {
		t.Skipf("skipping: %v (make deps installs them as root)", builtMachine.err)
	}
	if builtMachine.err != nil {
		t.Fatal(builtMachine.err)
	}
	return &builtMachine
}

func buildMachineImage(binary string) error {
	m := &builtMachine
	var err error
	if m.dir, err = os.MkdirTemp("", "hypershift-machine-image-"); err != nil {
		return err
	}
	// No releases and no Cluster API manager: the first layer is the
	// binary's, what the test checks is the second.
	opts := Options{Executable: binary, Releases: release.New(), ClusterAPIDir: filepath.Join(m.dir, "no-clusterapi")}
	base, err := Build(opts)
	if err != nil {
		return err
	}
	layers, err := base.Layers()
	if err != nil {
		return err
	}
	if m.base, err = layers[0].Digest(); err != nil {
		return err
	}
	m.tarball = filepath.Join(m.dir, "machine.tar")
	f, err := os.Create(m.tarball)
	if err != nil {
		return err
	}
	start := time.Now()
	if err := WriteMachine(f, MachineOptions{Image: opts}); err != nil {
		_ = f.Close()
		return err
	}
	m.buildTime = time.Since(start)
	if err := f.Close(); err != nil {
		return err
	}
	info, err := os.Stat(m.tarball)
	if err != nil {
		return err
	}
	m.size = info.Size()
	m.rootfs = filepath.Join(m.dir, "rootfs")
	return extract(m)
}

// extract reads the saved image back with go-containerregistry and writes
// its layers, in order, into m.rootfs. An entry whose parent is a link
// is an error: a layer names every file by its real path.
func extract(m *machineBuild) error {
	tag, err := name.NewTag(MachineRef())
	if err != nil {
		return err
	}
	img, err := tarball.ImageFromPath(m.tarball, &tag)
	if err != nil {
		return err
	}
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	for _, l := range layers {
		headers := map[string]*tar.Header{}
		m.layers = append(m.layers, headers)
		rc, err := l.Uncompressed()
		if err != nil {
			return err
		}
		err = extractLayer(m.rootfs, tar.NewReader(rc), headers)
		_ = rc.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

func extractLayer(root string, tr *tar.Reader, headers map[string]*tar.Header) error {
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		p := path.Clean("/" + hdr.Name)
		headers[strings.TrimPrefix(p, "/")] = hdr
		for dir := path.Dir(p); dir != "/"; dir = path.Dir(dir) {
			if info, err := os.Lstat(filepath.Join(root, dir)); err == nil && info.Mode()&fs.ModeSymlink != 0 {
				return errors.New(hdr.Name + " goes through the link " + dir)
			}
		}
		target := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		mode := fs.FileMode(hdr.Mode & 0o777)
		for bit, m := range map[int64]fs.FileMode{0o4000: fs.ModeSetuid, 0o2000: fs.ModeSetgid, 0o1000: fs.ModeSticky} {
			if hdr.Mode&bit != 0 {
				mode |= m
			}
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
			if err := os.Chmod(target, mode); err != nil {
				return err
			}
		case tar.TypeSymlink:
			_ = os.Remove(target)
			if err := os.Symlink(hdr.Linkname, target); err != nil {
				return err
			}
		case tar.TypeReg:
			f, err := os.OpenFile(target, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
			if err := os.Chmod(target, mode); err != nil {
				return err
			}
		default:
			return errors.New(hdr.Name + ": unexpected entry type " + string(hdr.Typeflag))
		}
	}
}

// inImage resolves p inside the image as a process chrooted there would
// (links followed, absolute ones from the image's root) and returns the
// host path it names and the links met.
func inImage(root, p string) (string, []string, error) {
	current := "/"
	pending := strings.Split(p, "/")
	var links []string
	for len(pending) > 0 {
		part := pending[0]
		pending = pending[1:]
		switch part {
		case "", ".":
			continue
		case "..":
			current = path.Dir(current)
			continue
		}
		next := path.Join(current, part)
		info, err := os.Lstat(filepath.Join(root, next))
		if err != nil {
			return "", links, err
		}
		if info.Mode()&fs.ModeSymlink == 0 {
			current = next
			continue
		}
		if len(links) > 40 {
			return "", links, errors.New(p + ": too many links")
		}
		links = append(links, next)
		target, err := os.Readlink(filepath.Join(root, next))
		if err != nil {
			return "", links, err
		}
		if path.IsAbs(target) {
			current = "/"
		}
		pending = append(strings.Split(target, "/"), pending...)
	}
	return filepath.Join(root, current), links, nil
}

// The machine image is hypershift's layer, the same bytes, and a layer of
// this host's packages in which every program finds its loader and
// libraries, iptables is reached through /etc/alternatives, and hypershift
// is on the PATH.
func TestMachineImage(t *testing.T) {
	m := machineImage(t)
	t.Logf("machine image: %d MB, built and written in %s", m.size>>20, m.buildTime.Round(10*time.Millisecond))

	tag, err := name.NewTag(MachineRef())
	if err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(m.tarball, &tag)
	if err != nil {
		t.Fatalf("the tarball has no image tagged %s: %v", MachineRef(), err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if diffIDs := cfg.RootFS.DiffIDs; len(diffIDs) != 2 || diffIDs[0] != m.base {
		t.Fatalf("layers %v, want 2, the first hypershift's image's %s", diffIDs, m.base)
	}
	manifest := readManifest(t, m.tarball)
	if len(manifest) != 1 || len(manifest[0].Layers) != 2 || manifest[0].Layers[0] != m.base.Hex+".tar" {
		t.Errorf("manifest.json %+v, want two uncompressed layers, the first %s.tar", manifest, m.base.Hex)
	}
	if len(cfg.Config.Entrypoint) != 0 || strings.Join(cfg.Config.Cmd, " ") != "/bin/sh" {
		t.Errorf("entrypoint %q cmd %q, want none and /bin/sh (the pod runs its userdata)", cfg.Config.Entrypoint, cfg.Config.Cmd)
	}
	if len(cfg.Config.Env) != 1 || !strings.Contains(cfg.Config.Env[0], ":/usr/local/bin:") {
		t.Errorf("env %q, want a PATH with /usr/local/bin", cfg.Config.Env)
	}

	// The second layer adds to the first, never replaces its files.
	for p, hdr := range m.layers[1] {
		if first, ok := m.layers[0][p]; ok && (hdr.Typeflag != tar.TypeDir || first.Typeflag != tar.TypeDir) {
			t.Errorf("the packages' layer replaces %s of hypershift's", p)
		}
		for _, skipped := range skippedDirs {
			if strings.HasPrefix("/"+p, skipped+"/") {
				t.Errorf("the image has %s, under %s", p, skipped)
			}
		}
	}

	checkELFClosure(t, m.rootfs)

	for p, want := range map[string]string{
		"/usr/sbin/iptables":               "/etc/alternatives/iptables",
		"/usr/sbin/iptables-restore":       "/etc/alternatives/iptables-restore",
		"/bin/sh":                          "",
		"/usr/bin/containerd":              "",
		"/usr/bin/ctr":                     "",
		"/usr/bin/containerd-shim-runc-v2": "",
		"/usr/sbin/runc":                   "",
		"/usr/lib/cni/bridge":              "",
		"/usr/lib/cni/host-local":          "",
		"/usr/lib/cni/portmap":             "",
		"/sbin/ip":                         "",
		"/bin/mount":                       "",
		"/usr/local/bin/hypershift":        "",
	} {
		file, links, err := inImage(m.rootfs, p)
		if err != nil {
			t.Errorf("%s does not resolve in the image: %v (links %v)", p, err, links)
			continue
		}
		if info, err := os.Stat(file); err != nil || !info.Mode().IsRegular() || info.Mode().Perm()&0o111 == 0 {
			t.Errorf("%s resolves to %s, not an executable file", p, file)
		}
		if want != "" && !contains(links, want) {
			t.Errorf("%s resolves through %v, want through %s", p, links, want)
		}
	}
	if file, _, _ := inImage(m.rootfs, "/usr/local/bin/hypershift"); file != filepath.Join(m.rootfs, "hypershift") {
		t.Errorf("/usr/local/bin/hypershift is %s, want /hypershift", file)
	}
	// kube-proxy's rules need the extensions iptables loads by name.
	for _, ext := range []string{"libxt_MASQUERADE.so", "libxt_comment.so", "libxt_mark.so", "libxt_conntrack.so", "libxt_statistic.so"} {
		if matches, _ := filepath.Glob(filepath.Join(m.rootfs, "usr/lib/*/xtables", ext)); len(matches) == 0 {
			t.Errorf("no xtables extension %s in the image", ext)
		}
	}
}

// checkELFClosure checks that every ELF file of the image finds its
// interpreter and each DT_NEEDED library in the loader's directories.
func checkELFClosure(t *testing.T, root string) {
	t.Helper()
	checked := 0
	err := filepath.WalkDir(root, func(file string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		if ok, err := isELF(file); err != nil || !ok {
			return err
		}
		f, err := elf.Open(file)
		if err != nil {
			return err
		}
		defer f.Close()
		checked++
		rel := strings.TrimPrefix(file, root)
		for _, prog := range f.Progs {
			if prog.Type != elf.PT_INTERP {
				continue
			}
			raw, _ := io.ReadAll(prog.Open())
			interp := string(bytes.TrimRight(raw, "\x00"))
			if target, _, err := inImage(root, interp); err != nil {
				t.Errorf("%s: interpreter %s not in the image: %v", rel, interp, err)
			} else if info, err := os.Stat(target); err != nil || !info.Mode().IsRegular() {
				t.Errorf("%s: interpreter %s is not a file", rel, interp)
			}
		}
		needed, err := f.ImportedLibraries()
		if err != nil {
			return err
		}
		for _, lib := range needed {
			found := false
			for _, dir := range libraryDirs(f.Machine, f.Class) {
				if target, _, err := inImage(root, path.Join(dir, lib)); err == nil {
					if info, err := os.Stat(target); err == nil && info.Mode().IsRegular() {
						found = true
						break
					}
				}
			}
			if !found {
				t.Errorf("%s needs %s, which the image does not have", rel, lib)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 20 {
		t.Errorf("checked %d ELF files, want the packages' programs and libraries", checked)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// As root, the image's programs run chrooted into it: each finds its
// loader, its libraries and, for iptables, its alternative.
func TestMachineImageRunsItsPrograms(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipping: chroot into the machine image needs root")
	}
	m := machineImage(t)
	cmd := exec.Command("chroot", m.rootfs, "/bin/sh", "-c", "iptables --version && ip -V && containerd --version && runc --version && hypershift version")
	cmd.Env = []string{machinePath}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("in the machine image: %v\n%s", err, out)
	}
	for _, want := range []string{"iptables v", "(nf_tables)", "ip utility", "containerd", "runc version", "kubernetes v"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	// In a network namespace of its own, iptables loads the extensions
	// kube-proxy's rules use (dlopened from the xtables directory).
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skipf("no unshare on this host (util-linux): %v", err)
	}
	rules := "iptables -t nat -N KUBE-TEST && " +
		"iptables -t nat -A KUBE-TEST -p tcp -m comment --comment test -m statistic --mode random --probability 0.5 -j DNAT --to-destination 10.0.0.1:80 && " +
		"iptables -t nat -A KUBE-TEST -m mark --mark 0x4000/0x4000 -j MASQUERADE && " +
		"iptables -A FORWARD -m conntrack --ctstate INVALID -j DROP && " +
		"iptables-save"
	cmd = exec.Command("unshare", "--net", "chroot", m.rootfs, "/bin/sh", "-c", rules)
	cmd.Env = []string{machinePath}
	out, err = cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("iptables rules in the machine image: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "-j MASQUERADE") || !strings.Contains(string(out), "--ctstate INVALID") {
		t.Errorf("iptables-save lacks the rules added:\n%s", out)
	}
}
