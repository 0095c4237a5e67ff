package pki

import (
	"bytes"
	"crypto/x509"
	"slices"
	"testing"
	"time"
)

// verifies says whether leaf (with the intermediates it carries) verifies
// against the roots in bundle for usage.
func verifies(t *testing.T, leafPEM, bundle []byte, usage x509.ExtKeyUsage) bool {
	t.Helper()
	leaf, err := ParseCertificate(leafPEM)
	if err != nil {
		t.Fatal(err)
	}
	roots, inter := x509.NewCertPool(), x509.NewCertPool()
	if !roots.AppendCertsFromPEM(bundle) {
		t.Fatal("empty bundle")
	}
	inter.AppendCertsFromPEM(leafPEM[len(firstCertificate(leafPEM)):])
	_, err = leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{usage}})
	return err == nil
}

func TestCARotationKeepsOldTrustUntilDropped(t *testing.T) {
	store := FileStore{Dir: t.TempDir()}
	opts := ControlPlaneOptions{Renew: true, LeafValidity: time.Hour, CAValidity: 2 * time.Hour}
	before, err := EnsureControlPlane(store, opts)
	if err != nil {
		t.Fatal(err)
	}
	oldRoot, oldClient := before.RootCA.CertPEM, before.ClientCA.CertPEM
	oldServing, oldAdmin := before.KubeAPIServer.CertPEM, before.Admin.CertPEM
	oldEtcdCA, oldEtcdClient := before.EtcdCA.CertPEM, before.EtcdClient.CertPEM
	if !bytes.Equal(before.Bundle(RootCAName), oldRoot) {
		t.Fatal("without a rotation the bundle is not the CA alone")
	}

	// TrustBoth: bundles hold both CAs; nothing is reissued.
	if err := StartCARotation(store, RotatedCANames(), time.Hour, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := StartCARotation(store, RotatedCANames(), time.Hour, time.Now()); err != nil {
		t.Fatal("a repeated start:", err)
	}
	both, err := EnsureControlPlane(store, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(both.Renewed) != 0 {
		t.Fatalf("trusting a new CA reissued %v", both.Renewed)
	}
	newRoot := both.Next[RootCAName].CertPEM
	if n := certificateCount(both.Bundle(RootCAName)); n != 2 {
		t.Fatalf("TrustBoth root bundle has %d certificates, want 2", n)
	}
	if !bytes.Equal(both.RootCA.CertPEM, oldRoot) {
		t.Fatal("TrustBoth changed the signing root CA")
	}

	// ReissueLeaves: the new CAs sign; every leaf of a rotated CA is
	// reissued, the others are kept.
	if err := PromoteNextCAs(store, RotatedCANames()); err != nil {
		t.Fatal(err)
	}
	if err := PromoteNextCAs(store, RotatedCANames()); err != nil {
		t.Fatal("a repeated promotion:", err)
	}
	reissued, err := EnsureControlPlane(store, opts)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		EtcdServerName, EtcdPeerName, EtcdClientName,
		KubeAPIServerName, KubeAPIServerKubeletName, FrontProxyClientName, AdminName, KubeControllerManagerName, KubeSchedulerName,
		KonnectivityServerName, KonnectivityAgentName, KonnectivityServerClientName, WorkloadIdentityWebhookName,
	}
	if !slices.Equal(reissued.Renewed, want) {
		t.Fatalf("reissued %v, want %v", reissued.Renewed, want)
	}
	if !bytes.Equal(reissued.RootCA.CertPEM, newRoot) || len(reissued.Next) != 0 {
		t.Fatal("the successor did not become the signing CA")
	}
	bundle := reissued.Bundle(RootCAName)
	for name, trust := range map[string][]byte{"old root": oldRoot, "new root": newRoot, "both": bundle} {
		if !verifies(t, reissued.KubeAPIServer.CertPEM, trust, x509.ExtKeyUsageServerAuth) {
			t.Errorf("the reissued serving certificate does not verify against the %s", name)
		}
	}
	// The old admin certificate is still accepted; the new one too.
	clientBundle := reissued.Bundle(ClientCAName)
	if !verifies(t, oldAdmin, clientBundle, x509.ExtKeyUsageClientAuth) || !verifies(t, reissued.Admin.CertPEM, clientBundle, x509.ExtKeyUsageClientAuth) {
		t.Fatal("during ReissueLeaves the client bundle does not accept the old and the new admin certificate")
	}
	// etcd and the API server hold the old etcd CA alone until DropOld
	// restarts them: every etcd leaf, client ones too, verifies against it
	// through the cross-signed chain, and against the new CA.
	newEtcdCA := reissued.EtcdCA.CertPEM
	for _, c := range []struct {
		name  string
		kp    KeyPair
		usage x509.ExtKeyUsage
	}{
		{"server", reissued.EtcdServer, x509.ExtKeyUsageServerAuth},
		{"peer (as server)", reissued.EtcdPeer, x509.ExtKeyUsageServerAuth},
		{"peer (as client)", reissued.EtcdPeer, x509.ExtKeyUsageClientAuth},
		{"client", reissued.EtcdClient, x509.ExtKeyUsageClientAuth},
	} {
		if !verifies(t, c.kp.CertPEM, oldEtcdCA, c.usage) || !verifies(t, c.kp.CertPEM, newEtcdCA, c.usage) {
			t.Errorf("the reissued etcd %s certificate does not verify against the old etcd CA alone and the new one", c.name)
		}
	}
	if !verifies(t, oldEtcdClient, reissued.Bundle(EtcdCAName), x509.ExtKeyUsageClientAuth) {
		t.Error("during ReissueLeaves the etcd bundle refuses the old etcd client certificate")
	}
	if !verifies(t, reissued.KonnectivityServer.CertPEM, before.KonnectivityCA.CertPEM, x509.ExtKeyUsageServerAuth) {
		t.Error("the reissued Konnectivity server certificate does not verify against the old Konnectivity CA")
	}
	again, err := EnsureControlPlane(store, opts)
	if err != nil || len(again.Renewed) != 0 {
		t.Fatalf("a second pass reissued %v (%v)", again.Renewed, err)
	}

	// DropOld: only the new CAs; the serving certificate loses its chain.
	if err := DropPreviousCAs(store, RotatedCANames()); err != nil {
		t.Fatal(err)
	}
	dropped, err := EnsureControlPlane(store, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(dropped.Renewed, []string{KubeAPIServerName, KonnectivityServerName}) {
		t.Fatalf("dropping the old CAs reissued %v, want only the chained serving certificates", dropped.Renewed)
	}
	if certificateCount(dropped.KubeAPIServer.CertPEM) != 1 || certificateCount(dropped.Bundle(RootCAName)) != 1 {
		t.Fatal("after DropOld the serving chain or the bundle still holds the old CA")
	}
	if verifies(t, dropped.KubeAPIServer.CertPEM, oldRoot, x509.ExtKeyUsageServerAuth) {
		t.Fatal("after DropOld the serving certificate still verifies against the old root")
	}
	if verifies(t, oldAdmin, dropped.Bundle(ClientCAName), x509.ExtKeyUsageClientAuth) {
		t.Fatal("after DropOld the old admin certificate is still accepted")
	}
	if bytes.Equal(dropped.ClientCA.CertPEM, oldClient) || bytes.Equal(oldServing, dropped.KubeAPIServer.CertPEM) {
		t.Fatal("the client CA or serving certificate was not replaced")
	}
	if _, ok, _ := store.Get(PreviousName(ClientCAName)); ok {
		t.Fatal("the old client CA's key pair is still stored")
	}
	if verifies(t, oldEtcdClient, dropped.Bundle(EtcdCAName), x509.ExtKeyUsageClientAuth) || certificateCount(dropped.Bundle(EtcdCAName)) != 1 {
		t.Fatal("after DropOld the etcd bundle still accepts a certificate of the old etcd CA")
	}
	if !bytes.Equal(dropped.Dropped[EtcdCAName].CertPEM, oldEtcdCA) || !bytes.Equal(dropped.Dropped[KubeletCAName].CertPEM, before.KubeletCA.CertPEM) || len(dropped.Dropped) != 2 {
		t.Fatal("DropOld did not keep the dropped etcd and kubelet CAs' certificates (alone) for the instances not yet restarted")
	}
	if !bytes.Equal(dropped.EtcdClient.CertPEM, reissued.EtcdClient.CertPEM) {
		t.Fatal("DropOld took the etcd leaves' chain while etcd members and API servers may still hold the old CA alone")
	}

	// Once every consumer runs with the new bundle, the chains go; the
	// leaves themselves stay.
	stripped, err := StripCrossSignedChains(store, RotatedCANames())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(stripped, []string{EtcdServerName, EtcdPeerName, EtcdClientName}) {
		t.Fatalf("stripped the chains of %v, want the etcd leaves", stripped)
	}
	done, err := EnsureControlPlane(store, opts)
	if err != nil || len(done.Renewed) != 0 {
		t.Fatalf("after the chains were stripped EnsureControlPlane reissued %v (%v)", done.Renewed, err)
	}
	if len(done.Dropped) != 0 {
		t.Fatal("the dropped etcd CA's certificate is still stored once the chains are stripped")
	}
	if !bytes.Equal(done.EtcdClient.KeyPEM, reissued.EtcdClient.KeyPEM) || !bytes.Equal(done.EtcdClient.CertPEM, firstCertificate(reissued.EtcdClient.CertPEM)) {
		t.Fatal("StripCrossSignedChains changed the etcd client certificate or key, not only its chain")
	}
	for name, kp := range map[string]KeyPair{"server": done.EtcdServer, "client": done.EtcdClient} {
		if certificateCount(kp.CertPEM) != 1 {
			t.Errorf("the etcd %s certificate after StripCrossSignedChains: %d certificates", name, certificateCount(kp.CertPEM))
		}
		if verifies(t, kp.CertPEM, oldEtcdCA, x509.ExtKeyUsageClientAuth) {
			t.Errorf("the etcd %s certificate still verifies against the dropped etcd CA", name)
		}
		if !verifies(t, kp.CertPEM, done.Bundle(EtcdCAName), x509.ExtKeyUsageClientAuth) {
			t.Errorf("the etcd %s certificate does not verify against the new etcd bundle", name)
		}
	}
}

// A second rotation starts from what the first left: one generation per
// CA, nothing left over.
func TestCARotationRepeats(t *testing.T) {
	store := FileStore{Dir: t.TempDir()}
	opts := ControlPlaneOptions{Renew: true}
	var roots [][]byte
	for range 3 {
		cp, err := EnsureControlPlane(store, opts)
		if err != nil {
			t.Fatal(err)
		}
		roots = append(roots, cp.RootCA.CertPEM)
		for _, step := range []func() error{
			func() error { return StartCARotation(store, RotatedCANames(), 0, time.Now()) },
			func() error { return PromoteNextCAs(store, RotatedCANames()) },
			func() error { return DropPreviousCAs(store, RotatedCANames()) },
			func() error { _, err := StripCrossSignedChains(store, RotatedCANames()); return err },
		} {
			if err := step(); err != nil {
				t.Fatal(err)
			}
			if _, err := EnsureControlPlane(store, opts); err != nil {
				t.Fatal(err)
			}
		}
	}
	cp, err := EnsureControlPlane(store, opts)
	if err != nil {
		t.Fatal(err)
	}
	for i, old := range roots {
		if bytes.Equal(old, cp.RootCA.CertPEM) {
			t.Fatalf("rotation %d left the root CA as it was", i+1)
		}
	}
	if len(cp.Next) != 0 || len(cp.Previous) != 0 || certificateCount(cp.Bundle(RootCAName)) != 1 {
		t.Fatalf("after three rotations: next %d, previous %d, root bundle of %d", len(cp.Next), len(cp.Previous), certificateCount(cp.Bundle(RootCAName)))
	}
	if !signedBy(cp.Admin, cp.ClientCA) || certificateCount(cp.KubeAPIServer.CertPEM) != 1 ||
		!signedBy(cp.EtcdPeer, cp.EtcdCA) || certificateCount(cp.EtcdPeer.CertPEM) != 1 {
		t.Fatal("the leaves are not those of the last CAs")
	}
}
