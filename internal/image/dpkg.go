package image

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	goruntime "runtime"
	"sort"
	"strings"
)

// MissingPackagesError says which packages the machine image needs that
// the Debian system it is built from has not installed.
type MissingPackagesError struct {
	Root     string
	Missing  []string
	Packages []string
}

func (e *MissingPackagesError) Error() string {
	return fmt.Sprintf("the machine image is built from the Debian packages installed in %s, which lacks %s (no %s): apt-get install -y %s",
		e.Root, strings.Join(e.Missing, ", "), path.Join(dpkgInfo, e.Missing[0]+".list"), strings.Join(e.Packages, " "))
}

// dpkgInfo holds each installed package's file list, <pkg>.list (or
// <pkg>:<arch>.list for a package installable for several architectures).
const dpkgInfo = "/var/lib/dpkg/info"

// dpkgAlternatives holds update-alternatives' records: the links of each
// alternative; /etc/alternatives/<name> points to the chosen target.
const (
	dpkgAlternatives = "/var/lib/dpkg/alternatives"
	etcAlternatives  = "/etc/alternatives"
)

// skippedDirs hold nothing a machine runs: documentation, manuals,
// translations, lint overrides and shell completion.
var skippedDirs = []string{
	"/usr/share/doc", "/usr/share/man", "/usr/share/locale", "/usr/share/lintian", "/usr/share/bash-completion",
}

// maxLinks is the kernel's limit of symbolic links followed in one path.
const maxLinks = 40

// packageTree collects files of a Debian system rooted at root (a host
// directory) under their canonical paths — every parent a real directory
// — with the symbolic links met on the way, so that every path that
// resolves on that system resolves the same way in the image.
type packageTree struct {
	root    string
	entries map[string]entry // by absolute path in the image
	elfs    []string         // regular files not yet read for the libraries they need
}

func newPackageTree(root string) *packageTree {
	return &packageTree{root: root, entries: map[string]entry{}}
}

func (t *packageTree) host(p string) string { return filepath.Join(t.root, filepath.FromSlash(p)) }

// addPackages adds the files of each package's dpkg list, but for
// skippedDirs and files missing from /etc or /usr/share (conffiles
// removed, paths excluded from installation).
func (t *packageTree) addPackages(pkgs []string) error {
	var lists []string
	var missing []string
	for _, pkg := range pkgs {
		list, err := t.listFile(pkg)
		if err != nil {
			return err
		}
		if list == "" {
			missing = append(missing, pkg)
			continue
		}
		lists = append(lists, list)
	}
	if len(missing) > 0 {
		return &MissingPackagesError{Root: t.root, Missing: missing, Packages: pkgs}
	}
	for i, list := range lists {
		paths, err := readLines(list)
		if err != nil {
			return fmt.Errorf("files of package %s: %w", pkgs[i], err)
		}
		for _, p := range paths {
			if p == "/." || !path.IsAbs(p) || skipped(p) {
				continue
			}
			err := t.add(p)
			if errors.Is(err, fs.ErrNotExist) && (strings.HasPrefix(p, "/etc/") || strings.HasPrefix(p, "/usr/share/")) {
				continue
			}
			if err != nil {
				return fmt.Errorf("%s of package %s (apt-get install --reinstall %s): %w", p, pkgs[i], pkgs[i], err)
			}
		}
	}
	return nil
}

// listFile is pkg's dpkg file list under the root, or "" when pkg is not
// installed.
func (t *packageTree) listFile(pkg string) (string, error) {
	plain := t.host(path.Join(dpkgInfo, pkg+".list"))
	if _, err := os.Stat(plain); err == nil {
		return plain, nil
	}
	native := t.host(path.Join(dpkgInfo, pkg+":"+debianArchitectures[goruntime.GOARCH]+".list"))
	if _, err := os.Stat(native); err == nil {
		return native, nil
	}
	qualified, err := filepath.Glob(t.host(path.Join(dpkgInfo, pkg+":*.list")))
	if err != nil || len(qualified) == 0 {
		return "", err
	}
	sort.Strings(qualified)
	return qualified[0], nil
}

// debianArchitectures are Debian's names of Go's architectures.
var debianArchitectures = map[string]string{
	"amd64": "amd64", "arm64": "arm64", "386": "i386", "arm": "armhf", "ppc64le": "ppc64el", "s390x": "s390x", "riscv64": "riscv64",
}

func skipped(p string) bool {
	for _, d := range skippedDirs {
		if p == d || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

// addAlternatives adds the links of every alternative whose chosen target
// is a file of the tree (/usr/sbin/iptables → /etc/alternatives/iptables →
// /usr/sbin/iptables-nft): update-alternatives makes them, so no dpkg list
// names them.
func (t *packageTree) addAlternatives() error {
	names, err := os.ReadDir(t.host(dpkgAlternatives))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, n := range names {
		lines, err := readLines(t.host(path.Join(dpkgAlternatives, n.Name())))
		if err != nil {
			return err
		}
		// The mode, the master link, then name and link of each slave up to
		// an empty line.
		if len(lines) < 2 {
			continue
		}
		links := map[string]string{n.Name(): lines[1]}
		for i := 2; i+1 < len(lines) && lines[i] != ""; i += 2 {
			links[lines[i]] = lines[i+1]
		}
		for name, link := range links {
			target, err := t.resolve(path.Join(etcAlternatives, name), true, false)
			if err != nil {
				continue // a slave the chosen alternative does not provide
			}
			if e, ok := t.entries[target]; !ok || e.src == "" {
				continue
			}
			if err := t.add(link); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("alternative %s: %w", name, err)
			}
		}
	}
	return nil
}

// add adds p: a directory, a regular file, or a symbolic link with what it
// points to (when that exists), and every link met on the way.
func (t *packageTree) add(p string) error {
	canonical, err := t.resolve(p, false, true)
	if err != nil {
		return err
	}
	if _, ok := t.entries[canonical]; ok || canonical == "/" {
		return nil
	}
	info, err := os.Lstat(t.host(canonical))
	if err != nil {
		return err
	}
	switch {
	case info.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(t.host(canonical))
		if err != nil {
			return err
		}
		t.put(canonical, entry{link: target})
		if !path.IsAbs(target) {
			target = path.Join(path.Dir(canonical), target)
		}
		if err := t.add(target); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	case info.IsDir():
		t.put(canonical, entry{dir: true, mode: tarMode(info.Mode())})
	case info.Mode().IsRegular():
		t.put(canonical, entry{src: t.host(canonical), size: info.Size(), mode: tarMode(info.Mode())})
		t.elfs = append(t.elfs, canonical)
	}
	return nil // devices, sockets and pipes are not a package's files
}

// resolve is the path p names under the root, its links followed as the
// kernel follows them after chroot — the last one only when followLast.
// With record, each link met on the way is added.
func (t *packageTree) resolve(p string, followLast, record bool) (string, error) {
	pending := strings.Split(p, "/")
	current := "/"
	links := 0
	for len(pending) > 0 {
		name := pending[0]
		pending = pending[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			current = path.Dir(current)
			continue
		}
		next := path.Join(current, name)
		info, err := os.Lstat(t.host(next))
		if err != nil {
			return "", err
		}
		if info.Mode()&fs.ModeSymlink == 0 || (len(pending) == 0 && !followLast) {
			current = next
			continue
		}
		if links++; links > maxLinks {
			return "", fmt.Errorf("%s: too many levels of symbolic links", p)
		}
		target, err := os.Readlink(t.host(next))
		if err != nil {
			return "", err
		}
		if record {
			t.put(next, entry{link: target})
		}
		if path.IsAbs(target) {
			current = "/"
		}
		pending = append(strings.Split(target, "/"), pending...)
	}
	return current, nil
}

// put records e at p (canonical), with p's parent directories.
func (t *packageTree) put(p string, e entry) {
	if _, ok := t.entries[p]; ok {
		return
	}
	for dir := path.Dir(p); dir != "/"; dir = path.Dir(dir) {
		if _, ok := t.entries[dir]; ok {
			break
		}
		mode := int64(0o755)
		if info, err := os.Lstat(t.host(dir)); err == nil && info.IsDir() {
			mode = tarMode(info.Mode())
		}
		t.entries[dir] = entry{dir: true, mode: mode}
	}
	t.entries[p] = e
}

// layerEntries are the tree's entries in path order (a directory before
// what it holds), named as a layer names them.
func (t *packageTree) layerEntries() []entry {
	paths := make([]string, 0, len(t.entries))
	for p := range t.entries {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	out := make([]entry, 0, len(paths))
	for _, p := range paths {
		e := t.entries[p]
		e.path = p[1:]
		if e.dir {
			e.path += "/"
		}
		out = append(out, e)
	}
	return out
}

// tarMode is m's permissions with the setuid, setgid and sticky bits as
// tar writes them.
func tarMode(m fs.FileMode) int64 {
	mode := int64(m.Perm())
	if m&fs.ModeSetuid != 0 {
		mode |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		mode |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		mode |= 0o1000
	}
	return mode
}

func readLines(file string) ([]string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lines []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		lines = append(lines, s.Text())
	}
	return lines, s.Err()
}
