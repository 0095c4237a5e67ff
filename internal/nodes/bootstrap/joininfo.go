package bootstrap

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/retry"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
)

// The join information of a hosted cluster: a ConfigMap in kube-public that
// anyone may read (as kubeadm's cluster-info), so that `hypershift join`
// learns the cluster's CAs before it has credentials. It holds no secret:
// the CA certificates, the cluster's name, and the ID, NodePool and expiry
// of recently issued bootstrap tokens (a token's ID is its public half), so
// that a join with a token the API server refuses can say why.
const (
	JoinInfoNamespace = metav1.NamespacePublic
	JoinInfoName      = "hypershift-join"

	// JoinInfoCluster is the hosted cluster as NAMESPACE/NAME.
	JoinInfoCluster = "cluster"
	// JoinInfoCA is the CA bundle that verifies the API server.
	JoinInfoCA = "ca.crt"
	// JoinInfoClientCA verifies client certificates: the kubelet trusts it
	// for the API server's calls to the kubelet.
	JoinInfoClientCA = "client-ca.crt"
	// JoinInfoKubeletCA is the kubelet (serving) CA bundle, the signing CA
	// first, published by a root-CA rotation: a node whose serving
	// certificate that CA did not sign asks for a new one.
	JoinInfoKubeletCA = "kubelet-ca.crt"
	// JoinInfoKubeletCACrossSigned is, while a rotation trusts the old
	// kubelet CA (ReissueLeaves to DropOld), the new one cross-signed by
	// it: a node serves it after its serving certificate, so that an API
	// server still holding the old CA alone verifies the node.
	JoinInfoKubeletCACrossSigned = "kubelet-ca-cross-signed.crt"
	// joinInfoTokenPrefix starts the key of a token record.
	joinInfoTokenPrefix = "token."

	// ClusterInfoName is kubeadm's cluster-info: a kubeconfig with the
	// server and its CA (key ClusterInfoKubeconfig), which the hosted
	// controller manager's bootstrapsigner signs with every token of usage
	// bootstrap-signing (key ClusterInfoSignaturePrefix + token ID). A join
	// checks that signature: it proves the server knows the token's secret.
	ClusterInfoName            = bootstrapapi.ConfigMapClusterInfo
	ClusterInfoKubeconfig      = bootstrapapi.KubeConfigKey
	ClusterInfoSignaturePrefix = bootstrapapi.JWSSignatureKeyPrefix

	joinInfoReaderRole = "hypershift:join-info-reader"
	// Token records are kept this long after the token expired, so a late
	// join still hears "expired" rather than "unknown".
	tokenRecordRetention = 7 * 24 * time.Hour
)

// TokenRecord is what the join information says of one bootstrap token.
type TokenRecord struct {
	NodePool   string    `json:"nodePool"`
	Expiration time.Time `json:"expiration"`
}

// TokenRecordKey is the key of a token's record in the join information.
func TokenRecordKey(tokenID string) string { return joinInfoTokenPrefix + tokenID }

// LookupToken reads a token's record from join information data.
func LookupToken(data map[string]string, tokenID string) (TokenRecord, bool) {
	raw, ok := data[TokenRecordKey(tokenID)]
	if !ok {
		return TokenRecord{}, false
	}
	var rec TokenRecord
	if json.Unmarshal([]byte(raw), &rec) != nil {
		return TokenRecord{}, false
	}
	return rec, true
}

// ClusterInfoKubeconfigFor renders cluster-info's kubeconfig as kubeadm
// does: one unnamed cluster with the server and its CA, no credentials.
func ClusterInfoKubeconfigFor(server string, caPEM []byte) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[""] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	out, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, fmt.Errorf("render %s kubeconfig: %w", ClusterInfoName, err)
	}
	return out, nil
}

// ClusterInfoCA reads the CA bundle of a cluster-info kubeconfig.
func ClusterInfoCA(kubeconfig []byte) ([]byte, error) {
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("parse the %s kubeconfig: %w", ClusterInfoName, err)
	}
	if len(cfg.Clusters) != 1 {
		return nil, fmt.Errorf("the %s kubeconfig names %d clusters, want 1", ClusterInfoName, len(cfg.Clusters))
	}
	for _, cluster := range cfg.Clusters {
		if len(cluster.CertificateAuthorityData) > 0 {
			return cluster.CertificateAuthorityData, nil
		}
	}
	return nil, fmt.Errorf("the %s kubeconfig has no CA", ClusterInfoName)
}

// serverOf is the API server address a client talks to, for cluster-info
// (which joins do not read it from: they use the address they were given).
func serverOf(c kubernetes.Interface) string {
	rc, ok := c.CoreV1().RESTClient().(*rest.RESTClient)
	if !ok || rc == nil {
		return ""
	}
	u := rc.Get().URL()
	return (&url.URL{Scheme: u.Scheme, Host: u.Host}).String()
}

// EnsureJoinInfo publishes a hosted cluster's join information (its name,
// CAs and network) and cluster-info, and lets anonymous users read them
// (and only them). The client CA is read from the API server's own
// kube-system/extension-apiserver-authentication.
func EnsureJoinInfo(ctx context.Context, c kubernetes.Interface, cluster string, caPEM []byte, network Network) error {
	auth, err := c.CoreV1().ConfigMaps(metav1.NamespaceSystem).Get(ctx, "extension-apiserver-authentication", metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("read the API server's client CA: %w", err)
	}
	clientCA := auth.Data["client-ca-file"]
	if clientCA == "" {
		return errors.New("extension-apiserver-authentication has no client-ca-file")
	}
	data := network.joinInfo()
	data[JoinInfoCluster] = cluster
	data[JoinInfoCA] = string(caPEM)
	data[JoinInfoClientCA] = clientCA
	if err := patchJoinInfo(ctx, c, data); err != nil {
		return err
	}
	kc, err := ClusterInfoKubeconfigFor(serverOf(c), caPEM)
	if err != nil {
		return err
	}
	// A merge patch of the kubeconfig alone keeps the signatures the
	// bootstrapsigner added (it re-signs when the kubeconfig changes).
	if err := patchConfigMap(ctx, c, ClusterInfoName, map[string]any{ClusterInfoKubeconfig: string(kc)}); err != nil {
		return err
	}
	return ensureJoinInfoReader(ctx, c)
}

// RecordToken adds a token to the join information and forgets records
// that expired more than a week ago.
func RecordToken(ctx context.Context, c kubernetes.Interface, tok Token, pool string, now time.Time) error {
	rec, err := json.Marshal(TokenRecord{NodePool: pool, Expiration: tok.Expiration})
	if err != nil {
		return err
	}
	patch := map[string]any{TokenRecordKey(tok.ID): string(rec)}
	if cm, err := c.CoreV1().ConfigMaps(JoinInfoNamespace).Get(ctx, JoinInfoName, metav1.GetOptions{}); err == nil {
		for key := range cm.Data {
			id, isToken := strings.CutPrefix(key, joinInfoTokenPrefix)
			if !isToken {
				continue
			}
			if old, ok := LookupToken(cm.Data, id); !ok || now.Sub(old.Expiration) > tokenRecordRetention {
				patch[key] = nil
			}
		}
	}
	return patchJoinInfo(ctx, c, patch)
}

// patchJoinInfo merges data into the join information ConfigMap, creating
// it when missing. A merge patch touches only the keys it names, so the
// controller and `create join-command` never overwrite each other.
func patchJoinInfo(ctx context.Context, c kubernetes.Interface, data map[string]any) error {
	return patchConfigMap(ctx, c, JoinInfoName, data)
}

// patchConfigMap merges data into a ConfigMap of kube-public, creating it
// when missing.
func patchConfigMap(ctx context.Context, c kubernetes.Interface, name string, data map[string]any) error {
	api := c.CoreV1().ConfigMaps(JoinInfoNamespace)
	body, err := json.Marshal(map[string]any{"data": data})
	if err != nil {
		return err
	}
	// The merge patch is idempotent: it is sent again after an error that a
	// busy or restarting API server returns (a cluster's first minute).
	err = retry.OnError(patchBackoff, transient, func() error {
		var err error
		for range 3 {
			_, err = api.Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{})
			if !apierrors.IsNotFound(err) {
				return err
			}
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
				Namespace: JoinInfoNamespace, Name: name,
				Labels: map[string]string{"app.kubernetes.io/managed-by": "hypershift"},
			}}
			if _, err = api.Create(ctx, cm, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return err
			}
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("update %s/%s: %w", JoinInfoNamespace, name, err)
	}
	return nil
}

// patchBackoff spaces the attempts of patchConfigMap: 0.5 s doubling, five
// attempts in about 8 s.
var patchBackoff = wait.Backoff{Duration: 500 * time.Millisecond, Factor: 2, Steps: 5}

// transient reports whether err is one that the same request may not meet
// again: a timeout (of the connection, the TLS handshake or the server),
// a refused or reset connection, or the server asking the client to come
// back later. A refusal of the request itself is not.
func transient(err error) bool {
	var netErr net.Error
	return (errors.As(err, &netErr) && netErr.Timeout()) ||
		utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) ||
		apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
		apierrors.IsTooManyRequests(err) || apierrors.IsServiceUnavailable(err)
}

// ensureJoinInfoReader lets unauthenticated clients get the join
// information and cluster-info ConfigMaps, as kubeadm lets them get
// cluster-info. A Role of an older version (join information only) is
// updated.
func ensureJoinInfoReader(ctx context.Context, c kubernetes.Interface) error {
	labels := map[string]string{"app.kubernetes.io/managed-by": "hypershift"}
	rules := []rbacv1.PolicyRule{{
		APIGroups: []string{""}, Resources: []string{"configmaps"},
		ResourceNames: []string{JoinInfoName, ClusterInfoName}, Verbs: []string{"get"},
	}}
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: JoinInfoNamespace, Name: joinInfoReaderRole, Labels: labels},
		Rules:      rules,
	}
	roles := c.RbacV1().Roles(JoinInfoNamespace)
	if _, err := roles.Create(ctx, role, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		existing, err := roles.Get(ctx, role.Name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("read Role %s: %w", role.Name, err)
		}
		if !equality.Semantic.DeepEqual(existing.Rules, rules) {
			existing.Rules = rules
			if _, err := roles.Update(ctx, existing, metav1.UpdateOptions{}); err != nil {
				return fmt.Errorf("update Role %s: %w", role.Name, err)
			}
		}
	} else if err != nil {
		return fmt.Errorf("create Role %s: %w", role.Name, err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: JoinInfoNamespace, Name: joinInfoReaderRole, Labels: labels},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: joinInfoReaderRole},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "system:anonymous"}},
	}
	if _, err := c.RbacV1().RoleBindings(JoinInfoNamespace).Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create RoleBinding %s: %w", binding.Name, err)
	}
	return nil
}
