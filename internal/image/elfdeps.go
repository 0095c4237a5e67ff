package image

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
)

// multiarchTriplets are Debian's library directories by machine
// (/usr/lib/<triplet>).
var multiarchTriplets = map[elf.Machine]string{
	elf.EM_X86_64:  "x86_64-linux-gnu",
	elf.EM_AARCH64: "aarch64-linux-gnu",
	elf.EM_386:     "i386-linux-gnu",
	elf.EM_ARM:     "arm-linux-gnueabihf",
	elf.EM_PPC64:   "powerpc64le-linux-gnu",
	elf.EM_S390:    "s390x-linux-gnu",
	elf.EM_RISCV:   "riscv64-linux-gnu",
}

// libraryDirs are where the dynamic loader looks for a library of that
// machine and class when no cache and no run path say otherwise: Debian's
// multiarch directories, then the traditional ones.
func libraryDirs(machine elf.Machine, class elf.Class) []string {
	var dirs []string
	if triplet, ok := multiarchTriplets[machine]; ok {
		dirs = append(dirs, "/lib/"+triplet, "/usr/lib/"+triplet)
	}
	if class == elf.ELFCLASS64 {
		dirs = append(dirs, "/lib64", "/usr/lib64")
	}
	return append(dirs, "/lib", "/usr/lib")
}

// addLibraries adds, until none is missing, the interpreter and the
// DT_NEEDED libraries of every ELF file of the tree, and the xtables
// extensions beside libxtables (iptables loads them with dlopen, so no
// DT_NEEDED names them).
func (t *packageTree) addLibraries() error {
	for len(t.elfs) > 0 {
		for len(t.elfs) > 0 {
			p := t.elfs[0]
			t.elfs = t.elfs[1:]
			if err := t.addNeeded(p); err != nil {
				return err
			}
		}
		if err := t.addXtablesExtensions(); err != nil {
			return err
		}
	}
	return nil
}

// addNeeded adds what the ELF file p (a file of the tree) needs to load.
func (t *packageTree) addNeeded(p string) error {
	if ok, err := isELF(t.host(p)); err != nil || !ok {
		return err
	}
	f, err := elf.Open(t.host(p))
	if err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	defer f.Close()
	for _, prog := range f.Progs {
		if prog.Type != elf.PT_INTERP {
			continue
		}
		raw, err := io.ReadAll(prog.Open())
		if err != nil {
			return fmt.Errorf("interpreter of %s: %w", p, err)
		}
		interp := string(bytes.TrimRight(raw, "\x00"))
		if err := t.add(interp); err != nil {
			return fmt.Errorf("%s: its interpreter %s: %w", p, interp, err)
		}
	}
	needed, err := f.ImportedLibraries()
	if err != nil {
		return fmt.Errorf("libraries of %s: %w", p, err)
	}
	for _, lib := range needed {
		if err := t.addLibrary(lib, f.Machine, f.Class); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	return nil
}

// addLibrary adds lib from the first loader directory that has it as a
// regular file (through links).
func (t *packageTree) addLibrary(lib string, machine elf.Machine, class elf.Class) error {
	dirs := libraryDirs(machine, class)
	for _, dir := range dirs {
		candidate := path.Join(dir, lib)
		resolved, err := t.resolve(candidate, true, false)
		if err != nil {
			continue
		}
		if info, err := os.Stat(t.host(resolved)); err != nil || !info.Mode().IsRegular() {
			continue
		}
		return t.add(candidate)
	}
	return fmt.Errorf("needs %s, which is in none of %s under %s: install the package that holds it", lib, strings.Join(dirs, ", "), t.root)
}

// addXtablesExtensions adds the files of the xtables directory beside
// each libxtables of the tree (add skips what the tree has already).
func (t *packageTree) addXtablesExtensions() error {
	var dirs []string
	for p, e := range t.entries {
		if e.src != "" && strings.HasPrefix(path.Base(p), "libxtables.so") {
			dirs = append(dirs, path.Join(path.Dir(p), "xtables"))
		}
	}
	sort.Strings(dirs)
	for _, dir := range dirs {
		if err := t.addDirFiles(dir); err != nil {
			return err
		}
	}
	return nil
}

// addDirFiles adds what dir holds, when it exists.
func (t *packageTree) addDirFiles(dir string) error {
	files, err := os.ReadDir(t.host(dir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, f := range files {
		if err := t.add(path.Join(dir, f.Name())); err != nil {
			return err
		}
	}
	return nil
}

// isELF says whether file starts as an ELF file does.
func isELF(file string) (bool, error) {
	f, err := os.Open(file)
	if err != nil {
		return false, err
	}
	defer f.Close()
	magic := make([]byte, len(elf.ELFMAG))
	_, err = io.ReadFull(f, magic)
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return false, nil // shorter than the magic
	}
	if err != nil {
		return false, err
	}
	return string(magic) == elf.ELFMAG, nil
}
