package pki

import (
	"crypto/x509"
	"fmt"
	"time"
)

// RenewalFraction of a leaf's life passes before it is renewed: two thirds,
// leaving a third of its life to deliver the new one (a 1-year certificate
// is renewed about four months before it expires).
const (
	renewalNumerator   = 2
	renewalDenominator = 3
)

// RenewAt is when cert is due for renewal: two thirds into its validity.
func RenewAt(cert *x509.Certificate) time.Time {
	life := cert.NotAfter.Sub(cert.NotBefore)
	return cert.NotBefore.Add(life / renewalDenominator * renewalNumerator)
}

// CertificateStatus is one certificate of a control plane as it is stored.
type CertificateStatus struct {
	// Name is the key pair's name (a Secret or file name).
	Name string
	// CA: a certificate authority, not renewed (rotation is separate).
	CA       bool
	NotAfter time.Time
	// RenewAt is when a leaf is reissued; zero for CAs.
	RenewAt time.Time
}

// LeafNames are the leaves of a control plane, in issuance order.
func LeafNames() []string {
	return []string{
		EtcdServerName, EtcdPeerName, EtcdClientName, KubeAPIServerName, KubeAPIServerKubeletName,
		FrontProxyClientName, AdminName, KubeControllerManagerName, KubeSchedulerName,
		KonnectivityServerName, KonnectivityAgentName, KonnectivityServerClientName, WorkloadIdentityWebhookName,
	}
}

// CANames are the certificate authorities of a control plane.
func CANames() []string {
	return []string{EtcdCAName, RootCAName, ClientCAName, KubeletCAName, FrontProxyCAName, KonnectivityCAName}
}

// Inspect reads every certificate of a control plane from store; missing
// ones are left out.
func Inspect(store Store) ([]CertificateStatus, error) {
	var out []CertificateStatus
	add := func(name string, ca bool) error {
		kp, ok, err := store.Get(name)
		if err != nil || !ok {
			return err
		}
		cert, err := ParseCertificate(kp.CertPEM)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		st := CertificateStatus{Name: name, CA: ca, NotAfter: cert.NotAfter}
		if !ca {
			st.RenewAt = RenewAt(cert)
		}
		out = append(out, st)
		return nil
	}
	for _, name := range CANames() {
		for _, gen := range []string{name, NextName(name), PreviousName(name)} {
			if err := add(gen, true); err != nil {
				return nil, err
			}
		}
	}
	for _, name := range LeafNames() {
		if err := add(name, false); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// NextRenewal is the earliest renewal time of the leaves in certs; zero
// when there is none.
func NextRenewal(certs []CertificateStatus) time.Time {
	var next time.Time
	for _, c := range certs {
		if c.CA {
			continue
		}
		if next.IsZero() || c.RenewAt.Before(next) {
			next = c.RenewAt
		}
	}
	return next
}

// due says whether the stored leaf kp must be reissued at now: two thirds
// of its life passed, or it cannot be read.
func due(kp KeyPair, now time.Time) bool {
	cert, err := ParseCertificate(kp.CertPEM)
	if err != nil {
		return true
	}
	return !now.Before(RenewAt(cert))
}

// NextRenewal is the earliest renewal time of the control plane's leaves;
// zero when none can be read.
func (cp *ControlPlane) NextRenewal() time.Time {
	var next time.Time
	for _, kp := range []KeyPair{
		cp.EtcdServer, cp.EtcdPeer, cp.EtcdClient, cp.KubeAPIServer, cp.KubeAPIServerKubeletClient,
		cp.FrontProxyClient, cp.Admin, cp.KubeControllerManager, cp.KubeScheduler,
		cp.KonnectivityServer, cp.KonnectivityAgent, cp.KonnectivityServerClient, cp.WorkloadIdentityWebhook,
	} {
		cert, err := ParseCertificate(kp.CertPEM)
		if err != nil {
			continue
		}
		if at := RenewAt(cert); next.IsZero() || at.Before(next) {
			next = at
		}
	}
	return next
}
