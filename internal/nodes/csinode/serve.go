package csinode

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// RegistrationSocket is the plugin's socket in the kubelet's plugin
// registration directory (KUBELET_ROOT/plugins_registry).
func RegistrationSocket(registrationDir string) string {
	return filepath.Join(registrationDir, Driver+"-reg.sock")
}

// Serve serves the CSI services on the unix socket endpoint and, once
// they listen, the registration service in registrationDir, where the
// kubelet's plugin watcher finds it, until ctx ends. A socket left at
// either path by an earlier run is replaced; anything else there is
// refused.
func Serve(ctx context.Context, p *Plugin, endpoint, registrationDir string) error {
	csiListener, err := listenUnix(endpoint)
	if err != nil {
		return err
	}
	regListener, err := listenUnix(RegistrationSocket(registrationDir))
	if err != nil {
		_ = csiListener.Close()
		return err
	}
	csiServer := grpc.NewServer()
	csi.RegisterIdentityServer(csiServer, p)
	csi.RegisterNodeServer(csiServer, p)
	regServer := grpc.NewServer()
	registerapi.RegisterRegistrationServer(regServer, &registration{endpoint: endpoint, plugin: p})
	errs := make(chan error, 2)
	go func() { errs <- csiServer.Serve(csiListener) }()
	go func() { errs <- regServer.Serve(regListener) }()
	select {
	case <-ctx.Done():
		err = nil
	case err = <-errs:
	}
	regServer.Stop()
	csiServer.Stop()
	_ = os.Remove(RegistrationSocket(registrationDir))
	_ = os.Remove(endpoint)
	return err
}

// listenUnix listens on path, first removing a socket left there.
func listenUnix(path string) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, err
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("%s exists and is not a socket: left alone", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, err
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	return net.Listen("unix", path)
}

// registration answers the kubelet's plugin watcher.
type registration struct {
	registerapi.UnimplementedRegistrationServer
	endpoint string
	plugin   *Plugin
}

func (r *registration) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return &registerapi.PluginInfo{
		Type: registerapi.CSIPlugin, Name: Driver, Endpoint: r.endpoint, SupportedVersions: []string{"1.0.0"},
	}, nil
}

func (r *registration) NotifyRegistrationStatus(_ context.Context, s *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	if s.PluginRegistered {
		r.plugin.Log.Info("registered with the kubelet")
	} else {
		r.plugin.Log.Info("the kubelet refused the registration", "error", s.Error)
	}
	return &registerapi.RegistrationStatusResponse{}, nil
}
