// Package jointest serves what `hypershift join` discovery reads from a
// hosted API server — kube-public/cluster-info with its token signatures,
// kube-public/hypershift-join, and self subject reviews — from an httptest
// TLS server, so that discovery can be tested against a genuine cluster and
// against interceptors without starting one.
package jointest

import (
	"crypto/tls"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/cluster-bootstrap/token/jws"

	"hypershift.dev/internal/nodes/bootstrap"
	"hypershift.dev/internal/pki"
)

// Cluster is a hosted cluster's PKI and one bootstrap token.
type Cluster struct {
	Name           string
	Root, ClientCA pki.KeyPair
	Token          bootstrap.Token
	Pool           string
}

// NewCluster makes a cluster clusters/r with a token of pool r valid for
// an hour.
func NewCluster(t *testing.T) *Cluster {
	t.Helper()
	root, err := pki.NewCA("root-ca")
	if err != nil {
		t.Fatal(err)
	}
	clientCA, err := pki.NewCA("client-ca")
	if err != nil {
		t.Fatal(err)
	}
	tok, err := bootstrap.NewToken(time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return &Cluster{Name: "clusters/r", Root: root, ClientCA: clientCA, Token: tok, Pool: "r"}
}

// Hash is the cluster's --ca-cert-hash.
func (c *Cluster) Hash(t *testing.T) string {
	t.Helper()
	h, err := pki.CACertHash(c.Root.CertPEM)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// Server is what one API server (genuine or not) presents.
type Server struct {
	*httptest.Server
	// Serving signs the server's TLS certificate.
	Serving pki.KeyPair
	// CABundle is the CA bundle of cluster-info and the join information.
	CABundle []byte
	// ClientCABundle is the join information's client CA.
	ClientCABundle []byte
	// SigningSecret signs cluster-info for the token ("" leaves it unsigned).
	SigningSecret string
	// Records are the join information's token records.
	Records map[string]bootstrap.TokenRecord
	// Network is the join information's network; nil leaves it out (an
	// older operator's join information).
	Network map[string]string
	// Accepts is the bearer token the server authenticates, with Groups.
	Accepts string
	Groups  []string
	// TokenSeen is set when a request carried a bearer token.
	TokenSeen atomic.Bool
}

// Genuine is the cluster's own API server.
func (c *Cluster) Genuine(t *testing.T) *Server {
	t.Helper()
	return c.Start(t, c.Root, func(*Server) {})
}

// Start serves the cluster's discovery data with a serving certificate
// signed by serving; change adjusts it before the server starts.
func (c *Cluster) Start(t *testing.T, serving pki.KeyPair, change func(*Server)) *Server {
	t.Helper()
	s := &Server{
		Serving:        serving,
		CABundle:       c.Root.CertPEM,
		ClientCABundle: c.ClientCA.CertPEM,
		SigningSecret:  c.Token.Secret,
		Records:        map[string]bootstrap.TokenRecord{c.Token.ID: {NodePool: c.Pool, Expiration: c.Token.Expiration}},
		Network: map[string]string{
			bootstrap.JoinInfoServiceCIDR: "172.31.0.0/16", bootstrap.JoinInfoClusterCIDR: "10.132.0.0/14",
			bootstrap.JoinInfoClusterDNS: "172.31.0.10", bootstrap.JoinInfoClusterDomain: "cluster.local",
			bootstrap.JoinInfoAPIServerAdvertiseAddress: "172.20.0.1", bootstrap.JoinInfoAPIServerPort: "6443",
		},
		Accepts: c.Token.String(),
		Groups:  []string{bootstrap.BootstrappersGroup, bootstrap.PoolGroup(c.Pool)},
	}
	change(s)
	s.Server = httptest.NewUnstartedServer(s.handler(t, c))
	StartTLS(t, s.Server, serving, "kube-apiserver", tls.NoClientCert)
	return s
}

// StartTLS starts srv at 127.0.0.1 with a serving certificate of commonName
// issued by ca, asking clients for a certificate as clientAuth says, and
// closes it when the test ends.
func StartTLS(t *testing.T, srv *httptest.Server, ca pki.KeyPair, commonName string, clientAuth tls.ClientAuthType) {
	t.Helper()
	leaf, err := pki.Issue(ca, pki.CertRequest{CommonName: commonName, IPs: []net.IP{net.ParseIP("127.0.0.1")}, Server: true})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(leaf.CertPEM, leaf.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: clientAuth, MinVersion: tls.VersionTLS12}
	srv.StartTLS()
	t.Cleanup(srv.Close)
}

func (s *Server) handler(t *testing.T, c *Cluster) http.Handler {
	const configMaps = "/api/v1/namespaces/" + bootstrap.JoinInfoNamespace + "/configmaps/"
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
			s.TokenSeen.Store(true)
		}
		switch r.URL.Path {
		case configMaps + bootstrap.ClusterInfoName:
			kc, err := bootstrap.ClusterInfoKubeconfigFor(s.URL, s.CABundle)
			if err != nil {
				t.Error(err)
			}
			data := map[string]string{bootstrap.ClusterInfoKubeconfig: string(kc)}
			if s.SigningSecret != "" {
				sig, err := jws.ComputeDetachedSignature(string(kc), c.Token.ID, s.SigningSecret)
				if err != nil {
					t.Error(err)
				}
				data[bootstrap.ClusterInfoSignaturePrefix+c.Token.ID] = sig
			}
			writeJSON(w, http.StatusOK, &corev1.ConfigMap{Data: data})
		case configMaps + bootstrap.JoinInfoName:
			data := map[string]string{
				bootstrap.JoinInfoCluster:  c.Name,
				bootstrap.JoinInfoCA:       string(s.CABundle),
				bootstrap.JoinInfoClientCA: string(s.ClientCABundle),
			}
			for k, v := range s.Network {
				data[k] = v
			}
			for id, rec := range s.Records {
				raw, _ := json.Marshal(rec)
				data[bootstrap.TokenRecordKey(id)] = string(raw)
			}
			writeJSON(w, http.StatusOK, &corev1.ConfigMap{Data: data})
		case "/apis/authentication.k8s.io/v1/selfsubjectreviews":
			if r.Header.Get("Authorization") != "Bearer "+s.Accepts {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			review := &authenticationv1.SelfSubjectReview{}
			review.Status.UserInfo.Groups = s.Groups
			writeJSON(w, http.StatusCreated, review)
		default:
			http.NotFound(w, r)
		}
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
