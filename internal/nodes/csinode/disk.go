package csinode

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Disk mode: on a machine that is a virtual machine (KubeVirt), a volume
// is hot-plugged as a disk whose serial is DiskSerial of its handle, and
// the plugin stages it — finds the disk, makes an ext4 filesystem on it
// when it is blank, mounts it at the kubelet's staging path — before it
// publishes the staging path to pods, as KubeVirt CSI does
// (docs/volumes.md). A disk is formatted only when blkid finds nothing on
// it and its first and last MiB read back as zeros: a disk that holds
// anything else (another filesystem, a partition table, any signature
// blkid knows, data of no known kind, or that cannot be read) is never
// formatted.

// DiskSerial is the serial a volume's disk is hot-plugged with: the guest
// claim's UID of its handle vol-<UID> (36 characters, within the 36 a
// SCSI disk's serial may have).
func DiskSerial(handle string) string { return strings.TrimPrefix(handle, "vol-") }

// Disks finds the disk a volume was hot-plugged as.
type Disks interface {
	// Find returns the device of the disk whose serial is serial, or ""
	// while no disk has it.
	Find(ctx context.Context, serial string) (string, error)
}

// Lsblk finds disks by the serial lsblk reports.
type Lsblk struct {
	// Path is lsblk; default: lsblk on PATH.
	Path string
}

// Find implements Disks.
func (l Lsblk) Find(ctx context.Context, serial string) (string, error) {
	path := l.Path
	if path == "" {
		path = "lsblk"
	}
	out, err := exec.CommandContext(ctx, path, "--json", "--nodeps", "--output", "PATH,SERIAL,TYPE").Output() //nolint:gosec // a host program, our arguments
	if err != nil {
		return "", fmt.Errorf("lsblk: %w", err)
	}
	return diskBySerial(out, serial)
}

// diskBySerial reads lsblk's JSON: the one disk of serial, "" for none;
// two disks of one serial are an error (the volume would be ambiguous).
func diskBySerial(lsblk []byte, serial string) (string, error) {
	var list struct {
		Devices []struct {
			Path   string  `json:"path"`
			Serial *string `json:"serial"`
			Type   string  `json:"type"`
		} `json:"blockdevices"`
	}
	if err := json.Unmarshal(lsblk, &list); err != nil {
		return "", fmt.Errorf("lsblk's output: %w", err)
	}
	found := ""
	for _, d := range list.Devices {
		if d.Type != "disk" || d.Serial == nil || strings.TrimSpace(*d.Serial) != serial {
			continue
		}
		if found != "" {
			return "", fmt.Errorf("disks %s and %s both have serial %s", found, d.Path, serial)
		}
		found = d.Path
	}
	return found, nil
}

// staged is the device of volume id, and the staging path, which must lie
// under the kubelet's plugins directory.
func (p *Plugin) staged(ctx context.Context, id, stagingPath string) (device, staging string, err error) {
	if err := checkHandle(id); err != nil {
		return "", "", err
	}
	staging, err = p.staging(stagingPath)
	if err != nil {
		return "", "", err
	}
	device, err = p.Disks.Find(ctx, DiskSerial(id))
	if err != nil {
		return "", "", status.Errorf(codes.Internal, "volume %s: %v", id, err)
	}
	if device == "" {
		return "", "", status.Errorf(codes.NotFound, "volume %s is not attached to node %s: no disk of serial %s", id, p.NodeID, DiskSerial(id))
	}
	return device, staging, nil
}

// stagedLocked is staged, with the volume's operations held (lock) until
// unlock is called.
func (p *Plugin) stagedLocked(ctx context.Context, id, stagingPath string) (device, staging string, unlock func(), err error) {
	unlock, err = p.lock(id)
	if err != nil {
		return "", "", nil, err
	}
	device, staging, err = p.staged(ctx, id, stagingPath)
	if err != nil {
		unlock()
		return "", "", nil, err
	}
	return device, staging, unlock, nil
}

// NodeStageVolume implements csi.NodeServer in disk mode: the volume's
// disk, formatted ext4 if it is blank, is mounted at the staging path.
// Staging again what is staged is done.
func (p *Plugin) NodeStageVolume(ctx context.Context, req *csi.NodeStageVolumeRequest) (*csi.NodeStageVolumeResponse, error) {
	if p.Disks == nil {
		return nil, status.Error(codes.Unimplemented, "this node publishes attached directories: no staging")
	}
	mount := req.GetVolumeCapability().GetMount()
	if mount == nil {
		return nil, status.Error(codes.InvalidArgument, "only filesystem volumes (access type mount) are served")
	}
	if fs := mount.GetFsType(); fs != "" && fs != "ext4" {
		return nil, status.Errorf(codes.InvalidArgument, "filesystem %q: only ext4 is made", fs)
	}
	if flags := mount.GetMountFlags(); len(flags) > 0 {
		return nil, status.Errorf(codes.InvalidArgument, "mount flags %q: none are taken (the StorageClass's mountOptions)", flags)
	}
	device, staging, unlock, err := p.stagedLocked(ctx, req.GetVolumeId(), req.GetStagingTargetPath())
	if err != nil {
		return nil, err
	}
	defer unlock()
	if held, err := mountedDevice(staging); err != nil {
		return nil, status.Errorf(codes.Internal, "staging path %s: %v", staging, err)
	} else if held != nil {
		same, err := held.is(device)
		if err != nil {
			return nil, status.Errorf(codes.Internal, "disk %s: %v", device, err)
		}
		if !same {
			return nil, status.Errorf(codes.AlreadyExists, "staging path %s holds %s, not the volume's disk %s", staging, held.source, device)
		}
		return &csi.NodeStageVolumeResponse{}, nil
	}
	if err := formatIfBlank(ctx, device); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(staging, 0o750); err != nil {
		return nil, status.Errorf(codes.Internal, "staging path %s: %v", staging, err)
	}
	if err := unix.Mount(device, staging, "ext4", unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
		return nil, status.Errorf(codes.Internal, "mount %s at %s: %v", device, staging, err)
	}
	p.Log.Info("staged", "volume", req.GetVolumeId(), "device", device, "staging", staging)
	return &csi.NodeStageVolumeResponse{}, nil
}

// NodeUnstageVolume implements csi.NodeServer in disk mode: the staging
// path is unmounted and removed. A staging path that is gone is done.
func (p *Plugin) NodeUnstageVolume(_ context.Context, req *csi.NodeUnstageVolumeRequest) (*csi.NodeUnstageVolumeResponse, error) {
	if p.Disks == nil {
		return nil, status.Error(codes.Unimplemented, "this node publishes attached directories: no staging")
	}
	if err := checkHandle(req.GetVolumeId()); err != nil {
		return nil, err
	}
	staging, err := p.staging(req.GetStagingTargetPath())
	if err != nil {
		return nil, err
	}
	unlock, err := p.lock(req.GetVolumeId())
	if err != nil {
		return nil, err
	}
	defer unlock()
	// Only what staging mounts is unmounted: an ext4 filesystem of a
	// block device (the disk itself may be gone by now).
	if held, err := mountedDevice(staging); err != nil {
		return nil, status.Errorf(codes.Internal, "staging path %s: %v", staging, err)
	} else if held != nil && held.fsType != "ext4" {
		return nil, status.Errorf(codes.FailedPrecondition, "staging path %s holds %s (%s), not a volume's disk: left mounted", staging, held.source, held.fsType)
	}
	if err := unmountAndRemove(staging); err != nil {
		return nil, err
	}
	p.Log.Info("unstaged", "volume", req.GetVolumeId(), "staging", staging)
	return &csi.NodeUnstageVolumeResponse{}, nil
}

// NodeExpandVolume implements csi.NodeServer in disk mode: the ext4
// filesystem of the volume's disk grows to the disk's size, mounted.
func (p *Plugin) NodeExpandVolume(ctx context.Context, req *csi.NodeExpandVolumeRequest) (*csi.NodeExpandVolumeResponse, error) {
	if p.Disks == nil {
		return nil, status.Error(codes.Unimplemented, "this node publishes attached directories: the attachment grows them")
	}
	if req.GetVolumePath() == "" {
		return nil, status.Error(codes.InvalidArgument, "no volume path")
	}
	device, staging, unlock, err := p.stagedLocked(ctx, req.GetVolumeId(), req.GetStagingTargetPath())
	if err != nil {
		return nil, err
	}
	defer unlock()
	if held, err := mountedDevice(staging); err != nil || held == nil {
		return nil, status.Errorf(codes.FailedPrecondition, "volume %s is not staged at %s (%v)", req.GetVolumeId(), staging, err)
	} else if same, err := held.is(device); err != nil || !same {
		return nil, status.Errorf(codes.FailedPrecondition, "staging path %s holds %s, not the volume's disk %s (%v)", staging, held.source, device, err)
	}
	if out, err := exec.CommandContext(ctx, "resize2fs", device).CombinedOutput(); err != nil { //nolint:gosec // a host program; device is the disk found by its serial
		return nil, status.Errorf(codes.Internal, "resize2fs %s: %v: %s", device, err, bytes.TrimSpace(out))
	}
	var size int64
	if fd, err := os.Open(device); err == nil {
		n, _ := unix.IoctlGetInt(int(fd.Fd()), unix.BLKGETSIZE64)
		size = int64(n)
		_ = fd.Close()
	}
	p.Log.Info("expanded", "volume", req.GetVolumeId(), "device", device, "bytes", size)
	return &csi.NodeExpandVolumeResponse{CapacityBytes: size}, nil
}

// formatIfBlank makes an ext4 filesystem on device if it is blank (blank);
// ext4 is left as it is; anything else is refused.
func formatIfBlank(ctx context.Context, device string) error {
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "blkid", "--probe", "--output", "export", device) //nolint:gosec // a host program; device is the disk found by its serial
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit) && exit.ExitCode() == 2 && stderr.Len() == 0:
		// blkid found nothing (exit 2 is also how it fails to read).
	case err != nil:
		return status.Errorf(codes.Internal, "blkid %s: %v: %s", device, err, bytes.TrimSpace(stderr.Bytes()))
	default:
		if !bytes.Contains(append([]byte("\n"), out...), []byte("\nTYPE=ext4\n")) {
			return status.Errorf(codes.FailedPrecondition, "disk %s holds something other than ext4, left as it is: %s", device, bytes.Join(bytes.Fields(out), []byte(" ")))
		}
		return nil
	}
	if err := blank(device); err != nil {
		return status.Errorf(codes.FailedPrecondition, "disk %s, left as it is: %v", device, err)
	}
	// mkfs.ext4 checks for what a disk holds only when run from a
	// terminal: what guards the disk is the check above.
	if out, err := exec.CommandContext(ctx, "mkfs.ext4", "-q", device).CombinedOutput(); err != nil { //nolint:gosec // a host program; device is a blank disk found by its serial
		return status.Errorf(codes.Internal, "mkfs.ext4 %s: %v: %s", device, err, bytes.TrimSpace(out))
	}
	return nil
}

// blank checks that device's first and last MiB read back as zeros, as a
// new disk's do: a disk with data blkid knows no kind of, or that cannot
// be read, is not blank.
func blank(device string) error {
	f, err := os.Open(device)
	if err != nil {
		return err
	}
	defer f.Close()
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return err
	}
	const span = 1 << 20
	buf := make([]byte, min(span, size))
	for _, at := range []int64{0, max(0, size-span)} {
		if _, err := f.ReadAt(buf, at); err != nil {
			return fmt.Errorf("read at %d: %w", at, err)
		}
		if !bytes.Equal(buf, make([]byte, len(buf))) {
			return fmt.Errorf("data of no kind blkid knows at %d", at)
		}
	}
	return nil
}

// mount is what is mounted at a path.
type mount struct {
	source, fsType string
	major, minor   int
}

// mountedDevice is what is mounted at path, nil for nothing (or no path).
func mountedDevice(path string) (*mount, error) {
	mounts, err := mountinfo.GetMounts(mountinfo.SingleEntryFilter(path))
	if err != nil || len(mounts) == 0 {
		return nil, err
	}
	m := mounts[len(mounts)-1]
	return &mount{source: m.Source, fsType: m.FSType, major: m.Major, minor: m.Minor}, nil
}

// is tells whether the mount is of device, by device number: the name a
// mount records is the one the disk had when it was mounted.
func (m *mount) is(device string) (bool, error) {
	var st unix.Stat_t
	if err := unix.Stat(device, &st); err != nil {
		return false, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFBLK {
		return false, fmt.Errorf("%s is not a block device", device)
	}
	return int(unix.Major(st.Rdev)) == m.major && int(unix.Minor(st.Rdev)) == m.minor, nil
}

// lock holds volume id's operations one at a time; a second one while one
// runs is refused with Aborted (the kubelet retries).
func (p *Plugin) lock(id string) (func(), error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.busy == nil {
		p.busy = map[string]bool{}
	}
	if p.busy[id] {
		return nil, status.Errorf(codes.Aborted, "an operation on volume %s is in progress", id)
	}
	p.busy[id] = true
	return func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		delete(p.busy, id)
	}, nil
}

// unmountAndRemove unmounts path if it is a mount point and removes it.
func unmountAndRemove(path string) error {
	mounted, err := mountinfo.Mounted(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return status.Errorf(codes.Internal, "%s: %v", path, err)
	}
	if mounted {
		if err := unix.Unmount(path, 0); err != nil {
			return status.Errorf(codes.Internal, "unmount %s: %v", path, err)
		}
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return status.Errorf(codes.Internal, "remove %s: %v", path, err)
	}
	return nil
}

// under is path, which must be absolute and lie under root once cleaned;
// no part of it under root that exists may be a symlink (a mount there
// would follow it out). what and where name them in errors.
func under(root, path, what, where string) (string, error) {
	if path == "" || !filepath.IsAbs(path) {
		return "", status.Errorf(codes.InvalidArgument, "%s %q is not absolute", what, path)
	}
	clean := filepath.Clean(path)
	rel, err := filepath.Rel(root, clean)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return "", status.Errorf(codes.InvalidArgument, "%s %s is not under %s %s", what, path, where, root)
	}
	at := root
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		at = filepath.Join(at, part)
		fi, err := os.Lstat(at)
		if errors.Is(err, os.ErrNotExist) {
			break
		}
		if err != nil {
			return "", status.Errorf(codes.Internal, "%s %s: %v", what, path, err)
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			return "", status.Errorf(codes.InvalidArgument, "%s %s passes through the symlink %s", what, path, at)
		}
	}
	return clean, nil
}
