package workloadidentity

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"

	"hypershift.dev/internal/pki"
)

// kubeletClientName is the CommonName of the certificate the hosted API
// server presents to the webhook: its kubelet-client certificate.
const kubeletClientName = "kube-apiserver-kubelet-client"

func newTestCA(t *testing.T, name string) pki.KeyPair {
	t.Helper()
	ca, err := pki.NewCA(name)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// issueClient is a client certificate for commonName from ca; with
// serverOnly, one for server auth only.
func issueClient(t *testing.T, ca pki.KeyPair, commonName string, serverOnly bool) pki.KeyPair {
	t.Helper()
	kp, err := pki.Issue(ca, pki.CertRequest{CommonName: commonName, Client: !serverOnly, Server: serverOnly})
	if err != nil {
		t.Fatal(err)
	}
	return kp
}

// presenting is client presenting kp; keepAlive keeps its connections.
func presenting(t *testing.T, client *http.Client, kp pki.KeyPair, keepAlive bool) *http.Client {
	t.Helper()
	cert, err := tls.X509KeyPair(kp.CertPEM, kp.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	tr := client.Transport.(*http.Transport).Clone()
	tr.TLSClientConfig.Certificates = []tls.Certificate{cert}
	tr.DisableKeepAlives = !keepAlive
	return &http.Client{Timeout: client.Timeout, Transport: tr}
}

// admission is one POST of a review to the webhook.
type admission struct {
	status int
	body   string
	resp   *admissionv1.AdmissionResponse
	// reused: the request went on a connection kept from a former one.
	reused bool
}

func (a admission) String() string {
	return fmt.Sprintf("status %d, reused %t, body %.120q", a.status, a.reused, a.body)
}

func postReview(t *testing.T, client *http.Client, url, object string) (admission, error) {
	var a admission
	ctx := httptrace.WithClientTrace(t.Context(), &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) { a.reused = info.Reused },
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(review(object)))
	if err != nil {
		return a, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return a, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return a, err
	}
	a.status, a.body = resp.StatusCode, string(body)
	var out admissionv1.AdmissionReview
	if json.Unmarshal(body, &out) == nil {
		a.resp = out.Response
	}
	return a, nil
}

// TestRunClientAuth runs the webhook as a control plane does: with the
// hosted cluster's client CA and the API server's kubelet-client name.
func TestRunClientAuth(t *testing.T) {
	kubeconfig, apiRequests, _ := fakeAPIServer(t, map[string]*corev1.ServiceAccount{
		"tenant/app": testSA(map[string]string{"eks.amazonaws.com/role-arn": testRoleARN}),
	})
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	servingCA := writeServingCert(t, certFile, keyFile, time.Now().Add(-time.Hour))
	clientCA := newTestCA(t, "hosted-client-ca")
	caFile := filepath.Join(dir, "client-ca.crt")
	writeFileAt(t, caFile, clientCA.CertPEM, time.Now().Add(-time.Hour))

	o := DefaultOptions()
	o.BindAddress, o.Port = "127.0.0.1", freePort(t)
	o.CertFile, o.KeyFile, o.Kubeconfig = certFile, keyFile, kubeconfig
	o.ClientCAFile, o.ClientCommonNames = caFile, []string{kubeletClientName}
	base := "https://" + net.JoinHostPort(o.BindAddress, strconv.Itoa(o.Port))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, o) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})

	// The readiness probe presents no certificate: readiness itself says
	// the probes are open.
	anonymous := clientTrusting(servingCA)
	waitReady(t, anonymous, base, done)

	kubelet := presenting(t, anonymous, issueClient(t, clientCA, kubeletClientName, false), false)
	patched := func(t *testing.T, client *http.Client) {
		t.Helper()
		a, err := postReview(t, client, base+MutatePath, rawPod)
		if err != nil || a.status != http.StatusOK || a.resp == nil || !a.resp.Allowed || !strings.Contains(string(a.resp.Patch), testRoleARN) {
			t.Errorf("%v %v: want 200, allowed, with a patch holding the role", a, err)
		}
	}
	// refused: the handshake fails, and the API server is not asked.
	refused := func(t *testing.T, client *http.Client) {
		t.Helper()
		before := len(apiRequests())
		a, err := postReview(t, client, base+MutatePath, rawPod)
		if err == nil || !strings.Contains(err.Error(), "bad certificate") {
			t.Errorf("%v %v: want the handshake refused (bad certificate)", a, err)
		}
		if after := apiRequests(); len(after) != before {
			t.Errorf("the API server was asked %q", after[before:])
		}
	}

	t.Run("the API server's certificate: patched", func(t *testing.T) { patched(t, kubelet) })

	t.Run("no certificate: probes answer, nothing else does", func(t *testing.T) {
		for _, path := range []string{"/healthz", "/readyz"} {
			if code, err := get(t, anonymous, base+path); err != nil || code != http.StatusOK {
				t.Errorf("%s: %d %v, want 200", path, code, err)
			}
		}
		before := len(apiRequests())
		a, err := postReview(t, anonymous, base+MutatePath, rawPod)
		if err != nil || a.status != http.StatusForbidden || !strings.Contains(a.body, "client certificate") || a.resp != nil {
			t.Errorf("%s: %v %v, want 403 saying a client certificate is required", MutatePath, a, err)
		}
		if code, err := get(t, anonymous, base+"/"); err != nil || code != http.StatusForbidden {
			t.Errorf("/: %d %v, want 403", code, err)
		}
		if after := apiRequests(); len(after) != before {
			t.Errorf("the API server was asked %q", after[before:])
		}
	})

	otherCA := newTestCA(t, "another-client-ca")
	for _, tc := range []struct {
		name string
		kp   pki.KeyPair
	}{
		{name: "the allowed name from another CA", kp: issueClient(t, otherCA, kubeletClientName, false)},
		{name: "another name from the CA", kp: issueClient(t, clientCA, "system:admin", false)},
		{name: "the allowed name, not for client auth", kp: issueClient(t, clientCA, kubeletClientName, true)},
	} {
		t.Run(tc.name+": refused", func(t *testing.T) { refused(t, presenting(t, anonymous, tc.kp, false)) })
	}

	// A connection kept alive from before the bundle changes.
	kept := presenting(t, anonymous, issueClient(t, clientCA, kubeletClientName, false), true)
	if a, err := postReview(t, kept, base+MutatePath, rawPod); err != nil || a.status != http.StatusOK {
		t.Fatalf("before the new CA: %v %v", a, err)
	}
	newCA := newTestCA(t, "hosted-client-ca-2")
	writeFileAt(t, caFile, newCA.CertPEM, time.Now())
	newKubelet := presenting(t, anonymous, issueClient(t, newCA, kubeletClientName, false), false)

	t.Run("new CA without a restart: its client patched, the old one's refused", func(t *testing.T) {
		patched(t, newKubelet)
		refused(t, kubelet)
	})
	t.Run("new CA: the old client's kept connection is refused", func(t *testing.T) {
		a, err := postReview(t, kept, base+MutatePath, rawPod)
		if err != nil || !a.reused || a.status != http.StatusForbidden {
			t.Errorf("%v %v: want 403 on the kept connection", a, err)
		}
	})
	t.Run("half-written bundle: the last good one is kept", func(t *testing.T) {
		// The old CA back beside the new one, cut in the new one: read as
		// the certificates before the cut, it would trust the old CA only.
		both := append(append([]byte(nil), clientCA.CertPEM...), newCA.CertPEM...)
		writeFileAt(t, caFile, both[:len(both)-len(newCA.CertPEM)/2], time.Now().Add(time.Second))
		patched(t, newKubelet)
		refused(t, kubelet)
	})
}

// TestClientAuthVerify: which chains verify, with and without a list of
// names.
func TestClientAuthVerify(t *testing.T) {
	ca, other := newTestCA(t, "client-ca"), newTestCA(t, "other-ca")
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	writeFileAt(t, caFile, ca.CertPEM, time.Now())
	for _, tc := range []struct {
		name  string
		names []string
		kp    pki.KeyPair
		want  string // "" for verified
	}{
		{name: "allowed name", names: []string{"other", kubeletClientName}, kp: issueClient(t, ca, kubeletClientName, false)},
		{name: "no list: any name of the CA", kp: issueClient(t, ca, "anyone", false)},
		{name: "name not allowed", names: []string{kubeletClientName}, kp: issueClient(t, ca, "anyone", false), want: "not an allowed common name"},
		{name: "another CA", kp: issueClient(t, other, kubeletClientName, false), want: "unknown authority"},
		{name: "server certificate", kp: issueClient(t, ca, kubeletClientName, true), want: "incompatible key usage"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := newClientAuth(caFile, tc.names, logr.Discard())
			if err != nil {
				t.Fatal(err)
			}
			leaf, _, err := tc.kp.Parse()
			if err != nil {
				t.Fatal(err)
			}
			err = a.verify([]*x509.Certificate{leaf})
			if (tc.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.want) {
				t.Errorf("verify = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestReadCABundle: a bundle cut short or followed by anything is refused,
// not read as the certificates before the cut.
func TestReadCABundle(t *testing.T) {
	a, b := newTestCA(t, "a"), newTestCA(t, "b")
	both := append(append([]byte(nil), a.CertPEM...), b.CertPEM...)
	for _, tc := range []struct {
		name string
		data []byte
		want string // "" for read
	}{
		{name: "one", data: a.CertPEM},
		{name: "two", data: both},
		{name: "a key beside the certificate is skipped", data: append(append([]byte(nil), a.KeyPEM...), a.CertPEM...)},
		{name: "cut in the second block", data: both[:len(both)-20], want: "not PEM after certificate 1"},
		{name: "cut in the first block", data: a.CertPEM[:40], want: "not PEM after certificate 0"},
		{name: "text after", data: append(append([]byte(nil), a.CertPEM...), "junk"...), want: "not PEM after certificate 1"},
		{name: "empty", data: nil, want: "no certificate"},
		{name: "no certificate", data: a.KeyPEM, want: "no certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "ca.crt")
			writeFileAt(t, path, tc.data, time.Now())
			_, err := readCABundle(path)
			if (tc.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.want) {
				t.Errorf("readCABundle = %v, want %q", err, tc.want)
			}
		})
	}
}
