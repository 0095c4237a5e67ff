package csinode

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"hypershift.dev/internal/testenv"
)

const handle = "vol-0a1b2c3d-1111-2222-3333-444455556666"

// TestNodePlugin serves the plugin on its sockets and calls it as the
// kubelet does, over gRPC: registration, identity, then publishing a
// volume the test attached (bind-mounted into the attached directory, as
// the attachment does) read-write and read-only, and unpublishing it.
// Requests the plugin must refuse — a handle not of the provisioner's
// form, one not attached, a target outside the pods directory or through
// a symlink, a block volume — change nothing.
func TestNodePlugin(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipping the node plugin: publishing is a bind mount, which needs root (run the tests as root)")
	}
	base := testenv.ShortTempDir(t)
	attached, pods, reg, data := filepath.Join(base, "attached"), filepath.Join(base, "pods"), filepath.Join(base, "reg"), filepath.Join(base, "data")
	for _, d := range []string{attached, pods, reg, data, filepath.Join(attached, handle)} {
		must(t, os.MkdirAll(d, 0o750))
	}
	// A symlink a target path must not pass through.
	must(t, os.Symlink(base, filepath.Join(pods, "escape")))
	p := &Plugin{NodeID: "node-a", AttachedDir: attached, PodsDir: pods, Log: testenv.Logger()}
	endpoint := filepath.Join(base, "csi.sock")
	ctx := serve(t, p, endpoint, reg)
	regConn := dial(t, RegistrationSocket(reg))
	info, err := registerapi.NewRegistrationClient(regConn).GetInfo(ctx, &registerapi.InfoRequest{})
	must(t, err)
	if info.Type != registerapi.CSIPlugin || info.Name != Driver || info.Endpoint != endpoint || len(info.SupportedVersions) == 0 {
		t.Errorf("registration info: %+v", info)
	}
	conn := dial(t, endpoint)
	id, err := csi.NewIdentityClient(conn).GetPluginInfo(ctx, &csi.GetPluginInfoRequest{})
	must(t, err)
	node := csi.NewNodeClient(conn)
	ni, err := node.NodeGetInfo(ctx, &csi.NodeGetInfoRequest{})
	must(t, err)
	if id.Name != Driver || ni.NodeId != "node-a" {
		t.Errorf("plugin %q on node %q", id.Name, ni.NodeId)
	}

	target := filepath.Join(pods, "uid-1", "volumes", "kubernetes.io~csi", "pv", "mount")
	readOnly := filepath.Join(pods, "uid-2", "volumes", "kubernetes.io~csi", "pv", "mount")
	mountCap := &csi.VolumeCapability{AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}}}
	publish := func(volume, target string, ro bool, c *csi.VolumeCapability) error {
		_, err := node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: volume, TargetPath: target, Readonly: ro, VolumeCapability: c})
		return err
	}
	wantCode(t, "a volume not attached", publish(handle, target, false, mountCap), codes.FailedPrecondition)

	// Attach: the volume's data bind-mounted into the attached directory.
	must(t, unix.Mount(data, filepath.Join(attached, handle), "", unix.MS_BIND, ""))
	t.Cleanup(func() { unmountUnder(t, base) })
	blockCap := &csi.VolumeCapability{AccessType: &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}}}
	for what, err := range map[string]error{
		"a handle not of the provisioner's form": publish("../../etc", target, false, mountCap),
		"a target outside the pods directory":    publish(handle, filepath.Join(pods, "..", "outside"), false, mountCap),
		"a target that is the pods directory":    publish(handle, pods, false, mountCap),
		"a relative target":                      publish(handle, "uid-1/mount", false, mountCap),
		"a target through a symlink":             publish(handle, filepath.Join(pods, "escape", "mount"), false, mountCap),
		"a block volume":                         publish(handle, target, false, blockCap),
	} {
		wantCode(t, what, err, codes.InvalidArgument)
	}
	if _, err := os.Lstat(filepath.Join(base, "mount")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused request made its target: %v", err)
	}

	must(t, publish(handle, target, false, mountCap))
	must(t, publish(handle, target, false, mountCap)) // again: done
	must(t, os.WriteFile(filepath.Join(target, "written"), []byte("by the pod"), 0o600))
	if got, err := os.ReadFile(filepath.Join(data, "written")); err != nil || string(got) != "by the pod" {
		t.Errorf("what the pod wrote, in the volume: %q, %v", got, err)
	}
	must(t, publish(handle, readOnly, true, mountCap))
	if err := os.WriteFile(filepath.Join(readOnly, "nope"), nil, 0o600); !errors.Is(err, unix.EROFS) {
		t.Errorf("write to a read-only publish: %v, want EROFS", err)
	}

	for _, tp := range []string{target, readOnly} {
		_, err := node.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: handle, TargetPath: tp})
		must(t, err)
		if _, err := os.Lstat(tp); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("target %s after unpublish: %v", tp, err)
		}
		_, err = node.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: handle, TargetPath: tp})
		must(t, err) // again: done
	}
	if mounted, err := mountinfo.Mounted(filepath.Join(attached, handle)); err != nil || !mounted {
		t.Errorf("unpublish touched the attached volume: mounted %v, %v", mounted, err)
	}
	if got, err := os.ReadFile(filepath.Join(data, "written")); err != nil || string(got) != "by the pod" {
		t.Errorf("the volume's data after unpublish: %q, %v", got, err)
	}
}

// serve runs Serve until the test ends, then checks that it returned
// without error and took its registration socket away. The context is
// the one Serve runs under.
func serve(t *testing.T, p *Plugin, endpoint, reg string) context.Context {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, p, endpoint, reg) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		if _, err := os.Lstat(RegistrationSocket(reg)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("registration socket left after Serve returned: %v", err)
		}
	})
	return ctx
}

// Serve refuses a path that holds something other than a socket, and
// leaves it.
func TestServeLeavesWhatIsNotASocket(t *testing.T) {
	dir := testenv.ShortTempDir(t)
	reg := filepath.Join(dir, "reg")
	must(t, os.MkdirAll(reg, 0o750))
	must(t, os.WriteFile(RegistrationSocket(reg), []byte("a user's file"), 0o600))
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	err := Serve(ctx, &Plugin{Log: testenv.Logger()}, filepath.Join(dir, "csi.sock"), reg)
	if err == nil {
		t.Fatal("Serve over a regular file: no error")
	}
	if got, _ := os.ReadFile(RegistrationSocket(reg)); string(got) != "a user's file" {
		t.Errorf("the file became %q", got)
	}
}

// unmountUnder unmounts whatever is mounted at or below dir, deepest
// first: what the test mounted, and what a plugin that failed a check
// would have.
func unmountUnder(t *testing.T, dir string) {
	t.Helper()
	mounts, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dir))
	if err != nil {
		t.Error(err)
		return
	}
	slices.SortFunc(mounts, func(a, b *mountinfo.Info) int { return len(b.Mountpoint) - len(a.Mountpoint) })
	for _, m := range mounts {
		if err := unix.Unmount(m.Mountpoint, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", m.Mountpoint, err)
		}
	}
}

func dial(t *testing.T, socket string) *grpc.ClientConn {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(socket); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	must(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

func wantCode(t *testing.T, what string, err error, want codes.Code) {
	t.Helper()
	if status.Code(err) != want {
		t.Errorf("%s: %v, want %s", what, err, want)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// mapDisks finds the test's loop devices by the serial the test gave them
// (a loop device has no serial of its own).
type mapDisks map[string]string

func (m mapDisks) Find(_ context.Context, serial string) (string, error) { return m[serial], nil }

// TestNodePluginDisks is disk mode, as the kubelet calls it, on loop
// devices standing for hot-plugged disks: a blank disk is formatted ext4
// and staged, published to a pod, unstaged and staged again with what the
// pod wrote kept; it grows with the disk; a disk holding something else is
// refused and left as it was; a volume with no disk, a staging path
// outside the kubelet's plugins directory and another filesystem are
// refused.
func TestNodePluginDisks(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipping disk mode: loop devices and mounts need root (run the tests as root)")
	}
	base := testenv.ShortTempDir(t)
	pods, plugins, reg := filepath.Join(base, "pods"), filepath.Join(base, "plugins"), filepath.Join(base, "reg")
	for _, d := range []string{pods, plugins, reg} {
		must(t, os.MkdirAll(d, 0o750))
	}
	disk := loopDevice(t, filepath.Join(base, "disk.img"), 32<<20)
	swap := loopDevice(t, filepath.Join(base, "swap.img"), 8<<20)
	if out, err := exec.Command("mkswap", swap).CombinedOutput(); err != nil {
		t.Fatalf("mkswap: %v: %s", err, out)
	}
	data := filepath.Join(base, "data.img")
	dataDisk := loopDevice(t, data, 8<<20)
	const other = "vol-0a1b2c3d-1111-2222-3333-777777777777"
	const third = "vol-0a1b2c3d-1111-2222-3333-888888888888"
	p := &Plugin{
		NodeID: "vm-a", PodsDir: pods, PluginsDir: plugins, Log: testenv.Logger(),
		Disks: mapDisks{DiskSerial(handle): disk, DiskSerial(other): swap, DiskSerial(third): dataDisk},
	}
	endpoint := filepath.Join(base, "csi.sock")
	ctx := serve(t, p, endpoint, reg)
	node := csi.NewNodeClient(dial(t, endpoint))
	t.Cleanup(func() { unmountUnder(t, base) })

	caps, err := node.NodeGetCapabilities(ctx, &csi.NodeGetCapabilitiesRequest{})
	must(t, err)
	var got []csi.NodeServiceCapability_RPC_Type
	for _, c := range caps.GetCapabilities() {
		got = append(got, c.GetRpc().GetType())
	}
	if !slices.Contains(got, csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME) || !slices.Contains(got, csi.NodeServiceCapability_RPC_EXPAND_VOLUME) {
		t.Errorf("capabilities %v, want staging and expansion", got)
	}

	mountCap := func(fs string) *csi.VolumeCapability {
		return &csi.VolumeCapability{AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{FsType: fs}}}
	}
	staging := filepath.Join(plugins, "kubernetes.io", "csi", Driver, "abc", "globalmount")
	stage := func(volume, staging, fs string) error {
		_, err := node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: volume, StagingTargetPath: staging, VolumeCapability: mountCap(fs)})
		return err
	}
	unstage := func(volume, staging string) {
		t.Helper()
		_, err := node.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: volume, StagingTargetPath: staging})
		must(t, err)
	}
	wantCode(t, "a volume with no disk", stage("vol-0a1b2c3d-1111-2222-3333-000000000000", staging, ""), codes.NotFound)
	wantCode(t, "a staging path outside the plugins directory", stage(handle, filepath.Join(pods, "x"), ""), codes.InvalidArgument)
	wantCode(t, "another filesystem", stage(handle, staging, "xfs"), codes.InvalidArgument)
	wantCode(t, "a disk holding swap", stage(other, filepath.Join(plugins, "other"), ""), codes.FailedPrecondition)
	// Data of no kind blkid knows, at the disk's end: not blank either.
	f, err := os.OpenFile(data, os.O_WRONLY, 0)
	must(t, err)
	_, err = f.WriteAt([]byte("a user's bytes"), 8<<20-100)
	must(t, err)
	must(t, f.Close())
	err = stage(third, filepath.Join(plugins, "third"), "")
	wantCode(t, "a disk holding data of no known kind", err, codes.FailedPrecondition)
	if !strings.Contains(fmt.Sprint(err), "data of no kind blkid knows") {
		t.Errorf("the refusal of the data disk says %v", err)
	}
	if got := readAt(t, data, 8<<20-100, 14); got != "a user's bytes" {
		t.Errorf("the data disk after the refusal: %q", got)
	}
	flagged := &csi.VolumeCapability{AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{MountFlags: []string{"noatime"}}}}
	_, err = node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: handle, StagingTargetPath: staging, VolumeCapability: flagged})
	wantCode(t, "mount flags", err, codes.InvalidArgument)
	if out, _ := exec.Command("blkid", "-p", "-o", "value", "-s", "TYPE", swap).Output(); string(out) != "swap\n" {
		t.Errorf("the swap disk after the refusal: %q, want it left as swap", out)
	}
	if fs, _ := exec.Command("blkid", "-p", "-o", "value", "-s", "TYPE", disk).Output(); len(fs) != 0 {
		t.Fatalf("a refused request formatted the disk: %q", fs)
	}

	must(t, stage(handle, staging, "ext4"))
	must(t, stage(handle, staging, "")) // again: done
	if fs, _ := exec.Command("blkid", "-p", "-o", "value", "-s", "TYPE", disk).Output(); string(fs) != "ext4\n" {
		t.Errorf("the staged disk holds %q, want ext4", fs)
	}
	target := filepath.Join(pods, "uid-1", "volumes", "kubernetes.io~csi", "pv", "mount")
	publish := func(staging string) error {
		_, err := node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: handle, StagingTargetPath: staging, TargetPath: target, VolumeCapability: mountCap("")})
		return err
	}
	wantCode(t, "publishing from a path that is not staged", publish(filepath.Join(plugins, "not-staged")), codes.FailedPrecondition)
	must(t, publish(staging))
	must(t, os.WriteFile(filepath.Join(target, "written"), []byte("by the pod"), 0o600))
	_, err = node.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: handle, TargetPath: target})
	must(t, err)
	unstage(handle, staging)
	if _, err := os.Lstat(staging); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("staging path after unstage: %v", err)
	}
	unstage(handle, staging) // again: done

	// Staged again (the disk moved back to this machine): not formatted
	// again, what the pod wrote is there.
	must(t, stage(handle, staging, ""))
	if got, err := os.ReadFile(filepath.Join(staging, "written")); err != nil || string(got) != "by the pod" {
		t.Errorf("after staging again: %q, %v", got, err)
	}

	// The disk grows (as an expanded claim's does); the filesystem follows.
	t.Run("growth", func(t *testing.T) {
		if !hasCapability(t, unix.CAP_SYS_RESOURCE) {
			t.Skip("skipping online growth: ext4 grows mounted only with CAP_SYS_RESOURCE, which root lacks here")
		}
		before := fsBytes(t, staging)
		must(t, os.Truncate(filepath.Join(base, "disk.img"), 64<<20))
		if out, err := exec.Command("losetup", "--set-capacity", disk).CombinedOutput(); err != nil {
			t.Fatalf("losetup --set-capacity: %v: %s", err, out)
		}
		resp, err := node.NodeExpandVolume(ctx, &csi.NodeExpandVolumeRequest{VolumeId: handle, VolumePath: target, StagingTargetPath: staging})
		must(t, err)
		if after := fsBytes(t, staging); after < before+(24<<20) || resp.GetCapacityBytes() != 64<<20 {
			t.Errorf("filesystem %d bytes before, %d after growing the disk to 64 MiB (reported %d)", before, after, resp.GetCapacityBytes())
		}
	})
	unstage(handle, staging)

	// Unstage unmounts only what staging mounts: not a path outside the
	// plugins directory, not a mount of anything but a volume's ext4.
	foreign := filepath.Join(plugins, "kubernetes.io", "csi", Driver, "def", "globalmount")
	must(t, os.MkdirAll(foreign, 0o750))
	must(t, unix.Mount("tmpfs", foreign, "tmpfs", 0, "size=1m"))
	for what, path := range map[string]string{"a staging path outside the plugins directory": pods, "a tmpfs at a staging path": foreign} {
		_, err := node.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: handle, StagingTargetPath: path})
		if err == nil {
			t.Errorf("%s: unstaged", what)
		}
	}
	if mounted, err := mountinfo.Mounted(foreign); err != nil || !mounted {
		t.Errorf("the tmpfs after the refused unstage: mounted %v, %v", mounted, err)
	}
}

// hasCapability reports whether the process has capability c in its
// effective set.
func hasCapability(t *testing.T, c uint) bool {
	t.Helper()
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	must(t, unix.Capget(&hdr, &data[0]))
	return data[c/32].Effective&(1<<(c%32)) != 0
}

// loopDevice attaches a sparse file of size bytes as a loop device,
// detached when the test ends.
func loopDevice(t *testing.T, file string, size int64) string {
	t.Helper()
	f, err := os.Create(file)
	must(t, err)
	must(t, f.Truncate(size))
	must(t, f.Close())
	out, err := exec.Command("losetup", "--find", "--show", file).CombinedOutput()
	if err != nil {
		t.Skipf("skipping disk mode: no loop device: %v: %s", err, out)
	}
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() {
		if out, err := exec.Command("losetup", "--detach", dev).CombinedOutput(); err != nil {
			t.Errorf("losetup --detach %s: %v: %s", dev, err, out)
		}
	})
	return dev
}

func readAt(t *testing.T, file string, at int64, n int) string {
	t.Helper()
	f, err := os.Open(file)
	must(t, err)
	defer f.Close()
	buf := make([]byte, n)
	_, err = f.ReadAt(buf, at)
	must(t, err)
	return string(buf)
}

// One operation on a volume at a time: a second one while it runs is
// refused with Aborted, one after it goes through.
func TestVolumeLock(t *testing.T) {
	p := &Plugin{}
	unlock, err := p.lock(handle)
	must(t, err)
	if _, err := p.lock(handle); status.Code(err) != codes.Aborted {
		t.Errorf("a second operation on the volume: %v, want Aborted", err)
	}
	other, err := p.lock("vol-0a1b2c3d-1111-2222-3333-777777777777")
	must(t, err)
	other()
	unlock()
	again, err := p.lock(handle)
	must(t, err)
	again()
}

func fsBytes(t *testing.T, path string) int64 {
	t.Helper()
	var st unix.Statfs_t
	must(t, unix.Statfs(path, &st))
	return int64(st.Blocks) * st.Bsize
}

func TestDiskBySerial(t *testing.T) {
	lsblk := []byte(`{"blockdevices":[
	{"path":"/dev/vda","serial":null,"type":"disk"},
	{"path":"/dev/sda","serial":"0a1b2c3d-1111-2222-3333-444455556666","type":"disk"},
	{"path":"/dev/sr0","serial":"0a1b2c3d-1111-2222-3333-777777777777","type":"rom"},
	{"path":"/dev/sdb","serial":"twice","type":"disk"},
	{"path":"/dev/sdc","serial":"twice","type":"disk"}]}`)
	for serial, want := range map[string]string{
		"0a1b2c3d-1111-2222-3333-444455556666": "/dev/sda",
		"0a1b2c3d-1111-2222-3333-777777777777": "", // not a disk
		"none":                                 "",
	} {
		if got, err := diskBySerial(lsblk, serial); err != nil || got != want {
			t.Errorf("serial %s: %q, %v; want %q", serial, got, err, want)
		}
	}
	if _, err := diskBySerial(lsblk, "twice"); err == nil {
		t.Error("two disks of one serial: no error")
	}
	if DiskSerial(handle) != "0a1b2c3d-1111-2222-3333-444455556666" {
		t.Errorf("DiskSerial(%s) = %s", handle, DiskSerial(handle))
	}
}
