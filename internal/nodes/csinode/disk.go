package csinode

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
// (docs/volumes.md). A disk that holds anything but ext4 (another
// filesystem, a partition table, any signature blkid knows) is never
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
	if !handlePattern.MatchString(id) {
		return "", "", status.Errorf(codes.InvalidArgument, "volume %q is not one of %s", id, Driver)
	}
	staging, err = under(p.PluginsDir, stagingPath, "staging path", "the kubelet's plugins directory")
	if err != nil {
		return "", "", err
	}
	device, err = p.Disks.Find(ctx, DiskSerial(id))
	if err != nil {
		return "", "", status.Errorf(codes.Internal, "volume %s: %v", id, err)
	}
	if device == "" {
		return "", "", status.Errorf(codes.FailedPrecondition, "volume %s is not attached to node %s: no disk of serial %s", id, p.NodeID, DiskSerial(id))
	}
	return device, staging, nil
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
	device, staging, err := p.staged(ctx, req.GetVolumeId(), req.GetStagingTargetPath())
	if err != nil {
		return nil, err
	}
	if source, err := mountSource(staging); err != nil {
		return nil, status.Errorf(codes.Internal, "staging path %s: %v", staging, err)
	} else if source != "" {
		if source != device {
			return nil, status.Errorf(codes.FailedPrecondition, "staging path %s holds %s, not the volume's disk %s", staging, source, device)
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
	if !handlePattern.MatchString(req.GetVolumeId()) {
		return nil, status.Errorf(codes.InvalidArgument, "volume %q is not one of %s", req.GetVolumeId(), Driver)
	}
	staging, err := under(p.PluginsDir, req.GetStagingTargetPath(), "staging path", "the kubelet's plugins directory")
	if err != nil {
		return nil, err
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
	device, staging, err := p.staged(ctx, req.GetVolumeId(), req.GetStagingTargetPath())
	if err != nil {
		return nil, err
	}
	if source, err := mountSource(staging); err != nil || source != device {
		return nil, status.Errorf(codes.FailedPrecondition, "volume %s is not staged at %s (%v)", req.GetVolumeId(), staging, err)
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

// formatIfBlank makes an ext4 filesystem on device if blkid finds nothing
// on it; ext4 is left as it is; anything else is refused.
func formatIfBlank(ctx context.Context, device string) error {
	out, err := exec.CommandContext(ctx, "blkid", "--probe", "--output", "export", device).Output() //nolint:gosec // a host program; device is the disk found by its serial
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit) && exit.ExitCode() == 2: // nothing found: blank
	case err != nil:
		return status.Errorf(codes.Internal, "blkid %s: %v", device, err)
	default:
		if !bytes.Contains(out, []byte("\nTYPE=ext4\n")) && !bytes.HasPrefix(out, []byte("TYPE=ext4\n")) {
			return status.Errorf(codes.FailedPrecondition, "disk %s holds something other than ext4, left as it is: %s", device, bytes.Join(bytes.Fields(out), []byte(" ")))
		}
		return nil
	}
	// No -F: should anything appear on the disk meanwhile, mkfs asks,
	// reads no answer and stops.
	cmd := exec.CommandContext(ctx, "mkfs.ext4", "-q", device) //nolint:gosec // a host program; device is a blank disk found by its serial
	if out, err := cmd.CombinedOutput(); err != nil {
		return status.Errorf(codes.Internal, "mkfs.ext4 %s: %v: %s", device, err, bytes.TrimSpace(out))
	}
	return nil
}

// mountSource is what is mounted at path ("" for nothing or no path).
func mountSource(path string) (string, error) {
	mounts, err := mountinfo.GetMounts(mountinfo.SingleEntryFilter(path))
	if err != nil {
		return "", err
	}
	if len(mounts) == 0 {
		return "", nil
	}
	return mounts[len(mounts)-1].Source, nil
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
