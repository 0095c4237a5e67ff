package cli

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/pki"
)

// TestDescribeDataPlane: describe lists the objects the control plane keeps
// in the hosted cluster with their health, and says when there are none.
func TestDescribeDataPlane(t *testing.T) {
	hc := &hypershiftv1alpha1.HostedCluster{}
	hc.Name, hc.Namespace = "a", "clusters"
	for _, tc := range []struct {
		name      string
		dataPlane []hypershiftv1alpha1.DataPlaneObjectStatus
		want      []string
	}{
		{"none yet", nil, []string{
			`\nComponents:\n  \(none reported yet\)\n`,
			`\nData plane \(objects in the hosted cluster\):\n  \(none applied yet\)\n`,
			`\nEvents:\n  \(none\)\n`,
		}},
		{"objects", []hypershiftv1alpha1.DataPlaneObjectStatus{
			{Kind: "ClusterRoleBinding", Name: "hypershift:node-proxier", Healthy: true},
			{Kind: "Deployment", Namespace: "kube-system", Name: "coredns", Ready: "0/2", Message: "0 of 2 replicas available (2 updated)"},
		}, []string{
			`KIND +NAMESPACE +NAME +READY +HEALTHY +MESSAGE`,
			`ClusterRoleBinding +- +hypershift:node-proxier +- +yes +-\n`,
			`Deployment +kube-system +coredns +0/2 +no +0 of 2 replicas available \(2 updated\)\n`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hcp := &hypershiftv1alpha1.HostedControlPlane{}
			hcp.Status.DataPlane = tc.dataPlane
			var out bytes.Buffer
			if err := printDescription(&out, hc, hcp, nil); err != nil {
				t.Fatal(err)
			}
			for _, pattern := range tc.want {
				if !regexp.MustCompile(pattern).Match(out.Bytes()) {
					t.Errorf("describe does not match %q:\n%s", pattern, out.String())
				}
			}
		})
	}
}

// TestDescribeVersionHistory: describe lists the version history, newest
// first, with each entry's state and times.
func TestDescribeVersionHistory(t *testing.T) {
	hc := &hypershiftv1alpha1.HostedCluster{}
	hc.Name, hc.Namespace = "a", "clusters"
	t0 := metav1.NewTime(time.Date(2026, 11, 24, 6, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(90 * time.Second))
	hc.Status.VersionHistory = []hypershiftv1alpha1.VersionHistory{
		{Version: "v1.37.1", State: hypershiftv1alpha1.PartialVersion, StartedTime: t1},
		{Version: "v1.36.3", State: hypershiftv1alpha1.CompletedVersion, StartedTime: t0, CompletionTime: &t1},
	}
	hcp := &hypershiftv1alpha1.HostedControlPlane{}
	hcp.Status.Components = []hypershiftv1alpha1.ComponentStatus{{Name: "kube-apiserver", Phase: hypershiftv1alpha1.ComponentRunning, Version: "v1.36.3"}}
	var out bytes.Buffer
	if err := printDescription(&out, hc, hcp, nil); err != nil {
		t.Fatal(err)
	}
	for _, pattern := range []string{
		`\nVersion history:\n  VERSION +STATE +STARTED +COMPLETED\n  v1\.37\.1 +Partial +2026-11-24T06:01:30Z +-\n  v1\.36\.3 +Completed +2026-11-24T06:00:00Z +2026-11-24T06:01:30Z\n`,
		`kube-apiserver +Running +0 +0 +- +- +v1\.36\.3\n`,
	} {
		if !regexp.MustCompile(pattern).Match(out.Bytes()) {
			t.Errorf("describe does not match %q:\n%s", pattern, out.String())
		}
	}
}

func TestDescribeCertificates(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var out bytes.Buffer
	err := printCertificates(&out, []pki.CertificateStatus{
		{Name: "root-ca", CA: true, NotAfter: now.Add(10 * 365 * 24 * time.Hour)},
		{Name: "kube-apiserver-server", NotAfter: now.Add(3 * time.Minute), RenewAt: now.Add(time.Minute)},
	}, now)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Certificates:",
		"root-ca                CA    2035-12-30T00:00:00Z (in 10y)  - (`hypershift rotate ca`)",
		"kube-apiserver-server  leaf  2026-01-01T00:03:00Z (in 3m)   2026-01-01T00:01:00Z (in 60s)",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("describe shows\n%s\nwant a line %q", out.String(), want)
		}
	}
}

// TestDescribeIssuer: describe names the issuer, its key ids, where the
// documents are published and the signing key's Secret.
func TestDescribeIssuer(t *testing.T) {
	hc := &hypershiftv1alpha1.HostedCluster{}
	hc.Name, hc.Namespace = "a", "clusters"
	hc.Spec.IssuerURL = "https://oidc.example.com/a"
	hc.Spec.ServiceAccountSigningKey = &corev1.LocalObjectReference{Name: "sa-key"}
	hc.Spec.OIDCPublishing = &hypershiftv1alpha1.OIDCPublishingSpec{StorageURL: "s3://oidc/a", KeepOnDelete: true}
	at := metav1.NewTime(time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC))
	hc.Status.ServiceAccountIssuer = &hypershiftv1alpha1.ServiceAccountIssuerStatus{
		IssuerURL: "https://oidc.example.com/a", KeyIDs: []string{"kid-1", "kid-2"}, StorageURL: "s3://oidc/a", PublishedAt: &at,
	}
	var out bytes.Buffer
	if err := printDescription(&out, hc, &hypershiftv1alpha1.HostedControlPlane{}, nil); err != nil {
		t.Fatal(err)
	}
	for _, pattern := range []string{
		`Service-account issuer: +https://oidc\.example\.com/a\n`,
		`  key ids: +kid-1, kid-2\n`,
		`  published to: +s3://oidc/a \(last 2026-12-01T06:00:00Z, kept on delete\)\n`,
		`  signing key: +Secret clusters/sa-key\n`,
	} {
		if !regexp.MustCompile(pattern).Match(out.Bytes()) {
			t.Errorf("describe does not match %q:\n%s", pattern, out.String())
		}
	}
}
