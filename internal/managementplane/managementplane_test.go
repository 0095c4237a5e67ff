package managementplane_test

import (
	"context"
	"errors"
	"net"
	"net/url"
	"os"
	"strconv"
	"testing"
	"time"

	"hypershift.dev/internal/components"
	"hypershift.dev/internal/datadir"
	"hypershift.dev/internal/managementplane"
	"hypershift.dev/internal/runtime"
	"hypershift.dev/internal/runtime/process"
	"hypershift.dev/internal/testenv"
)

// Another program takes the API server's port between the choice and the
// bind. A plane that never served chooses a new port and starts; one whose
// kubeconfig clients may hold keeps its endpoint and says which component
// cannot bind, at once rather than after the readiness timeout.
func TestPortTakenByAnotherProgram(t *testing.T) {
	binary := testenv.Binary(t)
	holder, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	taken := holder.Addr().(*net.TCPAddr).Port
	ref := runtime.ControlPlaneRef{Namespace: datadir.ManagementDir, Name: datadir.ManagementDir}
	pin := func(t *testing.T, dir string) {
		t.Helper()
		rt, err := process.New(process.Options{Root: dir, Binary: binary, Log: testenv.Logger()})
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := rt.PinPorts(ref, map[string]int{components.EndpointPort: taken}); !ok || err != nil {
			t.Fatalf("PinPorts = %v, %v", ok, err)
		}
	}

	t.Run("never served: new ports", func(t *testing.T) {
		dir := testenv.ShortTempDir(t)
		pin(t, dir)
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
		defer cancel()
		plane, err := managementplane.Start(ctx, managementplane.Options{DataDir: dir, Binary: binary, Log: testenv.Logger()})
		if err != nil {
			t.Fatalf("Start with a taken port, never served: %v", err)
		}
		defer plane.Stop(context.Background())
		u, err := url.Parse(plane.RESTConfig.Host)
		if err != nil {
			t.Fatal(err)
		}
		if u.Port() == strconv.Itoa(taken) {
			t.Errorf("the plane serves on %s, the port another program holds", plane.RESTConfig.Host)
		}
	})

	t.Run("served before: named, endpoint kept", func(t *testing.T) {
		dir := testenv.ShortTempDir(t)
		pin(t, dir)
		kubeconfig := datadir.Layout{Root: dir}.ManagementKubeconfig()
		if err := os.WriteFile(kubeconfig, []byte("written by an earlier start\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
		defer cancel()
		started := time.Now()
		plane, err := managementplane.Start(ctx, managementplane.Options{DataDir: dir, Binary: binary, Log: testenv.Logger()})
		if err == nil {
			plane.Stop(context.Background())
			t.Fatal("Start with a taken port of a plane that served: no error")
		}
		var pt *managementplane.PortTakenError
		if !errors.As(err, &pt) || pt.Component != components.KubeAPIServer {
			t.Fatalf("Start = %v; want a PortTakenError naming %s", err, components.KubeAPIServer)
		}
		if d := time.Since(started); d > time.Minute {
			t.Errorf("the taken port was reported after %s", d)
		}
		if data, err := os.ReadFile(kubeconfig); err != nil || string(data) != "written by an earlier start\n" {
			t.Errorf("the kubeconfig was changed: %q, %v", data, err)
		}
	})
}
