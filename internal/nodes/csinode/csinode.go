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
	"sync"

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
	// Disks, when set, is disk mode (disk.go): volumes are disks found by
	// their serial, staged at a staging path under PluginsDir (the
	// kubelet's plugins directory), not directories under AttachedDir.
	Disks      Disks
	PluginsDir string
	Log        logr.Logger

	mu   sync.Mutex
	busy map[string]bool // volumes with an operation in progress (disk mode)
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

// NodeGetCapabilities implements csi.NodeServer: publishing alone, or in
// disk mode staging and expansion too.
func (p *Plugin) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	if p.Disks == nil {
		return &csi.NodeGetCapabilitiesResponse{}, nil
	}
	capability := func(t csi.NodeServiceCapability_RPC_Type) *csi.NodeServiceCapability {
		return &csi.NodeServiceCapability{Type: &csi.NodeServiceCapability_Rpc{Rpc: &csi.NodeServiceCapability_RPC{Type: t}}}
	}
	return &csi.NodeGetCapabilitiesResponse{Capabilities: []*csi.NodeServiceCapability{
		capability(csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME),
		capability(csi.NodeServiceCapability_RPC_EXPAND_VOLUME),
	}}, nil
}

// NodeGetInfo implements csi.NodeServer.
func (p *Plugin) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	return &csi.NodeGetInfoResponse{NodeId: p.NodeID}, nil
}

// NodePublishVolume implements csi.NodeServer: the attached volume's
// directory (in disk mode its staging path) is bind-mounted to the target
// path (read-only if asked). Publishing again what is published is done.
func (p *Plugin) NodePublishVolume(_ context.Context, req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	source, err := p.source(req)
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
	if err := checkHandle(req.GetVolumeId()); err != nil {
		return nil, err
	}
	target, err := p.target(req.GetTargetPath())
	if err != nil {
		return nil, err
	}
	if err := unmountAndRemove(target); err != nil {
		return nil, err
	}
	p.Log.Info("unpublished", "volume", req.GetVolumeId(), "target", target)
	return &csi.NodeUnpublishVolumeResponse{}, nil
}

// source is what NodePublishVolume binds: the attached directory, or in
// disk mode the staging path, which must be a mount point.
func (p *Plugin) source(req *csi.NodePublishVolumeRequest) (string, error) {
	if p.Disks == nil {
		return p.attached(req.GetVolumeId())
	}
	if err := checkHandle(req.GetVolumeId()); err != nil {
		return "", err
	}
	staging, err := p.staging(req.GetStagingTargetPath())
	if err != nil {
		return "", err
	}
	if mounted, err := mountinfo.Mounted(staging); err != nil || !mounted {
		return "", status.Errorf(codes.FailedPrecondition, "volume %s is not staged at %s", req.GetVolumeId(), staging)
	}
	return staging, nil
}

// attached is the directory of volume handle id, which must have the
// provisioner's form and be a mount point (attached to this node).
func (p *Plugin) attached(id string) (string, error) {
	if err := checkHandle(id); err != nil {
		return "", err
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

// checkHandle refuses a volume handle not of the provisioner's form.
func checkHandle(id string) error {
	if !handlePattern.MatchString(id) {
		return status.Errorf(codes.InvalidArgument, "volume %q is not one of %s", id, Driver)
	}
	return nil
}

// staging is path, which must lie under the kubelet's plugins directory
// (under).
func (p *Plugin) staging(path string) (string, error) {
	return under(p.PluginsDir, path, "staging path", "the kubelet's plugins directory")
}

// target is path, which must lie under the pods directory (under).
func (p *Plugin) target(path string) (string, error) {
	return under(p.PodsDir, path, "target path", "the kubelet's pods directory")
}

// String names the plugin in logs.
func (p *Plugin) String() string { return fmt.Sprintf("%s on %s", Driver, p.NodeID) }
