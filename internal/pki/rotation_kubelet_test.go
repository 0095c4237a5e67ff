package pki

import (
	"bytes"
	"crypto/x509"
	"testing"
	"time"
)

// The kubelet CA is trusted by the API server, which reads it only at
// start, and signs the kubelets' serving certificates through the
// controller manager, without a chain. Per phase: which CA signs, what the
// API server's bundle and its hashed oldest CA hold, that a serving
// certificate of the new CA with the published cross-signed CA verifies
// against the old CA alone (an API server not restarted yet) and against
// the new bundle, and that one of the old CA is refused after DropOld.
func TestKubeletCARotation(t *testing.T) {
	store := FileStore{Dir: t.TempDir()}
	opts := ControlPlaneOptions{Renew: true, LeafValidity: time.Hour, CAValidity: 2 * time.Hour}
	ensure := func() *ControlPlane {
		t.Helper()
		cp, err := EnsureControlPlane(store, opts)
		if err != nil {
			t.Fatal(err)
		}
		return cp
	}
	// A kubelet serving certificate as the controller manager's
	// kubelet-serving signer makes it: the leaf alone.
	serving := func(cp *ControlPlane) []byte {
		t.Helper()
		kp, err := Issue(cp.KubeletCA, CertRequest{CommonName: "system:node:n1", Organization: []string{"system:nodes"}, DNSNames: []string{"n1"}, Server: true})
		if err != nil {
			t.Fatal(err)
		}
		return firstCertificate(kp.CertPEM)
	}
	accepts := func(bundle, chain []byte) bool { return verifies(t, chain, bundle, x509.ExtKeyUsageServerAuth) }

	before := ensure()
	oldCA, oldServing := before.KubeletCA.CertPEM, serving(before)
	if cross, err := before.CrossSignedCA(KubeletCAName, nil); err != nil || cross != nil {
		t.Fatalf("without a rotation a cross-signed kubelet CA is published: %v", err)
	}

	// TrustBoth: the old CA signs; the bundle holds both, the API server
	// keeps running with the old CA alone (the oldest is unchanged).
	if err := StartCARotation(store, RotatedCANames(), time.Hour, time.Now()); err != nil {
		t.Fatal(err)
	}
	both := ensure()
	newCA := both.Next[KubeletCAName].CertPEM
	if !bytes.Equal(both.KubeletCA.CertPEM, oldCA) || len(newCA) == 0 || certificateCount(both.Bundle(KubeletCAName)) != 2 {
		t.Fatal("TrustBoth changed the signing kubelet CA, made no new one, or its bundle is not old + new")
	}
	if !bytes.Equal(both.OldestTrusted(KubeletCAName), oldCA) {
		t.Fatal("TrustBoth changed the kubelet CA the API server is restarted for")
	}

	// ReissueLeaves: the new CA signs (the controller manager's pair); a
	// serving certificate of it with the cross-signed CA verifies against
	// the old CA alone.
	if err := PromoteNextCAs(store, RotatedCANames()); err != nil {
		t.Fatal(err)
	}
	reissued := ensure()
	if !bytes.Equal(reissued.KubeletCA.CertPEM, newCA) || !bytes.Equal(reissued.OldestTrusted(KubeletCAName), oldCA) {
		t.Fatal("ReissueLeaves did not make the new kubelet CA the signing one, or changed the oldest trusted")
	}
	cross, err := reissued.CrossSignedCA(KubeletCAName, nil)
	if err != nil || cross == nil {
		t.Fatalf("no cross-signed kubelet CA in ReissueLeaves: %v", err)
	}
	if again, err := reissued.CrossSignedCA(KubeletCAName, cross); err != nil || !bytes.Equal(again, cross) {
		t.Fatal("the published cross-signed kubelet CA is replaced although it is still right")
	}
	if other, _ := reissued.CrossSignedCA(KubeletCAName, oldCA); bytes.Equal(other, oldCA) {
		t.Fatal("the old CA itself was taken for the cross-signed one")
	}
	newServing := serving(reissued)
	chained := append(append([]byte(nil), newServing...), cross...)
	if accepts(oldCA, newServing) {
		t.Fatal("test premise: a serving certificate of the new CA alone verifies against the old CA")
	}
	if !accepts(oldCA, chained) || !accepts(reissued.Bundle(KubeletCAName), chained) || !accepts(newCA, chained) {
		t.Fatal("a serving certificate of the new kubelet CA with the cross-signed CA does not verify against the old CA, the bundle and the new CA")
	}

	// DropOld: the new CA alone; the API servers restart (the oldest
	// changed), held ones keep the dropped CA.
	if err := DropPreviousCAs(store, RotatedCANames()); err != nil {
		t.Fatal(err)
	}
	dropped := ensure()
	alone := dropped.Bundle(KubeletCAName)
	if !bytes.Equal(alone, newCA) || !bytes.Equal(dropped.OldestTrusted(KubeletCAName), newCA) {
		t.Fatal("after DropOld the kubelet CA bundle or oldest trusted is not the new CA alone")
	}
	if accepts(alone, oldServing) {
		t.Fatal("after DropOld a kubelet serving certificate of the old CA is accepted")
	}
	if !accepts(alone, chained) || !accepts(alone, newServing) {
		t.Fatal("after DropOld a kubelet serving certificate of the new CA is refused")
	}
	if !bytes.Equal(dropped.Dropped[KubeletCAName].CertPEM, oldCA) {
		t.Fatal("DropOld did not keep the dropped kubelet CA for the API servers not yet restarted")
	}
	if c, err := dropped.CrossSignedCA(KubeletCAName, cross); err != nil || c != nil {
		t.Fatal("after DropOld the cross-signed kubelet CA is still published")
	}

	// Done: the dropped certificate goes.
	if _, err := StripCrossSignedChains(store, ReadOnceCANames()); err != nil {
		t.Fatal(err)
	}
	if _, ok := ensure().Dropped[KubeletCAName]; ok {
		t.Fatal("after Done the dropped kubelet CA is still kept")
	}
}
