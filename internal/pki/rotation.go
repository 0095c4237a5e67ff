package pki

import (
	"bytes"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"time"
)

// A root-CA rotation (docs/security.md, "CA rotation") keeps up to three
// generations of a CA, each a key pair of its own name:
//
//	NAME           the CA that signs
//	NAME-next      a new CA, trusted but not yet signing   (TrustBoth)
//	NAME-previous  the replaced CA, still trusted          (ReissueLeaves…DropOld)
//
// Trust bundles (ControlPlane.Bundle) hold every generation present, so
// what is trusted follows from the stored key pairs alone: every reader of
// the PKI renders the same bundles without knowing the rotation's phase.
const (
	nextSuffix     = "-next"
	previousSuffix = "-previous"
)

// DroppedName holds, from DropOld until the rotation is Done, the
// certificate (no key) of a ReadOnceCANames CA that was dropped: the CA
// that instances not yet restarted with the new bundle still hold, so that
// a highly available control plane restarts them one at a time
// (components.readOnceTrust). It is in no bundle.
func DroppedName(ca string) string { return ca + "-dropped" }

// NextName is the key pair of CA ca's successor during a rotation.
func NextName(ca string) string { return ca + nextSuffix }

// PreviousName is the key pair of the CA ca replaced, until it is dropped.
func PreviousName(ca string) string { return ca + previousSuffix }

// RotatedCANames are the CAs a root-CA rotation replaces: every CA of a
// control plane (docs/security.md, "Which CAs").
func RotatedCANames() []string {
	return []string{RootCAName, ClientCAName, FrontProxyCAName, EtcdCAName, KonnectivityCAName, KubeletCAName}
}

// ReadOnceCANames are the rotated CAs some consumer reads only at start:
// etcd's --trusted-ca-file and the API server's --etcd-cafile; and the API
// server's --kubelet-certificate-authority (client-go re-reads it at most
// every 5 minutes, too late for a rotation). Their leaves, client ones
// too, carry the new CA cross-signed by the old one from ReissueLeaves on,
// so a consumer still holding the old CA alone verifies them; and they
// keep that chain after DropOld, while the consumers restart one by one
// with the new bundle (a member restarted first must still be verified by
// those that were not), until StripCrossSignedChains. The kubelet CA's
// leaves, the kubelets' serving certificates, come from the controller
// manager's signer without a chain: the nodes append the cross-signed CA
// (CrossSignedCA, published in the join information) themselves.
func ReadOnceCANames() []string {
	return []string{EtcdCAName, KubeletCAName}
}

func readOnce(ca string) bool {
	for _, name := range ReadOnceCANames() {
		if name == ca {
			return true
		}
	}
	return false
}

// OldestTrusted is the oldest generation of CA ca still trusted: the CA it
// replaced during a rotation, else the CA itself. A consumer that reads ca's
// bundle only at start must restart when it changes (at DropOld), and only
// then: until DropOld the CA it holds verifies every leaf through the
// cross-signed chain.
func (cp *ControlPlane) OldestTrusted(ca string) []byte {
	if prev, ok := cp.Previous[ca]; ok {
		return firstCertificate(prev.CertPEM)
	}
	if kp := cp.caByName(ca); kp != nil {
		return firstCertificate(kp.CertPEM)
	}
	return nil
}

// CrossSignedCA is the signing CA ca cross-signed by the CA it replaced,
// while that one is trusted (ReissueLeaves to DropOld), for leaves signed
// elsewhere to carry; nil otherwise. existing is kept when it still is
// such a certificate, so that publishing it again changes nothing (each
// cross-signature differs).
func (cp *ControlPlane) CrossSignedCA(ca string, existing []byte) ([]byte, error) {
	prev, ok := cp.Previous[ca]
	kp := cp.caByName(ca)
	if !ok || kp == nil {
		return nil, nil
	}
	if isCrossSigned(existing, *kp, prev) {
		return existing, nil
	}
	return crossSign(*kp, prev)
}

// isCrossSigned says whether certPEM certifies ca's key and subject,
// signed by by.
func isCrossSigned(certPEM []byte, ca, by KeyPair) bool {
	cert, err := ParseCertificate(certPEM)
	if err != nil {
		return false
	}
	caCert, err := ParseCertificate(ca.CertPEM)
	if err != nil {
		return false
	}
	byCert, err := ParseCertificate(by.CertPEM)
	if err != nil {
		return false
	}
	return bytes.Equal(cert.RawSubject, caCert.RawSubject) && bytes.Equal(cert.RawSubjectPublicKeyInfo, caCert.RawSubjectPublicKeyInfo) &&
		cert.IsCA && cert.CheckSignatureFrom(byCert) == nil
}

// StripCrossSignedChains removes the cross-signed chain from every stored
// leaf of cas whose replaced CA was dropped: the leaf itself is kept, so a
// consumer that re-reads it sees the same key and certificate.
func StripCrossSignedChains(store Store, cas []string) ([]string, error) {
	var stripped []string
	del, err := deleterOf(store)
	if err != nil {
		return nil, err
	}
	for _, ca := range cas {
		if _, ok, err := store.Get(PreviousName(ca)); err != nil || ok {
			if err != nil {
				return nil, fmt.Errorf("load %s: %w", PreviousName(ca), err)
			}
			continue // still trusted: the chain is still needed
		}
		caKP, ok, err := store.Get(ca)
		if err != nil || !ok {
			return nil, fmt.Errorf("load %s: %w", ca, orMissing(err))
		}
		for _, name := range LeafNames() {
			kp, ok, err := store.Get(name)
			if err != nil {
				return nil, fmt.Errorf("load %s: %w", name, err)
			}
			if !ok || certificateCount(kp.CertPEM) < 2 || !signedBy(kp, caKP) {
				continue
			}
			kp.CertPEM = firstCertificate(kp.CertPEM)
			if err := store.Replace(name, kp); err != nil {
				return nil, fmt.Errorf("save %s without its chain: %w", name, err)
			}
			stripped = append(stripped, name)
		}
		if err := del.Delete(DroppedName(ca)); err != nil {
			return nil, fmt.Errorf("delete %s: %w", DroppedName(ca), err)
		}
	}
	return stripped, nil
}

// Deleter removes a key pair; a store whose CAs are rotated implements it.
type Deleter interface {
	Delete(name string) error
}

// deleterOf is store as a Deleter; a store that cannot delete cannot have
// its CAs rotated.
func deleterOf(store Store) (Deleter, error) {
	del, ok := store.(Deleter)
	if !ok {
		return nil, fmt.Errorf("this PKI store cannot delete key pairs, so its CAs cannot be rotated")
	}
	return del, nil
}

// StartCARotation makes a successor (NAME-next) for each CA of cas that has
// none; an existing one is kept, so a repeated call is harmless. The new
// CA's name carries its creation time so that old and new differ in subject.
func StartCARotation(store Store, cas []string, validity time.Duration, now time.Time) error {
	if validity <= 0 {
		validity = CAValidity
	}
	for _, ca := range cas {
		_, err := loadOr(store, NextName(ca), func() (KeyPair, error) {
			return NewCAFor(fmt.Sprintf("%s@%d", ca, now.Unix()), validity)
		})
		if err != nil {
			return fmt.Errorf("start rotation of %s: %w", ca, err)
		}
	}
	return nil
}

// PromoteNextCAs makes each CA's successor the signing CA and keeps the
// replaced one as NAME-previous. Every step can be repeated, so a crash
// between two of them is finished by the next call.
func PromoteNextCAs(store Store, cas []string) error {
	del, err := deleterOf(store)
	if err != nil {
		return err
	}
	for _, ca := range cas {
		next, hasNext, err := store.Get(NextName(ca))
		if err != nil || !hasNext {
			if err != nil {
				return fmt.Errorf("load %s: %w", NextName(ca), err)
			}
			continue // promoted already
		}
		cur, ok, err := store.Get(ca)
		if err != nil || !ok {
			return fmt.Errorf("load %s: %w", ca, orMissing(err))
		}
		if !bytes.Equal(cur.CertPEM, next.CertPEM) {
			if _, hasPrev, err := store.Get(PreviousName(ca)); err != nil {
				return fmt.Errorf("load %s: %w", PreviousName(ca), err)
			} else if !hasPrev {
				if err := store.Put(PreviousName(ca), cur); err != nil {
					return fmt.Errorf("save %s: %w", PreviousName(ca), err)
				}
			}
			if err := store.Replace(ca, next); err != nil {
				return fmt.Errorf("promote %s: %w", NextName(ca), err)
			}
		}
		if err := del.Delete(NextName(ca)); err != nil {
			return fmt.Errorf("delete %s: %w", NextName(ca), err)
		}
	}
	return nil
}

// DropPreviousCAs deletes the replaced CAs, keys included: from then on
// nothing they signed is trusted.
func DropPreviousCAs(store Store, cas []string) error {
	del, err := deleterOf(store)
	if err != nil {
		return err
	}
	for _, ca := range cas {
		if readOnce(ca) {
			if err := keepDropped(store, ca); err != nil {
				return err
			}
		}
		if err := del.Delete(PreviousName(ca)); err != nil {
			return fmt.Errorf("delete %s: %w", PreviousName(ca), err)
		}
	}
	return nil
}

// keepDropped stores the certificate of ca's replaced CA as DroppedName,
// once.
func keepDropped(store Store, ca string) error {
	prev, ok, err := store.Get(PreviousName(ca))
	if err != nil || !ok {
		if err != nil {
			return fmt.Errorf("load %s: %w", PreviousName(ca), err)
		}
		return nil // dropped already
	}
	if _, ok, err := store.Get(DroppedName(ca)); err != nil || ok {
		if err != nil {
			return fmt.Errorf("load %s: %w", DroppedName(ca), err)
		}
		return nil
	}
	if err := store.Put(DroppedName(ca), KeyPair{CertPEM: firstCertificate(prev.CertPEM), KeyPEM: []byte{}}); err != nil {
		return fmt.Errorf("save %s: %w", DroppedName(ca), err)
	}
	return nil
}

func orMissing(err error) error {
	if err != nil {
		return err
	}
	return ErrMissing
}

// Bundle is the trust bundle of CA ca: the signing CA and, during a
// rotation, its successor or the CA it replaced. Unknown names: nil.
func (cp *ControlPlane) Bundle(ca string) []byte {
	kp := cp.caByName(ca)
	if kp == nil {
		return nil
	}
	out := firstCertificate(kp.CertPEM)
	for _, other := range []KeyPair{cp.Next[ca], cp.Previous[ca]} {
		if len(other.CertPEM) > 0 {
			out = append(out, firstCertificate(other.CertPEM)...)
		}
	}
	return out
}

func (cp *ControlPlane) caByName(name string) *KeyPair {
	switch name {
	case EtcdCAName:
		return &cp.EtcdCA
	case RootCAName:
		return &cp.RootCA
	case ClientCAName:
		return &cp.ClientCA
	case KubeletCAName:
		return &cp.KubeletCA
	case FrontProxyCAName:
		return &cp.FrontProxyCA
	case KonnectivityCAName:
		return &cp.KonnectivityCA
	}
	return nil
}

// loadGenerations reads the successor, the predecessor and the dropped CA
// of every CA.
func (cp *ControlPlane) loadGenerations(store Store) error {
	cp.Next, cp.Previous, cp.Dropped = map[string]KeyPair{}, map[string]KeyPair{}, map[string]KeyPair{}
	for _, ca := range CANames() {
		for name, into := range map[string]map[string]KeyPair{NextName(ca): cp.Next, PreviousName(ca): cp.Previous, DroppedName(ca): cp.Dropped} {
			kp, ok, err := store.Get(name)
			if err != nil {
				return fmt.Errorf("load %s: %w", name, err)
			}
			if ok {
				into[ca] = kp
			}
		}
	}
	return nil
}

// SignedBy says whether the first certificate of leaf was signed by ca.
func SignedBy(leaf, ca KeyPair) bool { return signedBy(leaf, ca) }

// signedBy says whether the first certificate of leaf was signed by ca.
func signedBy(leaf, ca KeyPair) bool {
	cert, err := ParseCertificate(leaf.CertPEM)
	if err != nil {
		return false
	}
	caCert, err := ParseCertificate(ca.CertPEM)
	if err != nil {
		return false
	}
	return cert.CheckSignatureFrom(caCert) == nil
}

// crossSign certifies the key of ca with the key of by: a serving
// certificate sent with it verifies for clients that trust only by (the CA
// being replaced), and, through the chain ending at ca itself, for clients
// that trust ca.
func crossSign(ca, by KeyPair) ([]byte, error) {
	caCert, _, err := ca.Parse()
	if err != nil {
		return nil, fmt.Errorf("parse CA: %w", err)
	}
	byCert, byKey, err := by.Parse()
	if err != nil {
		return nil, fmt.Errorf("parse previous CA: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          newSerial(),
		Subject:               caCert.Subject,
		SubjectKeyId:          caCert.SubjectKeyId,
		AuthorityKeyId:        byCert.SubjectKeyId,
		NotBefore:             caCert.NotBefore,
		NotAfter:              minTime(caCert.NotAfter, byCert.NotAfter),
		KeyUsage:              caCert.KeyUsage,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, byCert, caCert.PublicKey, byKey)
	if err != nil {
		return nil, fmt.Errorf("cross-sign %s: %w", caCert.Subject.CommonName, err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// firstCertificate is the first PEM certificate of bundle, re-encoded; the
// input when it has none.
func firstCertificate(bundle []byte) []byte {
	block, _ := pem.Decode(bundle)
	if block == nil {
		return bundle
	}
	return pem.EncodeToMemory(block)
}

// certificateCount is how many PEM blocks certPEM holds.
func certificateCount(certPEM []byte) int {
	n := 0
	for rest := certPEM; ; n++ {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			return n
		}
	}
}
