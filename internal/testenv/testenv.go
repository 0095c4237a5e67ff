// Package testenv starts a real management plane (etcd, kube-apiserver, the
// garbage-collector, namespace and cluster-role aggregation controllers, the hypershift.dev API) for
// tests, from the hypershift binary that `make build` writes — nothing is
// downloaded.
package testenv

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"hypershift.dev/internal/hostnet"
	"hypershift.dev/internal/managementplane"
	"hypershift.dev/internal/release"
	"hypershift.dev/internal/scheme"
)

// Binary returns the hypershift binary under test: $HYPERSHIFT_BIN, or
// bin/hypershift at the module root. A missing binary fails the test with
// what to run. Under -short (`make unit`) the test is skipped: it runs the
// binary or a management plane, which `make test` does.
func Binary(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: runs the hypershift binary or a management plane (make test runs it)")
	}
	if b := os.Getenv("HYPERSHIFT_BIN"); b != "" {
		return b
	}
	_, file, _, _ := runtime.Caller(0) //nolint:dogsled // only the file is needed
	b := filepath.Join(filepath.Dir(file), "..", "..", "bin", "hypershift")
	if _, err := os.Stat(b); err != nil {
		t.Fatalf("no hypershift binary at %s: run `make build` (or `make test`), or set HYPERSHIFT_BIN", b)
	}
	return b
}

// Env is a running management plane.
type Env struct {
	DataDir    string
	RESTConfig *rest.Config
	Client     client.Client
}

// Start starts a management plane in a temporary data dir; it is stopped
// when the test ends.
func Start(t testing.TB) *Env {
	t.Helper()
	dir := ShortTempDir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// The admission policy admits the releases built beside the binary,
	// as `up` does.
	releases, err := release.Load(filepath.Join(filepath.Dir(Binary(t)), "releases"))
	if err != nil {
		t.Fatal(err)
	}
	plane, err := managementplane.Start(ctx, managementplane.Options{
		DataDir:  dir,
		Binary:   Binary(t),
		Log:      Logger(),
		Versions: releases.Versions(),
	})
	if err != nil {
		t.Fatalf("start management plane: %v", err)
	}
	t.Cleanup(func() { plane.Stop(context.Background()) })
	c, err := client.New(plane.RESTConfig, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	return &Env{DataDir: dir, RESTConfig: plane.RESTConfig, Client: c}
}

// FastConfig is the plane's REST config as fast as the operator's (200
// requests a second, burst 400): client-go's default of 5 a second would
// be most of a test that writes many objects.
func (e *Env) FastConfig() *rest.Config {
	cfg := rest.CopyConfig(e.RESTConfig)
	cfg.QPS, cfg.Burst = 200, 400
	return cfg
}

// FastClient is a client of FastConfig.
func (e *Env) FastClient(t testing.TB) client.Client {
	t.Helper()
	c, err := client.New(e.FastConfig(), client.Options{Scheme: e.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// ShortTempDir is a temporary directory with a short path: etcd and the
// API servers put unix sockets under their data dirs, and socket paths are
// limited to 108 bytes.
func ShortTempDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "hs-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	// Named in the test's output: it is how a process seen on the host
	// (its command line names the directory) is traced to its test.
	t.Logf("temporary directory %s", dir)
	return dir
}

// Logger logs to standard error when HYPERSHIFT_TEST_LOG is set, and
// nowhere otherwise (supervisors may log after a test's last line).
func Logger() logr.Logger {
	if os.Getenv("HYPERSHIFT_TEST_LOG") == "" {
		return logr.Discard()
	}
	return zap.New(zap.WriteTo(os.Stderr))
}

// Eventually polls cond every 100ms until it holds, and fails the test with
// the last error when it does not within timeout.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	var lastErr error
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		ok, err := cond()
		lastErr = err
		return ok, nil
	})
	if err != nil {
		t.Fatalf("timed out waiting for %s (last error: %v)", what, lastErr)
	}
}

// ExpectError fails the test unless err is nil where want is empty, or
// an error containing want where it is not: the check of a table of
// valid and refused inputs.
func ExpectError(t testing.TB, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatalf("refused a valid input: %v", err)
	case want != "" && err == nil:
		t.Fatalf("accepted, want error containing %q", want)
	case want != "" && !strings.Contains(err.Error(), want):
		t.Fatalf("error %q does not contain %q", err, want)
	}
}

// FreePort is a TCP port that was free on every address a moment ago,
// outside the kernel's ephemeral range (hostnet.ListenFreePort): a program
// told to listen on it later does not find it taken by the source port of
// some outgoing connection.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := hostnet.ListenFreePort(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// SyncBuffer is a bytes.Buffer that a process's output is written to
// while the test reads it.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
