package image

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeDebian writes a Debian system under a temporary root: merged /usr,
// package "tool" (a program, its documentation, a conffile removed, an
// alternative chosen for it), package "libthing" with an
// architecture-qualified list, and an alternative of a package not asked
// for.
func fakeDebian(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for link, target := range map[string]string{
		"bin": "usr/bin", "sbin": "usr/sbin", "lib": "usr/lib", "lib64": "usr/lib64",
		"usr/sbin/tool-nft":          "tool-multi",
		"usr/sbin/tool":              "/etc/alternatives/tool",
		"usr/sbin/tool-save":         "/etc/alternatives/tool-save",
		"etc/alternatives/tool":      "/usr/sbin/tool-nft",
		"etc/alternatives/tool-save": "/usr/sbin/tool-multi",
		"usr/bin/other-link":         "/etc/alternatives/other",
		"etc/alternatives/other":     "/usr/bin/other",
		"usr/lib/libthing.so.1":      "libthing.so.1.2",
	} {
		mkdir(t, filepath.Dir(filepath.Join(root, link)))
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	for file, content := range map[string]string{
		"usr/bin/tool-helper":                   "#!/bin/sh\n",
		"usr/sbin/tool-multi":                   "multi",
		"usr/share/doc/tool/copyright":          "doc",
		"usr/share/man/man8/tool.8.gz":          "man",
		"usr/share/tool/rules":                  "rules",
		"usr/bin/other":                         "other",
		"usr/lib/libthing.so.1.2":               "lib",
		"var/lib/dpkg/info/tool.list":           "/.\n/bin\n/bin/tool-helper\n/etc\n/etc/tool.conf\n/usr\n/usr/sbin\n/usr/sbin/tool-multi\n/usr/sbin/tool-nft\n/usr/share\n/usr/share/doc\n/usr/share/doc/tool\n/usr/share/doc/tool/copyright\n/usr/share/man/man8/tool.8.gz\n/usr/share/tool\n/usr/share/tool/rules\n",
		"var/lib/dpkg/info/libthing:amd64.list": "/.\n/usr/lib/libthing.so.1.2\n/usr/lib/libthing.so.1\n",
		"var/lib/dpkg/alternatives/tool":        "auto\n/usr/sbin/tool\ntool-save\n/usr/sbin/tool-save\n\n/usr/sbin/tool-nft\n20\n/usr/sbin/tool-multi\n\n",
		"var/lib/dpkg/alternatives/other":       "auto\n/usr/bin/other-link\n\n/usr/bin/other\n10\n\n",
	} {
		mkdir(t, filepath.Dir(filepath.Join(root, file)))
		if err := os.WriteFile(filepath.Join(root, file), []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func mkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

// The packages' layer holds their files under their real paths, the links
// to reach them (merged /usr, alternatives chosen for them, their own) and
// hypershift on the PATH; not their documentation, nor the alternatives
// of other packages.
func TestPackageLayerFromADpkgRoot(t *testing.T) {
	root := fakeDebian(t)
	entries, err := packageEntries(root, []string{"tool", "libthing"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]entry{}
	var order []string
	for _, e := range entries {
		got[e.path] = e
		order = append(order, e.path)
	}
	links := map[string]string{
		"bin": "usr/bin", "sbin": "usr/sbin", "lib": "usr/lib", "lib64": "usr/lib64",
		"usr/sbin/tool":              "/etc/alternatives/tool",
		"usr/sbin/tool-save":         "/etc/alternatives/tool-save",
		"etc/alternatives/tool":      "/usr/sbin/tool-nft",
		"etc/alternatives/tool-save": "/usr/sbin/tool-multi",
		"usr/sbin/tool-nft":          "tool-multi",
		"usr/lib/libthing.so.1":      "libthing.so.1.2",
		"usr/local/bin/hypershift":   "/hypershift",
	}
	for p, target := range links {
		if e, ok := got[p]; !ok || e.link != target {
			t.Errorf("%s: %+v, want a link to %s", p, e, target)
		}
	}
	for _, p := range []string{"usr/bin/tool-helper", "usr/sbin/tool-multi", "usr/share/tool/rules", "usr/lib/libthing.so.1.2"} {
		if e, ok := got[p]; !ok || e.src != filepath.Join(root, p) || e.mode != 0o755 {
			t.Errorf("%s: %+v, want the file of the root with mode 755", p, e)
		}
	}
	for _, p := range []string{"usr/", "usr/sbin/", "usr/share/tool/", "etc/alternatives/", "usr/local/bin/"} {
		if e, ok := got[p]; !ok || !e.dir {
			t.Errorf("%s: %+v, want a directory", p, e)
		}
	}
	for p := range got {
		if strings.HasPrefix(p, "usr/share/doc") || strings.HasPrefix(p, "usr/share/man") || strings.Contains(p, "other") ||
			strings.HasPrefix(p, "bin/") || p == "etc/tool.conf" {
			t.Errorf("the layer has %s", p)
		}
	}
	for i := 1; i < len(order); i++ {
		if order[i-1] >= order[i] {
			t.Errorf("entries out of order: %s before %s", order[i-1], order[i])
		}
	}

	// The layer's bytes depend on the files only: no times, one order.
	first, second := layerBytes(t, entries), layerBytes(t, entries)
	if !bytes.Equal(first, second) {
		t.Error("the layer differs between two writes")
	}
	tr := tar.NewReader(bytes.NewReader(first))
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if hdr.ModTime.Unix() != 0 || hdr.Uid != 0 || hdr.Gid != 0 {
			t.Errorf("%s: time %v, owner %d:%d; want no time, root", hdr.Name, hdr.ModTime, hdr.Uid, hdr.Gid)
		}
	}
}

func layerBytes(t *testing.T, entries []entry) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := writeLayer(&b, entries); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// A package that is not installed is named, with the line that installs
// them; a root without merged /usr is refused.
func TestPackageLayerRefusals(t *testing.T) {
	root := fakeDebian(t)
	_, err := packageEntries(root, []string{"tool", "containerd", "runc"})
	var missing *MissingPackagesError
	if !errors.As(err, &missing) || strings.Join(missing.Missing, " ") != "containerd runc" {
		t.Fatalf("got %v, want the packages containerd and runc missing", err)
	}
	for _, want := range []string{"containerd, runc", "/var/lib/dpkg/info/containerd.list", "apt-get install -y tool containerd runc", root} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}

	unmerged := t.TempDir()
	mkdir(t, filepath.Join(unmerged, "bin"))
	_, err = packageEntries(unmerged, []string{"tool"})
	if err == nil || !strings.Contains(err.Error(), "merged /usr") {
		t.Errorf("a root whose /bin is a directory: %v, want a refusal that names merged /usr", err)
	}
}

// The default packages are those a machine runs, and the dpkg root is /.
func TestMachineOptionsDefaults(t *testing.T) {
	o := MachineOptions{}.withDefaults()
	if o.DpkgRoot != "/" || o.Ref != MachineRef() {
		t.Errorf("defaults %+v", o)
	}
	for _, pkg := range []string{"dash", "coreutils", "mount", "iproute2", "iptables", "containerd", "runc", "containernetworking-plugins"} {
		if !contains(o.Packages, pkg) {
			t.Errorf("default packages %v lack %s", o.Packages, pkg)
		}
	}
	if want := "hypershift.dev/hypershift-machine:"; !strings.HasPrefix(MachineRef(), want) {
		t.Errorf("MachineRef() = %q, want %s<version>", MachineRef(), want)
	}
}
