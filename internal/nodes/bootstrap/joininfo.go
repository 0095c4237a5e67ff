package bootstrap

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
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
	// joinInfoTokenPrefix starts the key of a token record.
	joinInfoTokenPrefix = "token."

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

// CAHash is the --ca-cert-hash of a CA bundle, as kubeadm writes it:
// "sha256:" and the hex SHA-256 of the first certificate's public key
// (its DER SubjectPublicKeyInfo).
func CAHash(caPEM []byte) (string, error) {
	block, _ := pem.Decode(caPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return "", errors.New("no PEM certificate in the CA bundle")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return "", fmt.Errorf("parse CA certificate: %w", err)
	}
	sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// EnsureJoinInfo publishes a hosted cluster's join information and lets
// anonymous users read it (and only it). The client CA is read from the
// API server's own kube-system/extension-apiserver-authentication.
func EnsureJoinInfo(ctx context.Context, c kubernetes.Interface, cluster string, caPEM []byte) error {
	auth, err := c.CoreV1().ConfigMaps(metav1.NamespaceSystem).Get(ctx, "extension-apiserver-authentication", metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("read the API server's client CA: %w", err)
	}
	clientCA := auth.Data["client-ca-file"]
	if clientCA == "" {
		return errors.New("extension-apiserver-authentication has no client-ca-file")
	}
	if err := patchJoinInfo(ctx, c, map[string]any{
		JoinInfoCluster:  cluster,
		JoinInfoCA:       string(caPEM),
		JoinInfoClientCA: clientCA,
	}); err != nil {
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
	api := c.CoreV1().ConfigMaps(JoinInfoNamespace)
	body, err := json.Marshal(map[string]any{"data": data})
	if err != nil {
		return err
	}
	for range 3 {
		_, err = api.Patch(ctx, JoinInfoName, types.MergePatchType, body, metav1.PatchOptions{})
		if !apierrors.IsNotFound(err) {
			break
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Namespace: JoinInfoNamespace, Name: JoinInfoName,
			Labels: map[string]string{"app.kubernetes.io/managed-by": "hypershift"},
		}}
		if _, err = api.Create(ctx, cm, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("update %s/%s: %w", JoinInfoNamespace, JoinInfoName, err)
	}
	return nil
}

// ensureJoinInfoReader lets unauthenticated clients get the join
// information ConfigMap, as kubeadm lets them get cluster-info.
func ensureJoinInfoReader(ctx context.Context, c kubernetes.Interface) error {
	labels := map[string]string{"app.kubernetes.io/managed-by": "hypershift"}
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: JoinInfoNamespace, Name: joinInfoReaderRole, Labels: labels},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{""}, Resources: []string{"configmaps"},
			ResourceNames: []string{JoinInfoName}, Verbs: []string{"get"},
		}},
	}
	if _, err := c.RbacV1().Roles(JoinInfoNamespace).Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
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
