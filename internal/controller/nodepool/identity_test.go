package nodepool_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"net"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/nodes/bootstrap"
	"hypershift.dev/internal/operator/operatortest"
	"hypershift.dev/internal/testenv"
)

// TestNodeIdentity: a Node is in the NodePool whose bootstrap token got its
// client certificate, whatever labels it gives itself. A Node an admin
// creates with a pool's label, and a node of another pool that labels
// itself into the pool, are neither counted by the pool nor given its
// labels and taints. None pools get no token from the controller; a
// single-use token admits one node and is gone.
func TestNodeIdentity(t *testing.T) {
	env, _ := operatortest.Setup(t, "clusters")
	c := env.Client
	ctx := t.Context()
	hc := &hypershiftv1alpha1.HostedCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "clusters", Name: "id"}}
	if err := c.Create(ctx, hc); err != nil {
		t.Fatal(err)
	}
	pool := func(name string) *hypershiftv1alpha1.NodePool {
		return &hypershiftv1alpha1.NodePool{
			ObjectMeta: metav1.ObjectMeta{Namespace: "clusters", Name: name},
			Spec: hypershiftv1alpha1.NodePoolSpec{
				ClusterName: "id",
				Platform:    hypershiftv1alpha1.NodePoolPlatform{Type: hypershiftv1alpha1.NonePlatform},
				NodeLabels:  map[string]string{"tier": name},
				Taints:      []hypershiftv1alpha1.Taint{{Key: "dedicated", Value: name, Effect: corev1.TaintEffectNoSchedule}},
			},
		}
	}
	for _, np := range []*hypershiftv1alpha1.NodePool{pool("victim"), pool("other")} {
		if err := c.Create(ctx, np); err != nil {
			t.Fatal(err)
		}
	}
	operatortest.WaitAvailable(t, c, hc)
	secret := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "clusters", Name: hc.Status.KubeConfig.Name}, secret); err != nil {
		t.Fatal(err)
	}
	adminCfg, err := clientcmd.RESTConfigFromKubeConfig(secret.Data[hc.Status.KubeConfig.Key])
	if err != nil {
		t.Fatal(err)
	}
	admin := kubernetes.NewForConfigOrDie(adminCfg)
	status := func(name string) hypershiftv1alpha1.NodePoolStatus {
		np := &hypershiftv1alpha1.NodePool{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: "clusters", Name: name}, np); err != nil {
			t.Fatal(err)
		}
		return np.Status
	}
	// Both pools reconciled against the hosted cluster (they report nodes).
	testenv.Eventually(t, time.Minute, "both pools to report their nodes", func() (bool, error) {
		for _, name := range []string{"victim", "other"} {
			if meta.FindStatusCondition(status(name).Conditions, hypershiftv1alpha1.NodePoolAllNodesHealthy.String()) == nil {
				return false, nil
			}
		}
		return true, nil
	})

	t.Run("None pools get no token from the controller", func(t *testing.T) {
		time.Sleep(2 * time.Second) // a few more reconciles
		list, err := admin.CoreV1().Secrets(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{LabelSelector: hypershiftv1alpha1.NodePoolLabel})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range list.Items {
			t.Errorf("bootstrap token %s of NodePool %s made for a None pool nobody asked to join", s.Name, s.Labels[hypershiftv1alpha1.NodePoolLabel])
		}
	})

	t.Run("a Node an admin labels into a pool is not the pool's", func(t *testing.T) {
		intruder := readyNode("intruder", "victim")
		if _, err := admin.CoreV1().Nodes().Create(ctx, intruder, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		setReady(t, admin, "intruder")
		neverCountedOrLabelled(t, admin, status, "intruder", "victim")
	})

	// A host joins pool "other" with a single-use token.
	tok, err := bootstrap.NewToken(time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	tokSecret := tok.AsSecret("other")
	tokSecret.Labels[bootstrap.SingleUseLabel] = "true"
	if _, err := admin.CoreV1().Secrets(metav1.NamespaceSystem).Create(ctx, tokSecret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tokenClient := kubernetes.NewForConfigOrDie(&rest.Config{Host: adminCfg.Host, BearerToken: tok.String(), TLSClientConfig: rest.TLSClientConfig{CAData: adminCfg.CAData}})
	// The API server's token authenticator reads the Secret from its own
	// cache: on a busy machine the first request can come before it.
	testenv.Eventually(t, time.Minute, "the bootstrap token to authenticate", func() (bool, error) {
		_, err := tokenClient.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		return err == nil, err
	})
	var nodeClient *kubernetes.Clientset
	var joined string

	t.Run("a single-use token admits one node, then is gone", func(t *testing.T) {
		// Two hosts race with the same token: one is admitted.
		var csrs []*certificatesv1.CertificateSigningRequest
		for _, name := range []string{"legit", "second"} {
			created, err := tokenClient.CertificatesV1().CertificateSigningRequests().Create(ctx, clientCSR(t, name), metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			csrs = append(csrs, created)
		}
		var certPEM []byte
		testenv.Eventually(t, time.Minute, "one CSR approved and issued, the other denied", func() (bool, error) {
			approved, denied := 0, 0
			for _, csr := range csrs {
				got, err := admin.CertificatesV1().CertificateSigningRequests().Get(ctx, csr.Name, metav1.GetOptions{})
				if err != nil {
					return false, err
				}
				for _, cond := range got.Status.Conditions {
					switch cond.Type {
					case certificatesv1.CertificateApproved:
						if len(got.Status.Certificate) > 0 {
							approved++
							certPEM, joined = got.Status.Certificate, csrNode(t, got)
						}
					case certificatesv1.CertificateDenied:
						denied++
					}
				}
			}
			if approved+denied == 2 && approved != 1 {
				t.Fatalf("%d of two CSRs made with one single-use token approved", approved)
			}
			return approved == 1 && denied == 1, nil
		})
		cfg := &rest.Config{Host: adminCfg.Host, TLSClientConfig: rest.TLSClientConfig{CAData: adminCfg.CAData, CertData: certPEM, KeyData: nodeKeyPEM(t)}}
		nodeClient = kubernetes.NewForConfigOrDie(cfg)
		if _, err := admin.CoreV1().Secrets(metav1.NamespaceSystem).Get(ctx, tok.SecretName(), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("single-use token still there after its first approved CSR: %v", err)
		}
		// The API server's token cache follows the deletion within moments.
		testenv.Eventually(t, 30*time.Second, "a later join with the used token refused", func() (bool, error) {
			_, err := tokenClient.CertificatesV1().CertificateSigningRequests().Create(ctx, clientCSR(t, "third"), metav1.CreateOptions{})
			return apierrors.IsUnauthorized(err), err
		})
	})
	if nodeClient == nil {
		t.FailNow()
	}

	t.Run("a node of one pool that labels itself into another is not the other's", func(t *testing.T) {
		// The kubelet's own label claims "victim"; it may not claim the binding.
		forged := readyNode(joined, "victim")
		forged.Labels[bootstrap.BindingLabel] = "victim"
		if _, err := nodeClient.CoreV1().Nodes().Create(ctx, forged, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
			t.Fatalf("a kubelet set %s on its own Node: err %v, want Forbidden (NodeRestriction)", bootstrap.BindingLabel, err)
		}
		if _, err := nodeClient.CoreV1().Nodes().Create(ctx, readyNode(joined, "victim"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		setReady(t, nodeClient, joined)
		testenv.Eventually(t, 30*time.Second, "the joined node counted in pool other, with its labels and taints", func() (bool, error) {
			n, err := admin.CoreV1().Nodes().Get(ctx, joined, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			st := status("other")
			return st.Replicas == 1 && st.ReadyReplicas == 1 && n.Labels[bootstrap.BindingLabel] == "other" &&
				n.Labels["tier"] == "other" && hasTaint(n, "other"), nil
		})
		neverCountedOrLabelled(t, admin, status, joined, "victim")
	})

	t.Run("a node's serving certificate covers the addresses recorded when it was first seen, not those it claims later", func(t *testing.T) {
		setAddresses(t, nodeClient, joined, "100.64.0.20")
		testenv.Eventually(t, 30*time.Second, "node "+joined+"'s address recorded", func() (bool, error) {
			n, err := admin.CoreV1().Nodes().Get(ctx, joined, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			addrs, ok := bootstrap.RecordedAddresses(n)
			return ok && strings.Join(addrs, " ") == "100.64.0.20", nil
		})
		// The record is the control plane's: the kubelet cannot change it.
		patch := []byte(`{"metadata":{"labels":{"` + bootstrap.AddressLabelPrefix + `0":"100.64.0.99"}}}`)
		if _, err := nodeClient.CoreV1().Nodes().Patch(ctx, joined, types.MergePatchType, patch, metav1.PatchOptions{}); !apierrors.IsForbidden(err) {
			t.Fatalf("a kubelet rewrote its recorded address: err %v, want Forbidden (NodeRestriction)", err)
		}
		// It may rewrite its status: a claim of another host's address.
		setAddresses(t, nodeClient, joined, "100.64.0.20", "100.64.0.99")
		claimed, err := nodeClient.CertificatesV1().CertificateSigningRequests().Create(ctx, servingCSR(t, joined, "100.64.0.99"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		own, err := nodeClient.CertificatesV1().CertificateSigningRequests().Create(ctx, servingCSR(t, joined, "100.64.0.20"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		approved := func(name string) bool {
			got, err := admin.CertificatesV1().CertificateSigningRequests().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, cond := range got.Status.Conditions {
				if cond.Type == certificatesv1.CertificateApproved {
					return true
				}
			}
			return false
		}
		testenv.Eventually(t, 30*time.Second, "the serving CSR for the recorded address approved", func() (bool, error) {
			return approved(own.Name), nil
		})
		if approved(claimed.Name) {
			t.Errorf("a serving certificate for 100.64.0.99, claimed after the record, was approved")
		}
	})

	t.Run("another pool's token cannot take a node's name", func(t *testing.T) {
		victimTok, err := bootstrap.NewToken(time.Now(), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := admin.CoreV1().Secrets(metav1.NamespaceSystem).Create(ctx, victimTok.AsSecret("victim"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		victimClient := kubernetes.NewForConfigOrDie(&rest.Config{Host: adminCfg.Host, BearerToken: victimTok.String(), TLSClientConfig: rest.TLSClientConfig{CAData: adminCfg.CAData}})
		created, err := victimClient.CertificatesV1().CertificateSigningRequests().Create(ctx, clientCSR(t, joined), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, 30*time.Second, "the CSR for an existing node of another pool denied", func() (bool, error) {
			got, err := admin.CertificatesV1().CertificateSigningRequests().Get(ctx, created.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, cond := range got.Status.Conditions {
				if cond.Type == certificatesv1.CertificateApproved {
					t.Fatalf("pool victim's token got a certificate for node %s of pool other", joined)
				}
				if cond.Type == certificatesv1.CertificateDenied {
					if !strings.Contains(cond.Message, "belongs to NodePool other") {
						t.Errorf("denial message %q does not say whose node it is", cond.Message)
					}
					return true, nil
				}
			}
			return false, nil
		})
	})
}

// neverCountedOrLabelled checks for a while that pool does not count node
// nor put its label or taint on it.
func neverCountedOrLabelled(t *testing.T, admin kubernetes.Interface, status func(string) hypershiftv1alpha1.NodePoolStatus, node, pool string) {
	t.Helper()
	for range 20 {
		time.Sleep(250 * time.Millisecond)
		if st := status(pool); st.Replicas != 0 || st.ReadyReplicas != 0 {
			t.Fatalf("pool %s counts node %s: replicas %d, readyReplicas %d", pool, node, st.Replicas, st.ReadyReplicas)
		}
		n, err := admin.CoreV1().Nodes().Get(t.Context(), node, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if n.Labels["tier"] == pool || hasTaint(n, pool) || n.Labels[bootstrap.BindingLabel] == pool {
			t.Fatalf("pool %s put its labels or taints on node %s: labels %v, taints %v", pool, node, n.Labels, n.Spec.Taints)
		}
	}
}

func readyNode(name, claimedPool string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{hypershiftv1alpha1.NodePoolLabel: claimedPool}}}
}

// setReady reports the Node Ready, as its kubelet would. A patch of the
// status only: an update would send back labels the controller may have
// added meanwhile, which NodeRestriction then sees a kubelet remove.
func setReady(t *testing.T, c kubernetes.Interface, name string) {
	t.Helper()
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []corev1.NodeCondition{
		{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: metav1.Now()},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CoreV1().Nodes().Patch(t.Context(), name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}
}

// setAddresses reports the Node's InternalIP addresses, as its kubelet
// would (a status patch).
func setAddresses(t *testing.T, c kubernetes.Interface, name string, ips ...string) {
	t.Helper()
	var addrs []corev1.NodeAddress
	for _, ip := range ips {
		addrs = append(addrs, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip})
	}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"addresses": addrs}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CoreV1().Nodes().Patch(t.Context(), name, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}
}

// servingCSR is a kubelet serving certificate request of node for ips.
func servingCSR(t *testing.T, node string, ips ...string) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	tmpl := &x509.CertificateRequest{Subject: pkix.Name{CommonName: bootstrap.NodeUserPrefix + node, Organization: []string{bootstrap.NodesGroup}}}
	for _, ip := range ips {
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(ip))
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, nodeKey)
	if err != nil {
		t.Fatal(err)
	}
	return &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "serving-csr-"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: certificatesv1.KubeletServingSignerName,
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth},
		},
	}
}

func hasTaint(n *corev1.Node, value string) bool {
	for _, tn := range n.Spec.Taints {
		if tn.Key == "dedicated" && tn.Value == value {
			return true
		}
	}
	return false
}

var nodeKey, _ = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)

func clientCSR(t *testing.T, node string) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: bootstrap.NodeUserPrefix + node, Organization: []string{bootstrap.NodesGroup}},
	}, nodeKey)
	if err != nil {
		t.Fatal(err)
	}
	return &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "node-csr-"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:           pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName:        certificatesv1.KubeAPIServerClientKubeletSignerName,
			Usages:            []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
			ExpirationSeconds: ptr.To[int32](3600),
		},
	}
}

// csrNode is the node a CSR asks a certificate for.
func csrNode(t *testing.T, csr *certificatesv1.CertificateSigningRequest) string {
	t.Helper()
	block, _ := pem.Decode(csr.Spec.Request)
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimPrefix(req.Subject.CommonName, bootstrap.NodeUserPrefix)
}

func nodeKeyPEM(t *testing.T) []byte {
	t.Helper()
	der, err := x509.MarshalECPrivateKey(nodeKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
}
