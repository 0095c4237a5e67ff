// Package machine makes machines on this host without virtual machines:
// each is a network, mount and UTS namespace of its own, with an address
// on the host's machine bridge, a hostname of its name and private /run,
// /var/lib and /var/log (directories of the machine's own directory), so
// that a real node joined in it — containerd, the kubelet, kube-proxy,
// its CNI bridge, iptables rules and pod network namespaces — is apart
// from the host and from every other machine. Its userdata, the shell
// script a cloud machine runs at first boot, runs in it: to its end
// (Create), or detached, recorded in the machine's directory
// (StartUserdata, for a controller that must not wait for it).
//
// What the package makes is recorded under its directory, and only that
// is removed: a machine's directory holds machine.json, the namespaces
// are kept by bind mounts of their nsfs files under it (ns/), its veth's
// host side is named in the record, and the bridge in network.json.
package machine

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"time"

	"golang.org/x/sys/unix"

	"hypershift.dev/internal/atomicfile"
)

// DefaultDir is where machines live unless told otherwise.
const DefaultDir = "/var/lib/hypershift-machines"

const (
	markerFile  = ".hypershift-machines"
	lockFile    = ".lock"
	recordFile  = "machine.json"
	userdataLog = "userdata.log"
	// UserdataPath is where a machine's userdata is, inside it (cloud-init's
	// place for it).
	UserdataPath = "/var/lib/cloud/instance/user-data.txt"
)

// private directories of a machine, mounted over the host's in its mount
// namespace in this order (/var/lib last: the machine's directory may be
// under it).
var privateDirs = []struct{ source, target string }{
	{"run", "/run"},
	{"var-log", "/var/log"},
	{"var-lib", "/var/lib"},
}

var namePattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?$`)

// Host is the machines of one directory on this host.
type Host struct{ Dir string }

// Record is what a machine's directory says of it.
type Record struct {
	Name string `json:"name"`
	// Address is the machine's address on the machine network.
	Address netip.Addr `json:"address"`
	// HostLink is the host side of its veth pair, on the bridge.
	HostLink string `json:"hostLink"`
	// NetnsInode identifies its network namespace (a process runs in the
	// machine when /proc/PID/ns/net is net:[NetnsInode]).
	NetnsInode uint64    `json:"netnsInode,omitempty"`
	Created    time.Time `json:"created"`
	// Owner is who made the machine, set at creation: a controller's
	// object (a HostMachine's UID) deletes only the machines that name it
	// (DeleteOwned). Empty: made by hand (`hypershift machine create`).
	Owner string `json:"owner,omitempty"`
}

// ErrNotFound is what Get's error is when a directory holds no machine
// record (errors.Is).
var ErrNotFound = errors.New("no such machine")

// ErrExists is what Make's error is when the name is taken on the host
// (errors.Is).
var ErrExists = errors.New("machine exists")

// ErrNotOwner is what DeleteOwned's error is when the machine's record
// does not name the owner (errors.Is).
var ErrNotOwner = errors.New("machine is not the owner's")

// kindError is an error with its own message that is one of the errors
// above.
type kindError struct {
	kind error
	msg  string
}

func kindErrorf(kind error, format string, args ...any) error {
	return kindError{kind: kind, msg: fmt.Sprintf(format, args...)}
}

func (e kindError) Error() string        { return e.msg }
func (e kindError) Is(target error) bool { return target == e.kind }

// ProviderID is the machine's provider ID, as a Node and a Cluster API
// Machine carry it.
func (r Record) ProviderID() string { return "hypershift-host://" + r.Name }

// ValidateName refuses a name that is not a DNS label of at most 40
// characters: it is the machine's hostname and its Node's name.
func ValidateName(name string) error {
	if !namePattern.MatchString(name) {
		return fmt.Errorf("machine name %q: use lower-case letters, digits and '-', at most 40, starting and ending with a letter or digit", name)
	}
	return nil
}

func (h Host) machineDir(name string) string { return filepath.Join(h.Dir, name) }
func (h Host) nsDir(name string) string      { return filepath.Join(h.machineDir(name), "ns") }
func (h Host) nsFile(name, kind string) string {
	return filepath.Join(h.nsDir(name), kind)
}
func (h Host) rootDir(name string) string { return filepath.Join(h.machineDir(name), "root") }

// ensure makes Dir the machines' directory, or checks it is one.
func (h Host) ensure() error {
	if err := os.MkdirAll(h.Dir, 0o700); err != nil {
		return err
	}
	marker := filepath.Join(h.Dir, markerFile)
	if _, err := os.Stat(marker); err == nil {
		return nil
	}
	entries, err := os.ReadDir(h.Dir)
	if err != nil {
		return err
	}
	if len(entries) > 0 {
		return fmt.Errorf("%s is not empty and is not a machines directory (no %s): choose a new or empty directory", h.Dir, markerFile)
	}
	return atomicfile.Write(marker, []byte("This directory holds hypershift machines: `hypershift machine delete` removes them.\n"), 0o600)
}

func (h Host) isMachinesDir() bool {
	_, err := os.Stat(filepath.Join(h.Dir, markerFile))
	return err == nil
}

// lock holds the directory's lock until the returned function is called:
// addresses and the kernel-parameter record are decided under it.
func (h Host) lock() (func(), error) { return flock(filepath.Join(h.Dir, lockFile)) }

// flock takes an exclusive lock on the file at path (made when missing)
// until the returned function is called.
func flock(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		_ = f.Close()
		return nil, err
	}
	return func() { _ = f.Close() }, nil
}

// List reads the machines' records, by name.
func (h Host) List() ([]Record, error) {
	if !h.isMachinesDir() {
		return nil, nil
	}
	entries, err := os.ReadDir(h.Dir)
	if err != nil {
		return nil, err
	}
	var out []Record
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		r, err := h.Get(e.Name())
		if err != nil {
			continue // not a machine's directory
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Get reads one machine's record; it must name the directory it is in.
func (h Host) Get(name string) (Record, error) {
	var r Record
	data, err := os.ReadFile(filepath.Join(h.machineDir(name), recordFile))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return r, kindErrorf(ErrNotFound, "no machine %s in %s", name, h.Dir)
		}
		return r, err
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return r, fmt.Errorf("machine %s: %s: %w", name, recordFile, err)
	}
	if r.Name != name {
		return r, fmt.Errorf("machine %s: %s names %q", name, recordFile, r.Name)
	}
	return r, nil
}

func (h Host) recordPath(name string) string {
	return filepath.Join(h.machineDir(name), recordFile)
}

func (h Host) save(r Record) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(h.recordPath(r.Name), data, 0o600)
}

// UserdataLog is the output of the machine's userdata.
func (h Host) UserdataLog(name string) string {
	return filepath.Join(h.machineDir(name), userdataLog)
}
