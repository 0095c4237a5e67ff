package pki

import (
	"bytes"
	"net"
	"slices"
	"testing"
	"time"
)

func TestLeavesRenewAtTwoThirdsOfTheirLife(t *testing.T) {
	store := FileStore{Dir: t.TempDir()}
	const validity = 3 * time.Minute
	issued := time.Now()
	opts := ControlPlaneOptions{LeafValidity: validity, CAValidity: time.Hour, Renew: true}
	first, err := EnsureControlPlane(store, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Renewed) != 0 {
		t.Fatalf("a new PKI renewed %v", first.Renewed)
	}
	cert, err := ParseCertificate(first.KubeAPIServer.CertPEM)
	if err != nil {
		t.Fatal(err)
	}
	// Backdated by a tenth of a short validity, valid for validity from issuance.
	if life := cert.NotAfter.Sub(cert.NotBefore); life != validity+validity/10 {
		t.Fatalf("leaf life %v, want %v", life, validity+validity/10)
	}
	ca, err := ParseCertificate(first.RootCA.CertPEM)
	if err != nil {
		t.Fatal(err)
	}
	if got := ca.NotAfter.Sub(issued); got < 59*time.Minute || got > time.Hour+time.Minute {
		t.Fatalf("CA valid for %v after issuance, want the configured hour", got)
	}
	renewAt := RenewAt(cert)
	if want := cert.NotBefore.Add((validity + validity/10) * 2 / 3); !renewAt.Equal(want) {
		t.Fatalf("RenewAt %v, want %v", renewAt, want)
	}
	// The leaves were issued one after another (seconds apart on a busy
	// machine): just before the first one's renewal time, none is due;
	// just after the last one's, all are.
	first0, last0 := renewAt, renewAt
	for _, kp := range []KeyPair{
		first.EtcdServer, first.EtcdPeer, first.EtcdClient, first.KubeAPIServer, first.KubeAPIServerKubeletClient,
		first.FrontProxyClient, first.Admin, first.KubeControllerManager, first.KubeScheduler, first.KonnectivityServer, first.KonnectivityAgent,
		first.KonnectivityServerClient,
	} {
		c, err := ParseCertificate(kp.CertPEM)
		if err != nil {
			t.Fatal(err)
		}
		if at := RenewAt(c); at.Before(first0) {
			first0 = at
		} else if at.After(last0) {
			last0 = at
		}
	}

	opts.Now = first0.Add(-time.Second)
	before, err := EnsureControlPlane(store, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(before.Renewed) != 0 || !bytes.Equal(before.KubeAPIServer.CertPEM, first.KubeAPIServer.CertPEM) {
		t.Fatalf("renewed before two thirds of the life: %v", before.Renewed)
	}

	opts.Now = last0.Add(time.Second)
	after, err := EnsureControlPlane(store, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(after.Renewed, LeafNames()) {
		t.Fatalf("renewed %v, want every leaf %v", after.Renewed, LeafNames())
	}
	for name, pair := range map[string][2]KeyPair{
		"root CA":             {first.RootCA, after.RootCA},
		"etcd CA":             {first.EtcdCA, after.EtcdCA},
		"service-account key": {first.ServiceAccountKey, after.ServiceAccountKey},
	} {
		if !bytes.Equal(pair[0].CertPEM, pair[1].CertPEM) || !bytes.Equal(pair[0].KeyPEM, pair[1].KeyPEM) {
			t.Errorf("%s changed on renewal", name)
		}
	}
	renewed, err := ParseCertificate(after.KubeAPIServer.CertPEM)
	if err != nil {
		t.Fatal(err)
	}
	if renewed.SerialNumber.Cmp(cert.SerialNumber) == 0 || !slices.Equal(renewed.DNSNames, cert.DNSNames) {
		t.Fatalf("renewed serving certificate: serial %v (was %v), names %v (were %v)", renewed.SerialNumber, cert.SerialNumber, renewed.DNSNames, cert.DNSNames)
	}
	if err := renewed.CheckSignatureFrom(ca); err != nil {
		t.Fatalf("renewed certificate not signed by the same CA: %v", err)
	}
	// What was stored is what was returned: readers see the renewal.
	reread, err := EnsureControlPlane(store, ControlPlaneOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(reread.Admin.CertPEM, after.Admin.CertPEM) {
		t.Fatal("the renewed admin certificate was not stored")
	}
	// Only the owner renews.
	opts.Now, opts.Renew = renewAt.Add(time.Hour), false
	reader, err := EnsureControlPlane(readOnly{store}, opts)
	if err != nil || len(reader.Renewed) != 0 {
		t.Fatalf("a reader renewed %v (%v)", reader.Renewed, err)
	}
}

func TestInspectListsEveryCertificate(t *testing.T) {
	store := FileStore{Dir: t.TempDir()}
	if _, err := EnsureControlPlane(store, ControlPlaneOptions{LeafValidity: time.Hour}); err != nil {
		t.Fatal(err)
	}
	certs, err := Inspect(store)
	if err != nil {
		t.Fatal(err)
	}
	if want := len(CANames()) + len(LeafNames()); len(certs) != want {
		t.Fatalf("%d certificates, want %d", len(certs), want)
	}
	for _, c := range certs {
		if c.CA != c.RenewAt.IsZero() {
			t.Errorf("%s: CA %v but RenewAt %v", c.Name, c.CA, c.RenewAt)
		}
	}
	next := NextRenewal(certs)
	if d := time.Until(next); d < 35*time.Minute || d > 40*time.Minute {
		t.Fatalf("next renewal in %v, want about 2/3 of an hour and 6 minutes", d)
	}
}

// A serving certificate that does not cover a name or address now asked
// for (the endpoint changed, or the PKI was restored on another management
// plane) is reissued by the owner with the same CA; one that covers them is
// kept, and a reader reissues nothing.
func TestServingCertificatesFollowTheEndpoint(t *testing.T) {
	store := FileStore{Dir: t.TempDir()}
	opts := ControlPlaneOptions{APIServerIPs: []net.IP{net.ParseIP("192.0.2.2")}, APIServerDNSNames: []string{"kube-apiserver"}, EtcdDNSNames: []string{"etcd-0.etcd"}, Renew: true}
	first, err := EnsureControlPlane(store, opts)
	if err != nil {
		t.Fatal(err)
	}
	same, err := EnsureControlPlane(store, opts)
	if err != nil || len(same.Renewed) != 0 {
		t.Fatalf("the same endpoint reissued %v (%v)", same.Renewed, err)
	}

	opts.APIServerIPs = []net.IP{net.ParseIP("127.0.0.1")}
	if reader, err := EnsureControlPlane(readOnly{store}, ControlPlaneOptions{APIServerIPs: opts.APIServerIPs}); err != nil || len(reader.Renewed) != 0 {
		t.Fatalf("a reader reissued %v (%v)", reader.Renewed, err)
	}
	moved, err := EnsureControlPlane(store, opts)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{KubeAPIServerName, KonnectivityServerName}; !slices.Equal(moved.Renewed, want) {
		t.Fatalf("a new endpoint reissued %v, want %v", moved.Renewed, want)
	}
	cert, err := ParseCertificate(moved.KubeAPIServer.CertPEM)
	if err != nil {
		t.Fatal(err)
	}
	if err := cert.VerifyHostname("127.0.0.1"); err != nil {
		t.Errorf("reissued serving certificate: %v", err)
	}
	if !SignedBy(moved.KubeAPIServer, first.RootCA) {
		t.Error("the reissued serving certificate is not signed by the same CA")
	}
	if again, err := EnsureControlPlane(store, opts); err != nil || len(again.Renewed) != 0 {
		t.Fatalf("reissued again %v (%v)", again.Renewed, err)
	}

	opts.EtcdDNSNames = []string{"etcd-0.etcd.clusters-b.svc"}
	renamed, err := EnsureControlPlane(store, opts)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{EtcdServerName, EtcdPeerName}; !slices.Equal(renamed.Renewed, want) {
		t.Fatalf("new etcd names reissued %v, want %v", renamed.Renewed, want)
	}
}
