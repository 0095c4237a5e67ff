package process_test

import (
	"context"
	"net"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"hypershift.dev/internal/runtime"
	"hypershift.dev/internal/runtime/process"
	"hypershift.dev/internal/testenv"
)

// TestReadyProbePeriod: once an instance is ready its probe runs once a
// ProbePeriod, DefaultProbePeriod when none is given — not at the fast
// pace of a start, which would cost an idle control plane a request every
// couple of seconds per component.
func TestReadyProbePeriod(t *testing.T) {
	if _, err := process.New(process.Options{Root: t.TempDir(), ProbePeriod: -time.Second}); err == nil {
		t.Error("a negative probe period was accepted")
	}
	tests := []struct {
		name     string
		period   time.Duration
		window   time.Duration
		min, max int64
	}{
		// The default is 10 s: a 6 s window holds at most one probe (it
		// held three at the earlier 2 s).
		{name: "default", window: 6 * time.Second, min: 0, max: 1},
		{name: "500ms", period: 500 * time.Millisecond, window: 3 * time.Second, min: 4, max: 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var probes atomic.Int64
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				probes.Add(1)
				_, _ = w.Write([]byte("ok"))
			}), ReadHeaderTimeout: 5 * time.Second}
			go func() { _ = srv.Serve(l) }()
			defer srv.Close()

			root := testenv.ShortTempDir(t)
			ref := runtime.ControlPlaneRef{Namespace: "ns-q", Name: "q"}
			spec := etcdSpec(t, filepath.Join(root, ref.Namespace))
			spec.Readiness = runtime.Probe{Scheme: "http", Host: "127.0.0.1", Port: l.Addr().(*net.TCPAddr).Port, Path: "/"}
			rt := newRuntimeProbing(t, root, tt.period)
			defer rt.Release()
			if err := rt.Apply(context.Background(), ref, []runtime.Spec{spec}); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = rt.Delete(context.Background(), ref) }()
			waitFor(t, "running", running(rt, ref))
			before := probes.Load()
			time.Sleep(tt.window)
			if got := probes.Load() - before; got < tt.min || got > tt.max {
				t.Errorf("%d probes in %s of a ready instance, want %d to %d", got, tt.window, tt.min, tt.max)
			}
		})
	}
}
