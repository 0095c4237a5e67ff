package pki

import (
	"fmt"
	"net"
	"slices"
	"time"
)

// Names of the key pairs of a control plane. They are Secret names in the
// control-plane namespace and file names under a management data dir.
const (
	EtcdCAName         = "etcd-ca"
	RootCAName         = "root-ca"
	ClientCAName       = "client-ca"
	KubeletCAName      = "kubelet-ca"
	FrontProxyCAName   = "front-proxy-ca"
	KonnectivityCAName = "konnectivity-ca"

	EtcdServerName             = "etcd-server"
	EtcdPeerName               = "etcd-peer"
	EtcdClientName             = "etcd-client"
	KubeAPIServerName          = "kube-apiserver-server"
	KubeAPIServerKubeletName   = "kube-apiserver-kubelet-client"
	FrontProxyClientName       = "front-proxy-client"
	AdminName                  = "admin-client"
	KubeControllerManagerName  = "kube-controller-manager-client"
	KubeSchedulerName          = "kube-scheduler-client"
	ServiceAccountKeyName      = "service-account-key"
	FrontProxyClientCommonName = "front-proxy-client"
	KonnectivityServerName     = "konnectivity-server"
	KonnectivityAgentName      = "konnectivity-agent"
	// KonnectivityServerClientName is the Konnectivity server's client
	// certificate for the hosted API server, where it checks each agent's
	// node identity (token reviews, the agent's Node).
	KonnectivityServerClientName = "konnectivity-server-client"
	// KonnectivityServerUser is that certificate's user.
	KonnectivityServerUser = "system:konnectivity-server"
	// KonnectivityAgentNamespace and KonnectivityAgentServiceAccount are
	// the agents' ServiceAccount in the hosted cluster. Each agent
	// presents a token bound to its pod, for KonnectivityAudience: the
	// server learns from it which node the agent runs on.
	KonnectivityAgentNamespace      = "kube-system"
	KonnectivityAgentServiceAccount = "konnectivity-agent"
	KonnectivityAudience            = "system:konnectivity-server"
	// KonnectivityAgentCommonName is the agents' identity.
	KonnectivityAgentCommonName = "system:konnectivity-agent"
	// WorkloadIdentityWebhookName is the workload-identity webhook's
	// client certificate for the hosted API server, where it reads the
	// ServiceAccounts of the pods it admits (docs/workload-identity.md).
	WorkloadIdentityWebhookName = "workload-identity-webhook-client"
	// WorkloadIdentityWebhookUser is that certificate's user.
	WorkloadIdentityWebhookUser = "system:hypershift:workload-identity-webhook"
)

// IsKeyPairName says whether name is a key pair a control plane's PKI
// keeps: a CA with the generations of a rotation, a leaf, the
// service-account key. A restore recreates these and nothing else.
func IsKeyPairName(name string) bool {
	for _, ca := range CANames() {
		if name == ca || name == NextName(ca) || name == PreviousName(ca) || name == DroppedName(ca) {
			return true
		}
	}
	return name == ServiceAccountKeyName || name == NextName(ServiceAccountKeyName) || name == PreviousName(ServiceAccountKeyName) ||
		slices.Contains(LeafNames(), name)
}

// Store loads and saves key pairs by name.
type Store interface {
	// Get returns the key pair and whether it exists.
	Get(name string) (KeyPair, bool, error)
	// Put saves a new key pair.
	Put(name string, kp KeyPair) error
	// Replace overwrites an existing key pair (a renewed leaf).
	Replace(name string, kp KeyPair) error
}

// ControlPlaneOptions says what the serving certificates must cover.
type ControlPlaneOptions struct {
	// APIServerIPs are the IP SANs of the API server certificate.
	APIServerIPs []net.IP
	// APIServerDNSNames are the DNS SANs of the API server certificate.
	APIServerDNSNames []string
	// EtcdDNSNames are added to the etcd members' serving and peer
	// certificates (the names pods reach them at).
	EtcdDNSNames []string
	// LeafValidity and CAValidity are how long new certificates are valid;
	// zero: CertValidity and CAValidity.
	LeafValidity, CAValidity time.Duration
	// Renew reissues every leaf two thirds into its life (RenewAt). Only
	// the PKI's owner renews; readers take what is stored.
	Renew bool
	// Now is the time renewal is judged at; zero: the current time.
	Now time.Time
	// ServiceAccountKey, when set, is the service-account signing key a
	// new PKI takes (ParseServiceAccountKey) instead of a key of its own;
	// a stored key is kept.
	ServiceAccountKey *KeyPair
}

// ControlPlane holds every key pair a control plane uses.
type ControlPlane struct {
	EtcdCA, RootCA, ClientCA, KubeletCA, FrontProxyCA KeyPair

	EtcdServer, EtcdPeer, EtcdClient            KeyPair
	KubeAPIServer, KubeAPIServerKubeletClient   KeyPair
	FrontProxyClient                            KeyPair
	Admin, KubeControllerManager, KubeScheduler KeyPair
	ServiceAccountKey                           KeyPair // CertPEM holds the public key.
	// ServiceAccountKeyNext is the key a rotation will sign with, trusted
	// already; ServiceAccountKeyPrevious the public key (CertPEM only) of
	// the one it replaced, trusted until retired. Zero outside a rotation.
	ServiceAccountKeyNext, ServiceAccountKeyPrevious KeyPair

	// The Konnectivity tunnel has a CA of its own: the server's serving
	// certificate (what agents dial), and the agents' client certificate.
	KonnectivityCA, KonnectivityServer, KonnectivityAgent KeyPair
	// KonnectivityServerClient is the server's client certificate of the
	// client CA, for the hosted API server.
	KonnectivityServerClient KeyPair
	// WorkloadIdentityWebhook is the workload-identity webhook's client
	// certificate of the hosted API server.
	WorkloadIdentityWebhook KeyPair

	// Next and Previous are, by CA name, the CAs of a rotation in
	// progress: a successor not yet signing and the CA it replaced
	// (rotation.go). They are in the CA's Bundle.
	Next, Previous map[string]KeyPair
	// Dropped is, by CA name, the certificate of a ReadOnceCANames CA
	// dropped by a rotation not Done yet (DroppedName); in no bundle.
	Dropped map[string]KeyPair

	// Renewed names the leaves this call reissued (Renew).
	Renewed []string
}

type leaf struct {
	name string
	ca   *KeyPair
	req  CertRequest
	out  *KeyPair
}

// EnsureControlPlane loads the control plane's key pairs from store and
// creates those that are missing. CAs are made first so that a leaf missing
// from an existing PKI is issued by the CA already trusted.
func EnsureControlPlane(store Store, opts ControlPlaneOptions) (*ControlPlane, error) {
	cp := &ControlPlane{}
	caValidity := opts.CAValidity
	if caValidity <= 0 {
		caValidity = CAValidity
	}
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	cas := []struct {
		name string
		out  *KeyPair
	}{
		{EtcdCAName, &cp.EtcdCA},
		{RootCAName, &cp.RootCA},
		{ClientCAName, &cp.ClientCA},
		{KubeletCAName, &cp.KubeletCA},
		{FrontProxyCAName, &cp.FrontProxyCA},
		{KonnectivityCAName, &cp.KonnectivityCA},
	}
	for _, ca := range cas {
		kp, err := loadOr(store, ca.name, func() (KeyPair, error) { return NewCAFor(ca.name, caValidity) })
		if err != nil {
			return nil, err
		}
		*ca.out = kp
	}
	if err := cp.loadGenerations(store); err != nil {
		return nil, err
	}

	loopback := []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")}
	leaves := []leaf{
		{EtcdServerName, &cp.EtcdCA, CertRequest{CommonName: "etcd-server", DNSNames: append([]string{"localhost"}, opts.EtcdDNSNames...), IPs: loopback, Server: true, Client: true}, &cp.EtcdServer},
		{EtcdPeerName, &cp.EtcdCA, CertRequest{CommonName: "etcd-peer", DNSNames: append([]string{"localhost"}, opts.EtcdDNSNames...), IPs: loopback, Server: true, Client: true}, &cp.EtcdPeer},
		{EtcdClientName, &cp.EtcdCA, CertRequest{CommonName: "etcd-client", Client: true}, &cp.EtcdClient},
		{KubeAPIServerName, &cp.RootCA, CertRequest{CommonName: "kube-apiserver", DNSNames: opts.APIServerDNSNames, IPs: opts.APIServerIPs, Server: true}, &cp.KubeAPIServer},
		{KubeAPIServerKubeletName, &cp.ClientCA, CertRequest{CommonName: "kube-apiserver-kubelet-client", Organization: []string{"system:masters"}, Client: true}, &cp.KubeAPIServerKubeletClient},
		{FrontProxyClientName, &cp.FrontProxyCA, CertRequest{CommonName: FrontProxyClientCommonName, Client: true}, &cp.FrontProxyClient},
		{AdminName, &cp.ClientCA, CertRequest{CommonName: "system:admin", Organization: []string{"system:masters"}, Client: true}, &cp.Admin},
		{KubeControllerManagerName, &cp.ClientCA, CertRequest{CommonName: "system:kube-controller-manager", Client: true}, &cp.KubeControllerManager},
		{KubeSchedulerName, &cp.ClientCA, CertRequest{CommonName: "system:kube-scheduler", Client: true}, &cp.KubeScheduler},
		// Agents dial the endpoint host, so the server has the API
		// server's names.
		{KonnectivityServerName, &cp.KonnectivityCA, CertRequest{CommonName: "konnectivity-server", DNSNames: opts.APIServerDNSNames, IPs: opts.APIServerIPs, Server: true}, &cp.KonnectivityServer},
		{KonnectivityAgentName, &cp.KonnectivityCA, CertRequest{CommonName: KonnectivityAgentCommonName, Client: true}, &cp.KonnectivityAgent},
		{KonnectivityServerClientName, &cp.ClientCA, CertRequest{CommonName: KonnectivityServerUser, Client: true}, &cp.KonnectivityServerClient},
		{WorkloadIdentityWebhookName, &cp.ClientCA, CertRequest{CommonName: WorkloadIdentityWebhookUser, Client: true}, &cp.WorkloadIdentityWebhook},
	}
	for _, l := range leaves {
		l.req.Validity = opts.LeafValidity
		issue := func() (KeyPair, error) { return cp.issueLeaf(l) }
		kp, err := loadOr(store, l.name, issue)
		if err != nil {
			return nil, err
		}
		if opts.Renew && (due(kp, now) || cp.stale(l, kp)) {
			if kp, err = issue(); err != nil {
				return nil, fmt.Errorf("renew %s: %w", l.name, err)
			}
			if err := store.Replace(l.name, kp); err != nil {
				return nil, fmt.Errorf("save renewed %s: %w", l.name, err)
			}
			cp.Renewed = append(cp.Renewed, l.name)
		}
		*l.out = kp
	}

	sa, err := loadOr(store, ServiceAccountKeyName, func() (KeyPair, error) {
		if opts.ServiceAccountKey != nil {
			return *opts.ServiceAccountKey, nil
		}
		key, pub, err := NewServiceAccountKey()
		return KeyPair{CertPEM: pub, KeyPEM: key}, err
	})
	if err != nil {
		return nil, err
	}
	cp.ServiceAccountKey = sa
	for name, out := range map[string]*KeyPair{
		NextName(ServiceAccountKeyName): &cp.ServiceAccountKeyNext, PreviousName(ServiceAccountKeyName): &cp.ServiceAccountKeyPrevious,
	} {
		kp, ok, err := store.Get(name)
		if err != nil {
			return nil, fmt.Errorf("load %s: %w", name, err)
		}
		if ok {
			*out = kp
		}
	}
	return cp, nil
}

// ServiceAccountKeys are the service-account keys the API servers verify
// tokens with, the signing key's first: during a rotation also the next
// key or the previous one (its public half only).
func (cp *ControlPlane) ServiceAccountKeys() []KeyPair {
	keys := []KeyPair{cp.ServiceAccountKey}
	for _, kp := range []KeyPair{cp.ServiceAccountKeyNext, cp.ServiceAccountKeyPrevious} {
		if len(kp.CertPEM) > 0 {
			keys = append(keys, kp)
		}
	}
	return keys
}

// ServiceAccountPublicKeys are the public keys of ServiceAccountKeys, PEM,
// in one bundle.
func (cp *ControlPlane) ServiceAccountPublicKeys() []byte {
	var out []byte
	for _, kp := range cp.ServiceAccountKeys() {
		out = append(out, kp.CertPEM...)
	}
	return out
}

// issueLeaf signs l with its CA. A serving certificate issued while the
// CA it replaced is still trusted carries the new CA cross-signed by the old
// one, so clients that trust only the old CA verify it too; so does a client
// certificate of a CA whose consumers read trust once (ReadOnceCANames).
func (cp *ControlPlane) issueLeaf(l leaf) (KeyPair, error) {
	kp, err := Issue(*l.ca, l.req)
	if err != nil || !cp.chained(l) {
		return kp, err
	}
	prev, ok := cp.Previous[cp.caNameOf(l.ca)]
	if !ok {
		return kp, nil
	}
	cross, err := crossSign(*l.ca, prev)
	if err != nil {
		return KeyPair{}, err
	}
	kp.CertPEM = append(kp.CertPEM, cross...)
	return kp, nil
}

// chained says whether l is issued with a cross-signed chain when its CA
// replaced another.
func (cp *ControlPlane) chained(l leaf) bool {
	return l.req.Server || readOnce(cp.caNameOf(l.ca))
}

// stale says whether a stored leaf no longer fits its request or its CA's
// rotation: a name or address asked for that it does not cover (the
// endpoint changed, or the PKI was restored on another management plane),
// not signed by the signing CA, or without a cross-signed chain while the
// replaced CA is trusted. A chain with no replaced CA left is stale too,
// except for ReadOnceCANames, whose chains StripCrossSignedChains removes
// once every consumer dropped the old CA.
func (cp *ControlPlane) stale(l leaf, kp KeyPair) bool {
	if !covers(kp, l.req) || !signedBy(kp, *l.ca) {
		return true
	}
	_, hasPrevious := cp.Previous[cp.caNameOf(l.ca)]
	want, has := hasPrevious && cp.chained(l), certificateCount(kp.CertPEM) > 1
	if has && !want && readOnce(cp.caNameOf(l.ca)) {
		return false
	}
	return has != want
}

func (cp *ControlPlane) caNameOf(ca *KeyPair) string {
	for _, name := range CANames() {
		if cp.caByName(name) == ca {
			return name
		}
	}
	return ""
}

func loadOr(store Store, name string, create func() (KeyPair, error)) (KeyPair, error) {
	kp, ok, err := store.Get(name)
	if err != nil {
		return KeyPair{}, fmt.Errorf("load %s: %w", name, err)
	}
	if ok {
		return kp, nil
	}
	kp, err = create()
	if err != nil {
		return KeyPair{}, fmt.Errorf("create %s: %w", name, err)
	}
	if err := store.Put(name, kp); err != nil {
		return KeyPair{}, fmt.Errorf("save %s: %w", name, err)
	}
	return kp, nil
}

// covers says whether the first certificate of kp has every DNS name and IP
// address req asks for (it may have more).
func covers(kp KeyPair, req CertRequest) bool {
	cert, err := ParseCertificate(kp.CertPEM)
	if err != nil {
		return false
	}
	for _, name := range req.DNSNames {
		if !slices.Contains(cert.DNSNames, name) {
			return false
		}
	}
	for _, ip := range req.IPs {
		if !slices.ContainsFunc(cert.IPAddresses, ip.Equal) {
			return false
		}
	}
	return true
}
