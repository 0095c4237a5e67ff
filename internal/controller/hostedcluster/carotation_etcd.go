package hostedcluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/components"
	"hypershift.dev/internal/pki"
)

// The etcd CA is read once by etcd (--trusted-ca-file) and by the API
// servers (--etcd-cafile): until DropOld they hold the old CA alone and
// verify leaves of the new one through its cross-signed chain; DropOld
// restarts them with the new bundle alone (pki.ReadOnceCANames,
// components.readOnceTrust). The observations below look at etcd itself,
// where the operator reaches it (status.etcdClientURLs).

// etcdRefusalProbeName is the key pair, signed by the old etcd CA before it
// is dropped, that DropOld uses to see etcd refuse the old CA.
const etcdRefusalProbeName = "ca-rotation-etcd-probe"

// restartedAtDropOld are the components that read a rotated CA only at
// start; DropOld waits until each instance started after the old CAs were
// dropped.
var restartedAtDropOld = []string{components.Etcd, components.KubeAPIServer, components.KonnectivityServer}

// observeEtcdReissued: every etcd member serves a leaf of the new etcd CA
// whose chain reaches the old one too, and accepts the reissued client
// certificate (the API servers' and the operator's).
func observeEtcdReissued(ctx context.Context, urls []string, cp *pki.ControlPlane) rotationObservation {
	prev, rotating := cp.Previous[pki.EtcdCAName]
	for _, u := range urls {
		chain, err := etcdHealth(ctx, u, cp.EtcdCA.CertPEM, cp.EtcdClient)
		if err != nil {
			return rotationObservation{waiting: fmt.Sprintf("etcd at %s to accept the reissued client certificate: %v", u, err)}
		}
		if !verifiesWith(chain, cp.EtcdCA.CertPEM) {
			return rotationObservation{waiting: fmt.Sprintf("etcd at %s to serve a certificate of the new etcd CA", u)}
		}
		if rotating && !verifiesWith(chain, prev.CertPEM) {
			return rotationObservation{waiting: fmt.Sprintf("etcd at %s to serve a chain that reaches the old etcd CA too", u)}
		}
	}
	return rotationObservation{done: true}
}

// observeEtcdDropped: every etcd member refuses a certificate of the old
// etcd CA (probe, when one could be signed) and accepts the new client
// certificate.
func observeEtcdDropped(ctx context.Context, urls []string, cp *pki.ControlPlane, probe pki.KeyPair, haveProbe bool) rotationObservation {
	for _, u := range urls {
		if _, err := etcdHealth(ctx, u, cp.EtcdCA.CertPEM, cp.EtcdClient); err != nil {
			return rotationObservation{waiting: fmt.Sprintf("etcd at %s to answer with the new etcd CA: %v", u, err)}
		}
		if haveProbe {
			if _, err := etcdHealth(ctx, u, cp.EtcdCA.CertPEM, probe); err == nil {
				return rotationObservation{waiting: fmt.Sprintf("etcd at %s to refuse certificates of the old etcd CA (it restarts with the new bundle)", u)}
			}
		}
	}
	return rotationObservation{done: true}
}

// etcdHealth asks etcd's /health at clientURL with cert, verifying the
// member with roots, and returns the chain it served.
func etcdHealth(ctx context.Context, clientURL string, roots []byte, cert pki.KeyPair) ([]*x509.Certificate, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(roots) {
		return nil, errors.New("no etcd CA")
	}
	pair, err := tls.X509KeyPair(cert.CertPEM, cert.KeyPEM)
	if err != nil {
		return nil, err
	}
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12},
		DisableKeepAlives: true,
	}}
	u, err := url.JoinPath(clientURL, "health")
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	if resp.TLS == nil {
		return nil, errors.New("not a TLS connection")
	}
	return resp.TLS.PeerCertificates, nil
}

// notRestartedSince names the instances of comps that did not start after
// since (or do not run). Both times are stored in seconds: an instance
// started in since's second counts, the change being made after it.
func notRestartedSince(hcp *hypershiftv1alpha1.HostedControlPlane, since time.Time, comps []string) []string {
	var pending []string
	for _, c := range hcp.Status.Components {
		if !isOneOf(c.Component, comps) {
			continue
		}
		if c.Phase != hypershiftv1alpha1.ComponentRunning || c.StartedAt == nil || c.StartedAt.Time.Before(since.Truncate(time.Second)) {
			pending = append(pending, c.Name)
		}
	}
	return pending
}

func isOneOf(s string, set []string) bool {
	for _, x := range set {
		if x == s {
			return true
		}
	}
	return false
}

// observeRestarted: every instance that reads a rotated CA only at start
// runs again, started after the old CAs were dropped.
func observeRestarted(hcp *hypershiftv1alpha1.HostedControlPlane, since time.Time) rotationObservation {
	if pending := notRestartedSince(hcp, since, restartedAtDropOld); len(pending) > 0 {
		return rotationObservation{waiting: fmt.Sprintf("%s to restart with the new CA bundles alone (they read them only at start)", strings.Join(pending, ", "))}
	}
	return rotationObservation{done: true}
}

// ensureProbe signs a probe certificate named name with the replaced CA
// ca while it exists; without it (dropped already) there is nothing to
// sign with.
func ensureProbe(store pki.SecretStore, name, ca string) error {
	if _, ok, err := store.Get(name); err != nil || ok {
		return err
	}
	prev, ok, err := store.Get(pki.PreviousName(ca))
	if err != nil || !ok {
		return err
	}
	probe, err := pki.Issue(prev, pki.CertRequest{CommonName: probeCommonName, Client: true, Validity: time.Hour})
	if err != nil {
		return err
	}
	return store.Put(name, probe)
}
