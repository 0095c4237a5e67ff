package bootstrap

import (
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestCheckNodeClientCSR(t *testing.T) {
	good := csrRequest{
		cn: "system:node:n1", o: "system:nodes",
		user: "system:bootstrap:abcdef", groups: []string{"system:bootstrappers", "system:bootstrappers:hypershift:p", "system:authenticated"},
		signer: certificatesv1.KubeAPIServerClientKubeletSignerName,
		usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
	}
	cases := []struct {
		name    string
		edit    func(r *csrRequest)
		wantErr string
	}{
		{"a pool token asks for a node", func(*csrRequest) {}, ""},
		{"with key encipherment (RSA kubelets)", func(r *csrRequest) { r.usages = append(r.usages, certificatesv1.UsageKeyEncipherment) }, ""},
		{"a node renews (not a bootstrap)", func(r *csrRequest) { r.user = "system:node:n1"; r.groups = []string{"system:nodes"} }, "not by a bootstrap token"},
		{"a token of no pool", func(r *csrRequest) { r.groups = []string{"system:bootstrappers"} }, "name no single NodePool"},
		{"a token of two pools", func(r *csrRequest) {
			r.groups = append(r.groups, "system:bootstrappers:hypershift:q")
		}, "name no single NodePool"},
		{"not a bootstrapper", func(r *csrRequest) { r.groups = []string{"system:bootstrappers:hypershift:p"} }, "not in group system:bootstrappers"},
		{"CN not a node", func(r *csrRequest) { r.cn = "admin" }, "subject CN"},
		{"O system:masters", func(r *csrRequest) { r.o = "system:masters" }, "subject O"},
		{"with a SAN", func(r *csrRequest) { r.dns = []string{"n1"} }, "no subject alternative names"},
		{"server usage", func(r *csrRequest) { r.usages = append(r.usages, certificatesv1.UsageServerAuth) }, `usage "server auth"`},
		{"no client auth", func(r *csrRequest) { r.usages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature} }, "client auth"},
		{"serving signer", func(r *csrRequest) { r.signer = certificatesv1.KubeletServingSignerName }, "signer"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := good
			r.groups = append([]string(nil), good.groups...)
			r.usages = append([]certificatesv1.KeyUsage(nil), good.usages...)
			tc.edit(&r)
			req, err := CheckNodeClientCSR(r.csr(t))
			checkVerdict(t, err, tc.wantErr)
			if tc.wantErr == "" && (req != NodeClientRequest{Node: "n1", Pool: "p", TokenID: "abcdef"}) {
				t.Fatalf("request %+v", req)
			}
		})
	}
}

func TestCheckPoolToken(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tok, err := NewToken(now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	secret := func(edit func(s *corev1.Secret)) *corev1.Secret {
		s := tok.AsSecret("p")
		s.Data = map[string][]byte{}
		for k, v := range s.StringData {
			s.Data[k] = []byte(v)
		}
		s.StringData = nil
		edit(s)
		return s
	}
	cases := []struct {
		name    string
		secret  *corev1.Secret
		at      time.Time
		wantErr string
	}{
		{"live token of the pool", secret(func(*corev1.Secret) {}), now, ""},
		{"expired", secret(func(*corev1.Secret) {}), now.Add(time.Hour), "expired"},
		{"another pool's", secret(func(s *corev1.Secret) { s.Data[keyExtraGroups] = []byte(PoolGroup("q")) }), now, "not a token of NodePool p"},
		{"not for authentication", secret(func(s *corev1.Secret) { s.Data[keyUsageAuth] = []byte("false") }), now, "may not authenticate"},
		{"being deleted", secret(func(s *corev1.Secret) { s.DeletionTimestamp = &metav1.Time{Time: now} }), now, "not a bootstrap token"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckPoolToken(tc.secret, "p", tc.at)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("want accepted, got %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("want %q, got %v", tc.wantErr, err)
			}
		})
	}
}

func TestApprovedBinding(t *testing.T) {
	csr := &certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{
		Request:    makeRequest(t, "system:node:n1", "system:nodes", nil, nil, nil),
		SignerName: certificatesv1.KubeAPIServerClientKubeletSignerName,
		Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
		Username:   "system:bootstrap:abcdef", Groups: []string{"system:bootstrappers", PoolGroup("p")},
	}}
	approve := func(reason string) certificatesv1.CertificateSigningRequestCondition {
		return certificatesv1.CertificateSigningRequestCondition{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: reason}
	}
	if _, _, ok := ApprovedBinding(csr); ok {
		t.Error("a pending CSR binds")
	}
	csr.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{approve("AutoApproved")}
	if _, _, ok := ApprovedBinding(csr); ok {
		t.Error("a CSR approved by someone else (the controller manager) binds")
	}
	csr.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{approve(ClientApprovalReason)}
	if req, _, ok := ApprovedBinding(csr); !ok || req.Node != "n1" || req.Pool != "p" {
		t.Errorf("the controller's approval binds %+v, %v; want n1 to p", req, ok)
	}
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{Type: certificatesv1.CertificateFailed, Status: corev1.ConditionTrue})
	if _, _, ok := ApprovedBinding(csr); ok {
		t.Error("a failed CSR binds")
	}
}
