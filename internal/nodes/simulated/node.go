package simulated

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	certificatesv1client "k8s.io/client-go/kubernetes/typed/certificates/v1"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/version"
)

// Kubelet's defaults: a Lease renewed every 10 s (a quarter of its 40 s
// duration), and the full node status reported every 5 minutes when
// nothing changes.
const (
	leaseDuration        = 40 * time.Second
	leaseRenewInterval   = 10 * time.Second
	statusReportInterval = 5 * time.Minute
	kubeletPort          = 10250
)

// node is one simulated node: a machine and its kubelet.
type node struct {
	a   *Agent
	m   Machine
	cfg Config
	log logr.Logger

	cancel context.CancelFunc
	done   chan struct{}

	// Set once the node has its credentials and is registered.
	mu     sync.Mutex
	joined bool
	core   corev1client.CoreV1Interface
	leases coordinationv1client.LeaseInterface
	csrs   certificatesv1client.CertificateSigningRequestInterface
	// cert is the client certificate new connections present; transport
	// holds them.
	cert      atomic.Pointer[tls.Certificate]
	transport *http.Transport
	// trustNoted is the trust the Node's annotations report (followTrust).
	trustNoted string
	uid        types.UID
	podCIDR    string
	ips        *podIPs
	lease      *coordinationv1.Lease
	lastSeen   time.Time
}

func (n *node) isJoined() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.joined
}

func (n *node) clientPath() string { return filepath.Join(n.a.opts.CertDir, n.m.Name+"-client.pem") }

func (n *node) servingPath() string { return filepath.Join(n.a.opts.CertDir, n.m.Name+"-serving.pem") }

// run joins the node and keeps it alive until ctx ends.
func (n *node) run(ctx context.Context, seen time.Time) {
	defer close(n.done)
	backoff := wait.Backoff{Duration: time.Second, Factor: 2, Steps: 8, Cap: 30 * time.Second}
	var creds keyPair
	for {
		var err error
		if creds, err = n.credentials(ctx); err == nil {
			if err = n.connect(creds); err == nil {
				err = n.register(ctx)
			}
		}
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return
		}
		d := backoff.Step()
		n.log.Error(err, "join failed, retrying", "after", d.String())
		select {
		case <-ctx.Done():
			return
		case <-time.After(d):
		}
	}
	n.a.observeJoin(n.m.Name, time.Since(seen))
	n.log.V(1).Info("node ready", "joinSeconds", time.Since(seen).Seconds())
	if cidr := n.a.podCIDROf(n.m.Name); cidr != "" {
		n.setPodCIDR(cidr)
	}
	n.a.enqueuePodsOf(n.m.Name)
	if n.a.opts.ServingCertificates {
		go n.servingCertificate(ctx)
	}

	lease := time.NewTicker(leaseRenewInterval)
	defer lease.Stop()
	status := time.NewTicker(statusReportInterval)
	defer status.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-lease.C:
			if n.gone() {
				n.log.Info("Node object deleted; this node stops heartbeating until the agent restarts")
				return
			}
			if err := n.renewLease(ctx); err != nil && ctx.Err() == nil {
				n.log.Error(err, "renew lease")
			}
		case <-status.C:
			if err := n.reportStatus(ctx); err != nil && ctx.Err() == nil {
				n.log.Error(err, "report node status")
			}
		}
	}
}

// gone reports whether the Node has been missing from the agent's cache for
// two lease periods (a kubelet does not recreate a deleted Node either).
func (n *node) gone() bool {
	if n.a.nodeExists(n.m.Name) {
		n.mu.Lock()
		n.lastSeen = time.Now()
		n.mu.Unlock()
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return time.Since(n.lastSeen) > 2*leaseRenewInterval
}

// credentials returns the node's client certificate, doing the TLS
// bootstrap with the pool's token when it has none.
func (n *node) credentials(ctx context.Context) (keyPair, error) {
	if kp, err := loadKeyPair(n.clientPath()); err == nil && kp.usable(time.Now()) {
		return kp, nil
	}
	select {
	case n.a.joins <- struct{}{}:
		defer func() { <-n.a.joins }()
	case <-ctx.Done():
		return keyPair{}, ctx.Err()
	}
	key, keyPEM, err := newKey()
	if err != nil {
		return keyPair{}, err
	}
	certPEM, err := n.a.csrs.request(ctx, n.a.boot.CertificatesV1().CertificateSigningRequests(), n.a.csrLister,
		key, clientSubject(n.m.Name), nil, nil, certificatesv1.KubeAPIServerClientKubeletSignerName,
		[]certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth})
	if err != nil {
		return keyPair{}, fmt.Errorf("client certificate: %w", err)
	}
	kp := keyPair{certPEM: certPEM, keyPEM: keyPEM}
	if err := kp.save(n.clientPath()); err != nil {
		return keyPair{}, err
	}
	return kp, nil
}

// connect builds the node's clients. Each node has its own TLS identity
// (and so its own connection); all share the agent's rate limiter. The
// client certificate is taken per handshake from n.cert, so a renewed one
// (followTrust) applies to the next connection without new clients.
func (n *node) connect(creds keyPair) error {
	if err := n.setCertificate(creds); err != nil {
		return err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(n.a.caPEM) {
		return fmt.Errorf("client of node %s: no CA certificate to verify the API server with", n.m.Name)
	}
	n.transport = utilnet.SetTransportDefaults(&http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: pool, MinVersion: tls.VersionTLS12,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return n.cert.Load(), nil },
	}})
	cfg := &rest.Config{
		Host:        n.a.server,
		RateLimiter: n.a.limiter,
		UserAgent:   "hypershift-simulated-agent/" + n.m.Name,
		Transport:   n.transport,
	}
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return fmt.Errorf("client of node %s: %w", n.m.Name, err)
	}
	core, err := corev1client.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return err
	}
	coord, err := coordinationv1client.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return err
	}
	certs, err := certificatesv1client.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return err
	}
	n.mu.Lock()
	n.core, n.leases, n.csrs = core, coord.Leases(corev1.NamespaceNodeLease), certs.CertificateSigningRequests()
	n.mu.Unlock()
	return nil
}

func (n *node) setCertificate(creds keyPair) error {
	pair, err := tls.X509KeyPair(creds.certPEM, creds.keyPEM)
	if err != nil {
		return fmt.Errorf("client certificate of node %s: %w", n.m.Name, err)
	}
	n.cert.Store(&pair)
	return nil
}

// nodeObject is the Node a kubelet registers.
func (n *node) nodeObject() *corev1.Node {
	labels := map[string]string{
		corev1.LabelHostname:           n.m.Name,
		corev1.LabelOSStable:           "linux",
		corev1.LabelArchStable:         "amd64",
		corev1.LabelInstanceTypeStable: InstanceType,
		SimulatedLabel:                 "true",
	}
	for k, v := range n.cfg.Labels {
		if KubeletMaySet(k) {
			labels[k] = v
		}
	}
	labels[hypershiftv1alpha1.NodePoolLabel] = n.a.opts.NodePool
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        n.m.Name,
			Labels:      labels,
			Annotations: map[string]string{SimulatedAnnotation: SimulatedNote},
		},
		Spec: corev1.NodeSpec{Taints: n.cfg.Taints},
	}
}

// register creates the Node (or finds it, after an agent restart) and
// reports its status.
func (n *node) register(ctx context.Context) error {
	created, err := n.core.Nodes().Create(ctx, n.nodeObject(), metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
		created, err = n.core.Nodes().Get(ctx, n.m.Name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("get node: %w", err)
		}
		if err := n.ensureLabels(ctx, created); err != nil {
			return err
		}
	case err != nil:
		return fmt.Errorf("register node: %w", err)
	}
	n.mu.Lock()
	n.uid = created.UID
	n.lastSeen = time.Now()
	n.mu.Unlock()
	if err := n.reportStatus(ctx); err != nil {
		return err
	}
	if err := n.renewLease(ctx); err != nil {
		return err
	}
	n.mu.Lock()
	n.joined = true
	n.mu.Unlock()
	return nil
}

// ensureLabels puts back the registration labels on an existing Node, as a
// restarted kubelet does.
func (n *node) ensureLabels(ctx context.Context, existing *corev1.Node) error {
	want := n.nodeObject().Labels
	missing := map[string]string{}
	for k, v := range want {
		if existing.Labels[k] != v {
			missing[k] = v
		}
	}
	if len(missing) == 0 {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": missing}})
	if err != nil {
		return err
	}
	if _, err := n.core.Nodes().Patch(ctx, n.m.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("label node: %w", err)
	}
	return nil
}

// status is the NodeStatus the node reports: Ready, no pressure, its
// capacity and addresses.
func (n *node) status(now metav1.Time) corev1.NodeStatus {
	capacity := n.cfg.Capacity
	if len(capacity) == 0 {
		capacity = DefaultCapacity()
	}
	cond := func(typ corev1.NodeConditionType, status corev1.ConditionStatus, reason, msg string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: typ, Status: status, Reason: reason, Message: msg, LastHeartbeatTime: now, LastTransitionTime: now}
	}
	id := sha256.Sum256([]byte(n.a.opts.NodePool + "/" + n.m.Name))
	machineID := hex.EncodeToString(id[:16])
	return corev1.NodeStatus{
		Capacity:    maps.Clone(capacity),
		Allocatable: maps.Clone(capacity),
		Conditions: []corev1.NodeCondition{
			cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
			cond(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
			cond(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
			cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "simulated kubelet is posting ready status"),
		},
		Addresses: []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: n.m.Address},
			{Type: corev1.NodeHostName, Address: n.m.Name},
		},
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: kubeletPort}},
		NodeInfo: corev1.NodeSystemInfo{
			MachineID:               machineID,
			SystemUUID:              machineID,
			BootID:                  machineID,
			KernelVersion:           "simulated",
			OSImage:                 "hypershift simulated node",
			ContainerRuntimeVersion: "simulated://" + version.Version,
			KubeletVersion:          n.m.Version(n.cfg),
			OperatingSystem:         "linux",
			Architecture:            "amd64",
		},
	}
}

func (n *node) reportStatus(ctx context.Context) error {
	patch, err := json.Marshal(map[string]any{"status": n.status(metav1.Now())})
	if err != nil {
		return err
	}
	if _, err := n.core.Nodes().Patch(ctx, n.m.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		return fmt.Errorf("report status: %w", err)
	}
	return nil
}

// renewLease renews the node's Lease in kube-node-lease, creating it when
// missing; the cached copy saves a read per renewal.
func (n *node) renewLease(ctx context.Context) error {
	n.mu.Lock()
	lease, uid := n.lease, n.uid
	n.mu.Unlock()
	now := metav1.NewMicroTime(time.Now())
	if lease == nil {
		got, err := n.leases.Get(ctx, n.m.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			got, err = n.leases.Create(ctx, &coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{
					Name:            n.m.Name,
					Namespace:       corev1.NamespaceNodeLease,
					OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: n.m.Name, UID: uid}},
				},
				Spec: coordinationv1.LeaseSpec{
					HolderIdentity:       ptrTo(n.m.Name),
					LeaseDurationSeconds: ptrTo(int32(leaseDuration / time.Second)),
					RenewTime:            &now,
				},
			}, metav1.CreateOptions{})
			if err != nil {
				return fmt.Errorf("create lease: %w", err)
			}
			n.setLease(got)
			return nil
		case err != nil:
			return fmt.Errorf("get lease: %w", err)
		}
		lease = got
	}
	lease = lease.DeepCopy()
	lease.Spec.RenewTime = &now
	updated, err := n.leases.Update(ctx, lease, metav1.UpdateOptions{})
	if err != nil {
		n.setLease(nil) // read it again next time
		return fmt.Errorf("renew lease: %w", err)
	}
	n.setLease(updated)
	return nil
}

func (n *node) setLease(l *coordinationv1.Lease) {
	n.mu.Lock()
	n.lease = l
	n.mu.Unlock()
}

// setPodCIDR records the range the controller manager gave the node, and
// what running pods already use of it.
func (n *node) setPodCIDR(cidr string) {
	n.mu.Lock()
	if cidr == "" || cidr == n.podCIDR {
		n.mu.Unlock()
		return
	}
	ips, err := newPodIPs(cidr)
	if err != nil {
		n.mu.Unlock()
		n.log.Error(err, "unusable pod CIDR")
		return
	}
	n.podCIDR, n.ips = cidr, ips
	n.mu.Unlock()
	for _, pod := range n.a.podsOf(n.m.Name) {
		if ip, err := netip.ParseAddr(pod.Status.PodIP); err == nil && !pod.Spec.HostNetwork {
			ips.Reserve(pod.UID, ip)
		}
	}
	n.a.enqueuePodsOf(n.m.Name)
}

func (n *node) podIPs() *podIPs {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.ips
}

// servingCertificate asks for a kubelet serving certificate for the node's
// addresses, as a kubelet with serverTLSBootstrap does. The NodePool
// controller checks and approves it; the agent only keeps it (a simulated
// node serves no kubelet API).
func (n *node) servingCertificate(ctx context.Context) {
	if kp, err := loadKeyPair(n.servingPath()); err == nil && kp.usable(time.Now()) {
		return
	}
	select {
	case n.a.joins <- struct{}{}:
		defer func() { <-n.a.joins }()
	case <-ctx.Done():
		return
	}
	if _, err := n.requestServingCertificate(ctx); err != nil && ctx.Err() == nil {
		n.log.Error(err, "serving certificate")
	}
}

// requestServingCertificate asks for a kubelet serving certificate, waits
// until it is issued and keeps it.
func (n *node) requestServingCertificate(ctx context.Context) (keyPair, error) {
	key, keyPEM, err := newKey()
	if err != nil {
		return keyPair{}, err
	}
	var ips []net.IP
	if ip := net.ParseIP(n.m.Address); ip != nil {
		ips = append(ips, ip)
	}
	n.mu.Lock()
	csrs := n.csrs
	n.mu.Unlock()
	certPEM, err := n.a.csrs.request(ctx, csrs, n.a.csrLister, key, clientSubject(n.m.Name), []string{n.m.Name}, ips,
		certificatesv1.KubeletServingSignerName, []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth})
	if err != nil {
		return keyPair{}, fmt.Errorf("serving certificate CSR: %w", err)
	}
	kp := keyPair{certPEM: certPEM, keyPEM: keyPEM}
	if err := kp.save(n.servingPath()); err != nil {
		return keyPair{}, fmt.Errorf("save serving certificate: %w", err)
	}
	return kp, nil
}
