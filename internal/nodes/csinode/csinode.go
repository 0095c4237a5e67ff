// Package csinode is the node plugin of the CSI driver csi.hypershift.dev
// on a hosted cluster's node: the volumes of the management cluster's
// storage that the operator attached to the node's machine appear in one
// directory, a mount point per volume handle (docs/volumes.md), and
// NodePublishVolume bind-mounts one to the pod's target path. The plugin
// speaks the CSI node and identity services
// (github.com/container-storage-interface/spec) on a unix socket and
// registers it with the kubelet through the kubelet's plugin registration
// socket, as node-driver-registrar does.
//
// What the requests carry is input: a volume handle is the guest volume's
// (its admin writes it), so it must have the form the provisioner gives
// handles and name a directory that is a mount point; a target path must
// lie under the kubelet's pods directory.
package csinode

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/go-logr/logr"
	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"hypershift.dev/internal/version"
)

// Driver is the CSI driver's name.
const Driver = "csi.hypershift.dev"

// handlePattern is the form of the volume handles the provisioner gives:
// vol-<guest claim UID>.
var handlePattern = regexp.MustCompile(`^vol-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// Plugin serves the identity and node services of one node.
type Plugin struct {
	csi.UnimplementedIdentityServer
	csi.UnimplementedNodeServer

	// NodeID is the guest Node's name.
	NodeID string
	// AttachedDir holds the attached volumes: AttachedDir/<handle>, a
	// mount point while the volume is attached to this node.
	AttachedDir string
	// PodsDir is the kubelet's pods directory: every target path lies
	// under it.
	PodsDir string
	Log     logr.Logger
}

// GetPluginInfo implements csi.IdentityServer.
func (p *Plugin) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	return &csi.GetPluginInfoResponse{Name: Driver, VendorVersion: version.Version}, nil
}

// GetPluginCapabilities implements csi.IdentityServer: the node plugin
// offers no controller service (the operator is the controller).
func (p *Plugin) GetPluginCapabilities(context.Context, *csi.GetPluginCapabilitiesRequest) (*csi.GetPluginCapabilitiesResponse, error) {
	return &csi.GetPluginCapabilitiesResponse{}, nil
}

// Probe implements csi.IdentityServer.
func (p *Plugin) Probe(context.Context, *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	return &csi.ProbeResponse{}, nil
}

// NodeGetCapabilities implements csi.NodeServer: no staging, publishing
// alone.
func (p *Plugin) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	return &csi.NodeGetCapabilitiesResponse{}, nil
}

// NodeGetInfo implements csi.NodeServer.
func (p *Plugin) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	return &csi.NodeGetInfoResponse{NodeId: p.NodeID}, nil
}

// NodePublishVolume implements csi.NodeServer: the attached volume's
// directory is bind-mounted to the target path (read-only if asked).
// Publishing again what is published is done.
func (p *Plugin) NodePublishVolume(_ context.Context, req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	source, err := p.attached(req.GetVolumeId())
	if err != nil {
		return nil, err
	}
	target, err := p.target(req.GetTargetPath())
	if err != nil {
		return nil, err
	}
	if req.GetVolumeCapability().GetMount() == nil {
		return nil, status.Error(codes.InvalidArgument, "only filesystem volumes (access type mount) are served")
	}
	if mounted, err := mountinfo.Mounted(target); err == nil && mounted {
		return &csi.NodePublishVolumeResponse{}, nil
	}
	if err := os.MkdirAll(target, 0o750); err != nil {
		return nil, status.Errorf(codes.Internal, "target %s: %v", target, err)
	}
	if err := unix.Mount(source, target, "", unix.MS_BIND, ""); err != nil {
		return nil, status.Errorf(codes.Internal, "bind %s to %s: %v", source, target, err)
	}
	if req.GetReadonly() {
		if err := unix.Mount("", target, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
			_ = unix.Unmount(target, 0)
			return nil, status.Errorf(codes.Internal, "make %s read-only: %v", target, err)
		}
	}
	p.Log.Info("published", "volume", req.GetVolumeId(), "target", target, "readOnly", req.GetReadonly())
	return &csi.NodePublishVolumeResponse{}, nil
}

// NodeUnpublishVolume implements csi.NodeServer: the target path is
// unmounted and removed. A target that is gone is done.
func (p *Plugin) NodeUnpublishVolume(_ context.Context, req *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	if !handlePattern.MatchString(req.GetVolumeId()) {
		return nil, status.Errorf(codes.InvalidArgument, "volume %q is not one of %s", req.GetVolumeId(), Driver)
	}
	target, err := p.target(req.GetTargetPath())
	if err != nil {
		return nil, err
	}
	mounted, err := mountinfo.Mounted(target)
	if errors.Is(err, os.ErrNotExist) {
		return &csi.NodeUnpublishVolumeResponse{}, nil
	}
	if err != nil {
		return nil, status.Errorf(codes.Internal, "target %s: %v", target, err)
	}
	if mounted {
		if err := unix.Unmount(target, 0); err != nil {
			return nil, status.Errorf(codes.Internal, "unmount %s: %v", target, err)
		}
	}
	if err := os.Remove(target); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, status.Errorf(codes.Internal, "remove %s: %v", target, err)
	}
	p.Log.Info("unpublished", "volume", req.GetVolumeId(), "target", target)
	return &csi.NodeUnpublishVolumeResponse{}, nil
}

// attached is the directory of volume handle id, which must have the
// provisioner's form and be a mount point (attached to this node).
func (p *Plugin) attached(id string) (string, error) {
	if !handlePattern.MatchString(id) {
		return "", status.Errorf(codes.InvalidArgument, "volume %q is not one of %s", id, Driver)
	}
	dir := filepath.Join(p.AttachedDir, id)
	mounted, err := mountinfo.Mounted(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", status.Errorf(codes.Internal, "volume %s: %v", id, err)
	}
	if !mounted {
		return "", status.Errorf(codes.FailedPrecondition, "volume %s is not attached to node %s", id, p.NodeID)
	}
	return dir, nil
}

// target is path, which must be absolute and lie under the pods
// directory once cleaned; no part of it under the pods directory that
// exists may be a symlink (the bind would follow it out).
func (p *Plugin) target(path string) (string, error) {
	if path == "" || !filepath.IsAbs(path) {
		return "", status.Errorf(codes.InvalidArgument, "target path %q is not absolute", path)
	}
	clean := filepath.Clean(path)
	rel, err := filepath.Rel(p.PodsDir, clean)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return "", status.Errorf(codes.InvalidArgument, "target path %s is not under the kubelet's pods directory %s", path, p.PodsDir)
	}
	at := p.PodsDir
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		at = filepath.Join(at, part)
		fi, err := os.Lstat(at)
		if errors.Is(err, os.ErrNotExist) {
			break
		}
		if err != nil {
			return "", status.Errorf(codes.Internal, "target path %s: %v", path, err)
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			return "", status.Errorf(codes.InvalidArgument, "target path %s passes through the symlink %s", path, at)
		}
	}
	return clean, nil
}

// String names the plugin in logs.
func (p *Plugin) String() string { return fmt.Sprintf("%s on %s", Driver, p.NodeID) }
