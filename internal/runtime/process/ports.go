package process

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"

	"hypershift.dev/internal/atomicfile"
	"hypershift.dev/internal/hostnet"
	"hypershift.dev/internal/runtime"
)

// reserveKnownPorts marks the ports of every control plane under the root as
// taken, including stopped ones that will want them back.
func (r *Runtime) reserveKnownPorts() {
	files, _ := filepath.Glob(filepath.Join(r.root, "*", "ports.json"))
	for _, f := range files {
		for _, p := range readPortsFile(f) {
			r.usedPorts[p] = true
		}
	}
}

// readPortsFile returns the ports a ports.json holds; none when it cannot
// be read.
func readPortsFile(path string) map[string]int {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	ports := map[string]int{}
	if json.Unmarshal(data, &ports) != nil {
		return nil
	}
	return ports
}

// Ports implements runtime.Runtime: free ports of this host (the upstream
// defaults are ignored: instances share the host's network). Ports are
// chosen once and kept in ports.json, so a control plane keeps its
// endpoint across restarts.
func (r *Runtime) Ports(_ context.Context, ref runtime.ControlPlaneRef, want map[string]int) (map[string]int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.claim(ref); err != nil {
		return nil, err
	}
	path := filepath.Join(r.Dir(ref), "ports.json")
	ports := map[string]int{}
	if data, err := os.ReadFile(path); err == nil {
		if err := json.Unmarshal(data, &ports); err != nil {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	var missing []string
	for _, name := range slices.Sorted(maps.Keys(want)) {
		if ports[name] == 0 {
			missing = append(missing, name)
		}
	}
	if len(missing) == 0 {
		return ports, nil
	}
	free, err := r.freePorts(len(missing))
	if err != nil {
		return nil, err
	}
	for i, name := range missing {
		ports[name] = free[i]
	}
	data, err := json.Marshal(ports)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(r.Dir(ref), 0o700); err != nil {
		return nil, fmt.Errorf("create %s: %w", r.Dir(ref), err)
	}
	return ports, atomicfile.Write(path, data, 0o600)
}

// PinPorts implements runtime.Runtime: a control plane that has no
// ports yet gets these (a restored cluster keeps its published endpoint).
// It returns false, writing nothing, when the control plane has ports.
func (r *Runtime) PinPorts(ref runtime.ControlPlaneRef, ports map[string]int) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.checkOwner(ref); err != nil {
		return false, err
	}
	path := filepath.Join(r.Dir(ref), "ports.json")
	if _, err := os.Stat(path); err == nil {
		return false, nil
	}
	// A port another control plane of this runtime holds (one that is
	// queued or hibernated listens on nothing) is refused, not shared.
	for _, name := range slices.Sorted(maps.Keys(ports)) {
		if r.usedPorts[ports[name]] {
			return false, fmt.Errorf("port %d of %s is held by another control plane of this management plane", ports[name], name)
		}
	}
	data, err := json.Marshal(ports)
	if err != nil {
		return false, err
	}
	if err := os.MkdirAll(r.Dir(ref), 0o700); err != nil {
		return false, fmt.Errorf("create %s: %w", r.Dir(ref), err)
	}
	if err := atomicfile.Write(path, data, 0o600); err != nil {
		return false, err
	}
	for _, port := range ports {
		r.usedPorts[port] = true
	}
	return true, nil
}

// releasePorts gives the ports of ref's ports.json back, before the file
// goes. The caller holds r.mu.
func (r *Runtime) releasePorts(ref runtime.ControlPlaneRef) {
	for _, port := range readPortsFile(filepath.Join(r.Dir(ref), "ports.json")) {
		delete(r.usedPorts, port)
	}
}

// UnpinPorts implements runtime.Runtime: the control plane's
// directory is removed only when PinPorts' file is all it holds. One that
// ran holds its owner's marker and data, which Delete removes; anything
// else there is not this pin's and is left alone.
func (r *Runtime) UnpinPorts(ref runtime.ControlPlaneRef) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	dir := r.Dir(ref)
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("read %s: %w", dir, err)
	case len(entries) != 1 || entries[0].Name() != "ports.json" || !entries[0].Type().IsRegular():
		return nil
	}
	r.releasePorts(ref)
	if err := os.Remove(filepath.Join(dir, "ports.json")); err != nil {
		return fmt.Errorf("unpin ports of %s: %w", dir, err)
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", dir, err)
	}
	return nil
}

// freePorts picks n distinct ports that nothing listens on (on any address)
// and no control plane of this runtime holds, outside the kernel's
// ephemeral range (hostnet.ListenFreePort says why). Listeners stay open
// until all are chosen so none is handed out twice.
func (r *Runtime) freePorts(n int) ([]int, error) {
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	var ports []int
	for len(ports) < n {
		l, err := hostnet.ListenFreePort(func(port int) bool { return r.usedPorts[port] })
		if err != nil {
			return nil, err
		}
		listeners = append(listeners, l)
		port := l.Addr().(*net.TCPAddr).Port
		r.usedPorts[port] = true
		ports = append(ports, port)
	}
	return ports, nil
}

// ForgetPorts stops a control plane and gives its ports back, keeping its
// data: the next Ports chooses new ones. It is for a control plane no client
// knows the endpoint of yet, whose port another program took first.
func (r *Runtime) ForgetPorts(ctx context.Context, ref runtime.ControlPlaneRef) error {
	r.mu.Lock()
	err := r.checkOwner(ref)
	r.mu.Unlock()
	if err != nil {
		return err
	}
	r.Stop(ctx, ref)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.releasePorts(ref)
	if err := os.Remove(filepath.Join(r.Dir(ref), "ports.json")); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("forget ports of %s: %w", r.Dir(ref), err)
	}
	return nil
}
