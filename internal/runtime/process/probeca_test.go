package process_test

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"hypershift.dev/internal/pki"
	"hypershift.dev/internal/runtime"
	"hypershift.dev/internal/testenv"
)

// A root-CA rotation changes the CA a readiness probe verifies with
// without changing the spec hash; once the server it probes presents a
// certificate of the new CA only, the probe must still pass (it used to
// keep the CA it started with, fail, and have the process restarted).
func TestReadinessProbeFollowsItsCA(t *testing.T) {
	oldCA, err := pki.NewCA("old")
	if err != nil {
		t.Fatal(err)
	}
	newCA, err := pki.NewCA("new")
	if err != nil {
		t.Fatal(err)
	}
	serving := func(ca pki.KeyPair) *tls.Certificate {
		kp, err := pki.Issue(ca, pki.CertRequest{CommonName: "probe", IPs: []net.IP{net.ParseIP("127.0.0.1")}, Server: true})
		if err != nil {
			t.Fatal(err)
		}
		pair, err := tls.X509KeyPair(kp.CertPEM, kp.KeyPEM)
		if err != nil {
			t.Fatal(err)
		}
		return &pair
	}
	var current atomic.Pointer[tls.Certificate]
	current.Store(serving(oldCA))
	// A plain TLS listener: the client sends no SNI for an IP address,
	// and httptest would then answer with its own certificate.
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return current.Load(), nil }})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	defer srv.Close()
	port := l.Addr().(*net.TCPAddr).Port

	root := testenv.ShortTempDir(t)
	ref := runtime.ControlPlaneRef{Namespace: "ns-p", Name: "p"}
	ctx := context.Background()
	spec := etcdSpec(t, filepath.Join(root, ref.Namespace))
	spec.Readiness = runtime.Probe{Scheme: "https", Host: "127.0.0.1", Port: port, Path: "/", CAPEM: oldCA.CertPEM}
	// A short probe period, so that the window below spans several probes.
	rt := newRuntimeProbing(t, root, time.Second)
	defer rt.Release()
	if err := rt.Apply(ctx, ref, []runtime.Spec{spec}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for status(rt, ref).Phase != runtime.Running {
		if time.Now().After(deadline) {
			t.Fatalf("not running: %+v", status(rt, ref))
		}
		time.Sleep(50 * time.Millisecond)
	}
	pid := status(rt, ref).PID

	// Trust both, serve from the new CA, then trust only the new one.
	both := spec
	both.Readiness.CAPEM = append(append([]byte(nil), oldCA.CertPEM...), newCA.CertPEM...)
	if both.Hash() != spec.Hash() {
		t.Fatal("the probe's CA is in the spec hash")
	}
	if err := rt.Apply(ctx, ref, []runtime.Spec{both}); err != nil {
		t.Fatal(err)
	}
	current.Store(serving(newCA))
	only := spec
	only.Readiness.CAPEM = newCA.CertPEM
	if err := rt.Apply(ctx, ref, []runtime.Spec{only}); err != nil {
		t.Fatal(err)
	}
	// Several probe periods (1 s when ready; three failures in a row
	// would make it Unhealthy).
	for end := time.Now().Add(7 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if s := status(rt, ref); s.Phase != runtime.Running || s.PID != pid {
			t.Fatalf("after its probe's CA changed: %s, pid %d (was %d): %s", s.Phase, s.PID, pid, s.Message)
		}
	}
}
