package bootstrap

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net"
	"net/url"
	"strings"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestCheckServingCSR(t *testing.T) {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1"},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: "100.64.0.7"},
			{Type: corev1.NodeHostName, Address: "n1"},
		}},
	}
	record, _ := AddressRecord(node, nil)
	node.Labels = record
	// What the status says later does not count: 10.0.0.9 was not there
	// when the addresses were recorded.
	node.Status.Addresses = append(node.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.0.0.9"})
	serving := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}
	good := csrRequest{
		cn: "system:node:n1", o: "system:nodes", dns: []string{"n1"}, ips: []string{"100.64.0.7"},
		user: "system:node:n1", groups: []string{"system:nodes", "system:authenticated"},
		signer: certificatesv1.KubeletServingSignerName, usages: serving,
	}
	cases := []struct {
		name    string
		edit    func(r *csrRequest)
		wantErr string
	}{
		{"the node's own addresses", func(*csrRequest) {}, ""},
		{"only its IP", func(r *csrRequest) { r.dns = nil }, ""},
		{"another node asks", func(r *csrRequest) { r.user = "system:node:n2" }, `requested by "system:node:n2"`},
		{"a bootstrap token asks", func(r *csrRequest) { r.user = "system:bootstrap:abcdef"; r.groups = []string{"system:bootstrappers"} }, "requested by"},
		{"requester not in system:nodes", func(r *csrRequest) { r.groups = []string{"system:authenticated"} }, "not in group system:nodes"},
		{"wrong CN", func(r *csrRequest) { r.cn = "system:node:n2" }, "subject CN"},
		{"wrong O", func(r *csrRequest) { r.o = "system:masters" }, "subject O"},
		{"IP the node does not have", func(r *csrRequest) { r.ips = []string{"10.0.0.1"} }, "IP address 10.0.0.1 is not an address recorded for node n1"},
		{"IP its status claims since", func(r *csrRequest) { r.ips = []string{"10.0.0.9"} }, "IP address 10.0.0.9 is not an address recorded for node n1"},
		{"DNS name the node does not have", func(r *csrRequest) { r.dns = []string{"kubernetes.default"} }, `DNS name "kubernetes.default"`},
		{"URI SAN", func(r *csrRequest) { r.uris = []string{"spiffe://x"} }, "URI"},
		{"no SANs", func(r *csrRequest) { r.dns, r.ips = nil, nil }, "no DNS or IP"},
		{"client usage", func(r *csrRequest) { r.usages = append(r.usages, certificatesv1.UsageClientAuth) }, `usage "client auth"`},
		{"no server auth", func(r *csrRequest) { r.usages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature} }, "server auth"},
		{"another signer", func(r *csrRequest) { r.signer = certificatesv1.KubeAPIServerClientKubeletSignerName }, "signer"},
	}
	unrecorded := node.DeepCopy()
	unrecorded.Labels = nil
	checkVerdict(t, CheckServingCSR(good.csr(t), unrecorded), "not recorded yet")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := good
			r.dns = append([]string(nil), good.dns...)
			r.ips = append([]string(nil), good.ips...)
			r.usages = append([]certificatesv1.KeyUsage(nil), good.usages...)
			tc.edit(&r)
			checkVerdict(t, CheckServingCSR(r.csr(t), node), tc.wantErr)
		})
	}
}

// csrRequest is what a CSR in a test asks for: subject, SANs, requester,
// signer and usages.
type csrRequest struct {
	cn, o  string
	dns    []string
	ips    []string
	uris   []string
	user   string
	groups []string
	signer string
	usages []certificatesv1.KeyUsage
}

// csr is the CertificateSigningRequest asking for r, with a request signed
// by a fresh key.
func (r csrRequest) csr(t *testing.T) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	var ips []net.IP
	for _, s := range r.ips {
		ips = append(ips, net.ParseIP(s))
	}
	var uris []*url.URL
	for _, s := range r.uris {
		u, _ := url.Parse(s)
		uris = append(uris, u)
	}
	return &certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{
		Request:    makeRequest(t, r.cn, r.o, r.dns, ips, uris),
		SignerName: r.signer,
		Usages:     r.usages,
		Username:   r.user,
		Groups:     r.groups,
	}}
}

// checkVerdict fails unless err approves (wantErr empty) or refuses with
// an error containing wantErr.
func checkVerdict(t *testing.T, err error, wantErr string) {
	t.Helper()
	switch {
	case wantErr == "" && err != nil:
		t.Fatalf("want approval, got %v", err)
	case wantErr != "" && err == nil:
		t.Fatalf("want refusal %q, got approval", wantErr)
	case wantErr != "" && !strings.Contains(err.Error(), wantErr):
		t.Fatalf("want refusal %q, got %v", wantErr, err)
	}
}

func TestNodeNameOf(t *testing.T) {
	for user, want := range map[string]string{"system:node:a": "a", "system:node:": "", "system:bootstrap:x": "", "": ""} {
		csr := &certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{Username: user}}
		if got := NodeNameOf(csr); got != want {
			t.Errorf("NodeNameOf(%q) = %q, want %q", user, got, want)
		}
	}
}

func makeRequest(t *testing.T, cn, o string, dns []string, ips []net.IP, uris []*url.URL) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject:     pkix.Name{CommonName: cn, Organization: []string{o}},
		DNSNames:    dns,
		IPAddresses: ips,
		URIs:        uris,
	}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

// The record keeps a node's status addresses, normalised, once each, at
// most MaxRecordedAddresses, leaving out those another node recorded.
func TestAddressRecord(t *testing.T) {
	addr := func(a string) corev1.NodeAddress { return corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: a} }
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n2"},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{
			addr("10.0.0.2"), addr("10.0.0.1"), addr("10.0.0.2"), addr("fd00:0::7"),
			{Type: corev1.NodeHostName, Address: "n2"},
			addr("10.0.0.3"), addr("10.0.0.4"),
		}},
	}
	labels, refused := AddressRecord(node, map[string]string{"10.0.0.1": "n1", "n2": "n2"})
	node.Labels = labels
	got, ok := RecordedAddresses(node)
	if want := []string{"10.0.0.2", "fd00::7", "n2", "10.0.0.3"}; !ok || strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("recorded %v (%v), want %v", got, ok, want)
	}
	if want := []string{"10.0.0.1", "10.0.0.4"}; strings.Join(refused, " ") != strings.Join(want, " ") {
		t.Errorf("refused %v, want %v (taken by n1; over the limit)", refused, want)
	}
	if by := RecordedBy([]*corev1.Node{node}); by["fd00::7"] != "n2" || len(by) != 4 {
		t.Errorf("RecordedBy = %v", by)
	}
	// A record of none is a record: the node asked for addresses others hold.
	none := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n3"}, Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{addr("10.0.0.1")}}}
	none.Labels, _ = AddressRecord(none, map[string]string{"10.0.0.1": "n1"})
	if got, ok := RecordedAddresses(none); !ok || len(got) != 0 {
		t.Errorf("a node whose only address is taken: recorded %v (%v), want an empty record", got, ok)
	}
	for _, bad := range []string{"", "x", "-1", "9"} {
		if _, ok := RecordedAddresses(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{AddressCountLabel: bad}}}); ok {
			t.Errorf("count label %q read as a record", bad)
		}
	}
}
