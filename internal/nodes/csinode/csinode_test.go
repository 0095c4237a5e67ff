package csinode

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
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
