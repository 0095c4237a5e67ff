package workloadidentity

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"hypershift.dev/internal/pki"
)

// fakeAPIServer serves the ServiceAccounts in sas over TLS, as the API
// server's GET /api/v1/namespaces/NS/serviceaccounts/NAME does, and writes
// a kubeconfig that reaches it. A ServiceAccount called "slow" is answered
// half a second after arrived is closed.
func fakeAPIServer(t *testing.T, sas map[string]*corev1.ServiceAccount) (kubeconfig string, requests func() []string, arrived <-chan struct{}) {
	t.Helper()
	var (
		mu       sync.Mutex
		seen     []string
		slowOnce sync.Once
	)
	slow := make(chan struct{})
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path+" "+r.UserAgent())
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/api/v1/namespaces/"), "/")
		if parts[len(parts)-1] == "slow" {
			slowOnce.Do(func() { close(slow) })
			time.Sleep(500 * time.Millisecond)
		}
		if len(parts) == 3 && parts[1] == "serviceaccounts" {
			if sa, ok := sas[parts[0]+"/"+parts[2]]; ok {
				sa = sa.DeepCopy()
				sa.APIVersion, sa.Kind = "v1", "ServiceAccount"
				_ = json.NewEncoder(w).Encode(sa)
				return
			}
		}
		status := apierrors.NewNotFound(schema.GroupResource{Resource: "serviceaccounts"}, parts[len(parts)-1]).Status()
		status.APIVersion, status.Kind = "v1", "Status"
		w.WriteHeader(http.StatusNotFound)
		_ = json.NewEncoder(w).Encode(status)
	}))
	t.Cleanup(srv.Close)
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["fake"] = &clientcmdapi.Cluster{
		Server:                   srv.URL,
		CertificateAuthorityData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}),
	}
	cfg.AuthInfos["webhook"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["fake"] = &clientcmdapi.Context{Cluster: "fake", AuthInfo: "webhook"}
	cfg.CurrentContext = "fake"
	kubeconfig = filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	return kubeconfig, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}, slow
}

// writeServingCert issues a serving certificate for 127.0.0.1 from a new
// CA into certFile and keyFile, dated at modTime, and returns the CA.
func writeServingCert(t *testing.T, certFile, keyFile string, modTime time.Time) pki.KeyPair {
	t.Helper()
	ca, err := pki.NewCA("workload-identity-test-ca")
	if err != nil {
		t.Fatal(err)
	}
	kp, err := pki.Issue(ca, pki.CertRequest{CommonName: Name, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Server: true})
	if err != nil {
		t.Fatal(err)
	}
	writeFileAt(t, certFile, kp.CertPEM, modTime)
	writeFileAt(t, keyFile, kp.KeyPEM, modTime)
	return ca
}

// writeFileAt writes data to path, dated at modTime: an explicit time, so
// that a rewrite within the file system's timestamp granularity is still
// seen as a change.
func writeFileAt(t *testing.T, path string, data []byte, modTime time.Time) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, modTime, modTime); err != nil {
		t.Fatal(err)
	}
}

// freePort is a port nothing listened on a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

// clientTrusting makes a new TLS connection per request, so each one sees
// the certificate served at that moment.
func clientTrusting(ca pki.KeyPair) *http.Client {
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.CertPEM)
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
		DisableKeepAlives: true,
	}}
}

// get is the status of a GET of url.
func get(t *testing.T, client *http.Client, url string) (int, error) {
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

// waitReady waits until client gets 200 from base's /readyz, failing the
// test if done (Run's result) comes first or after 10s.
func waitReady(t *testing.T, client *http.Client, base string, done <-chan error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, err := get(t, client, base+"/readyz")
		if err == nil && code == http.StatusOK {
			return
		}
		select {
		case err := <-done:
			t.Fatalf("Run returned before serving: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ready after 10s: %d %v", code, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestRun(t *testing.T) {
	role := map[string]string{"eks.amazonaws.com/role-arn": testRoleARN}
	slowSA := testSA(role)
	slowSA.Name = "slow"
	kubeconfig, apiRequests, slowArrived := fakeAPIServer(t, map[string]*corev1.ServiceAccount{
		"tenant/app":  testSA(role),
		"tenant/slow": slowSA,
	})
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	ca := writeServingCert(t, certFile, keyFile, time.Now().Add(-time.Hour))
	o := DefaultOptions()
	o.BindAddress, o.Port = "127.0.0.1", freePort(t)
	o.CertFile, o.KeyFile, o.Kubeconfig = certFile, keyFile, kubeconfig
	base := "https://" + net.JoinHostPort(o.BindAddress, strconv.Itoa(o.Port))

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- Run(ctx, o) }()

	client := clientTrusting(ca)
	getPath := func(client *http.Client, path string) (int, error) { return get(t, client, base+path) }
	waitReady(t, client, base, done)
	if code, err := getPath(client, "/healthz"); err != nil || code != http.StatusOK {
		t.Errorf("/healthz: %d %v", code, err)
	}

	// admitErr is safe off the test's goroutine; admit fails the test.
	admitErr := func(object string) (*admissionv1.AdmissionResponse, error) {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+MutatePath, bytes.NewReader(review(object)))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return nil, err
		}
		defer func() { _ = resp.Body.Close() }()
		var out admissionv1.AdmissionReview
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			return nil, fmt.Errorf("status %d: no review: %w", resp.StatusCode, err)
		}
		if out.Response == nil {
			return nil, fmt.Errorf("status %d: a review without a response", resp.StatusCode)
		}
		return out.Response, nil
	}
	admit := func(object string) *admissionv1.AdmissionResponse {
		t.Helper()
		resp, err := admitErr(object)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	t.Run("annotated ServiceAccount: patched", func(t *testing.T) {
		resp := admit(rawPod)
		if !resp.Allowed || !strings.Contains(string(resp.Patch), testRoleARN) || !strings.Contains(string(resp.Patch), AWSTokenVolume) {
			t.Errorf("response %+v, patch %s: want allowed, with the role and the token volume", resp, resp.Patch)
		}
		want := "GET /api/v1/namespaces/tenant/serviceaccounts/app hypershift-" + Name
		if got := apiRequests(); len(got) == 0 || got[len(got)-1] != want {
			t.Errorf("API server saw %q, want last %q", got, want)
		}
	})
	t.Run("missing ServiceAccount: allowed unchanged", func(t *testing.T) {
		resp := admit(strings.Replace(rawPod, `"serviceAccountName": "app"`, `"serviceAccountName": "ghost"`, 1))
		if !resp.Allowed || len(resp.Patch) > 0 {
			t.Errorf("response %+v: want allowed without a patch", resp)
		}
	})
	t.Run("renewed certificate served without a restart", func(t *testing.T) {
		renewed := writeServingCert(t, certFile, keyFile, time.Now())
		if code, err := getPath(clientTrusting(renewed), "/healthz"); err != nil || code != http.StatusOK {
			t.Errorf("client trusting the renewed CA: %d %v", code, err)
		}
		var unknown x509.UnknownAuthorityError
		if _, err := getPath(client, "/healthz"); !errors.As(err, &unknown) {
			t.Errorf("client trusting only the first CA: %v, want an unknown authority", err)
		}
		client = clientTrusting(renewed)
	})
	t.Run("half-written renewal: the last good pair is served", func(t *testing.T) {
		if err := os.WriteFile(keyFile, []byte("not a key"), 0o600); err != nil {
			t.Fatal(err)
		}
		if code, err := getPath(client, "/healthz"); err != nil || code != http.StatusOK {
			t.Errorf("after a bad key: %d %v", code, err)
		}
	})

	// Stop while a request waits for its ServiceAccount: it is answered.
	type answer struct {
		resp *admissionv1.AdmissionResponse
		err  error
	}
	inFlight := make(chan answer, 1)
	go func() {
		resp, err := admitErr(strings.Replace(rawPod, `"serviceAccountName": "app"`, `"serviceAccountName": "slow"`, 1))
		inFlight <- answer{resp, err}
	}()
	<-slowArrived
	cancel()
	if a := <-inFlight; a.err != nil || !a.resp.Allowed || !strings.Contains(string(a.resp.Patch), testRoleARN) {
		t.Errorf("request in flight at stop: %+v %v, want answered with a patch", a.resp, a.err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run after stop: %v", err)
		}
	case <-time.After(shutdownGrace + 5*time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	if _, err := getPath(client, "/healthz"); err == nil {
		t.Error("still serving after Run returned")
	}
}

func TestRunRefusesBadOptions(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		mod  func(*Options)
		want string
	}{
		{name: "no certificate", mod: func(*Options) {}, want: "--tls-cert-file and --tls-private-key-file are required"},
		{name: "port out of range", mod: func(o *Options) { o.Port = 70000 }, want: "--port 70000"},
		{name: "bad configuration", mod: func(o *Options) { o.Config.AWS.TokenExpiration = 60 }, want: "aws token expiration 60"},
		{
			name: "common name without a client CA",
			mod:  func(o *Options) { o.ClientCommonNames = []string{"kube-apiserver-kubelet-client"} },
			want: "--client-common-name needs --client-ca-file",
		},
		{
			name: "empty common name",
			mod:  func(o *Options) { o.ClientCAFile, o.ClientCommonNames = "/ca.crt", []string{""} },
			want: "--client-common-name: want a name",
		},
		{
			name: "client CA that does not load",
			mod: func(o *Options) {
				o.CertFile, o.KeyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
				writeServingCert(t, o.CertFile, o.KeyFile, time.Now())
				o.ClientCAFile = filepath.Join(dir, "missing-ca.crt")
			},
			want: "client CA bundle " + filepath.Join(dir, "missing-ca.crt"),
		},
		{
			name: "certificate that does not load",
			mod: func(o *Options) {
				o.CertFile, o.KeyFile = filepath.Join(dir, "missing.crt"), filepath.Join(dir, "missing.key")
			},
			want: "serving certificate " + filepath.Join(dir, "missing.crt"),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := DefaultOptions()
			tc.mod(&o)
			err := Run(t.Context(), o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Run() = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestOptionsRoundTrip: Args renders what Parse reads back, every flag;
// the defaults render to nothing (the component registry's contract).
func TestOptionsRoundTrip(t *testing.T) {
	defaults, err := Parse(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(defaults, DefaultOptions()) || len(defaults.Args()) != 0 {
		t.Errorf("Parse(nil) = %+v rendering %q, want the defaults rendering nothing", defaults, defaults.Args())
	}
	sample := Options{
		BindAddress: "192.0.2.10", Port: 10443,
		CertFile: "/data/tls.crt", KeyFile: "/data/tls.key", Kubeconfig: "/data/kubeconfig",
		ClientCAFile: "/data/client-ca.crt", ClientCommonNames: []string{"kube-apiserver-kubelet-client", "CN, with a comma"},
		Config: Config{
			Azure: AzureConfig{TenantID: "tenant", AuthorityHost: "https://login.microsoftonline.us/", Audience: "api://custom"},
			AWS: AWSConfig{
				AnnotationPrefix: "iam.example.com", Region: "eu-west-1", Audience: "sts.example",
				TokenExpiration: 3600, RegionalSTS: true, TokenMountPath: "/var/run/aws",
			},
		},
	}
	got, err := Parse(sample.Args())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, sample) {
		t.Errorf("rendered %q, parsed back\n%+v\nwant\n%+v", sample.Args(), got, sample)
	}
	if _, err := Parse([]string{"stray"}); err == nil {
		t.Error("a stray argument parsed")
	}
}

// TestServingCertKeepsLastGood: a pair that stops loading keeps serving
// the last one, without retrying until a file changes.
func TestServingCertKeepsLastGood(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	writeServingCert(t, certFile, keyFile, time.Now().Add(-time.Hour))
	s := newServingCert(certFile, keyFile, logr.Discard())
	first, err := s.get()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := s.get()
	if err != nil || got != first {
		t.Errorf("after a bad certificate: %v %v, want the first pair", got, err)
	}
	writeServingCert(t, certFile, keyFile, time.Now())
	got, err = s.get()
	if err != nil || got == first {
		t.Errorf("after a good renewal: %v, want a new pair", err)
	}
	if _, err := newServingCert(filepath.Join(dir, "none"), keyFile, logr.Discard()).get(); err == nil {
		t.Error("no first pair: no error")
	}
}
