// Package bootstrap gives nodes a way into a hosted cluster, the way kubeadm
// does: a bootstrap token per NodePool (a Secret in the hosted cluster's
// kube-system), RBAC that lets token holders ask for a node client
// certificate — which the hosted controller manager then approves and signs —
// and the checks before approving a kubelet's serving certificate, which
// nothing in Kubernetes approves by itself.
package bootstrap

import (
	"crypto/rand"
	"fmt"
	"math/big"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
)

// Bootstrap token Secrets, as the API server's token authenticator reads
// them (the names of k8s.io/cluster-bootstrap/token/api).
const (
	// SecretType is the type of a bootstrap token Secret.
	SecretType corev1.SecretType = "bootstrap.kubernetes.io/token" //nolint:gosec // a Secret type, not a credential
	// SecretPrefix starts the name of every bootstrap token Secret.
	SecretPrefix = "bootstrap-token-"

	keyTokenID      = "token-id"
	keyTokenSecret  = "token-secret"
	keyExpiration   = "expiration"
	keyDescription  = "description"
	keyUsageAuth    = "usage-bootstrap-authentication"
	keyUsageSigning = "usage-bootstrap-signing"
	keyExtraGroups  = "auth-extra-groups"

	// BootstrappersGroup is the group of every bootstrap token.
	BootstrappersGroup = "system:bootstrappers"
	// NodesGroup is the group of every node's client certificate.
	NodesGroup = "system:nodes"
	// NodeUserPrefix starts a node's user name: system:node:<node name>.
	NodeUserPrefix = "system:node:"
	// SingleUseLabel marks a token Secret ("true") that is deleted as soon
	// as one node has used it to get its client certificate.
	SingleUseLabel = "hypershift.dev/single-use"
)

// Token lifetime. A token only lets a node ask for its client certificate;
// nodes that joined keep working after it expires, and the hosted
// controller manager's tokencleaner deletes expired ones.
const (
	// DefaultTTL is kubeadm's default token lifetime.
	DefaultTTL = 24 * time.Hour
	// MaxTTL bounds the tokens `create join-command` makes: a join command
	// that leaks (shell history, a ticket, a chat) is good for a day at most.
	MaxTTL = 24 * time.Hour
	// A token is replaced once less than this share of its lifetime is left,
	// so a node joining just before expiry still has hours to finish.
	rotateWhenLeft = 3 // i.e. the last third
)

// PoolGroup is the extra group a NodePool's token authenticates as.
func PoolGroup(pool string) string { return BootstrappersGroup + ":hypershift:" + pool }

// Token is a bootstrap token: "<id>.<secret>".
type Token struct {
	ID         string
	Secret     string
	Expiration time.Time
}

// String is the bearer token.
func (t Token) String() string { return t.ID + "." + t.Secret }

// SecretName is the name of the token's Secret in kube-system.
func (t Token) SecretName() string { return SecretPrefix + t.ID }

const tokenAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789"

// NewToken returns a random token that expires after ttl.
func NewToken(now time.Time, ttl time.Duration) (Token, error) {
	id, err := randomString(6)
	if err != nil {
		return Token{}, err
	}
	secret, err := randomString(16)
	if err != nil {
		return Token{}, err
	}
	return Token{ID: id, Secret: secret, Expiration: now.Add(ttl).UTC().Truncate(time.Second)}, nil
}

func randomString(n int) (string, error) {
	out := make([]byte, n)
	max := big.NewInt(int64(len(tokenAlphabet)))
	for i := range out {
		v, err := rand.Int(rand.Reader, max)
		if err != nil {
			return "", fmt.Errorf("generate bootstrap token: %w", err)
		}
		out[i] = tokenAlphabet[v.Int64()]
	}
	return string(out), nil
}

// AsSecret renders the token as the Secret the API server authenticates with.
func (t Token) AsSecret(pool string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: metav1.NamespaceSystem,
			Name:      t.SecretName(),
			Labels:    map[string]string{hypershiftv1alpha1.NodePoolLabel: pool},
		},
		Type: SecretType,
		StringData: map[string]string{
			keyTokenID:      t.ID,
			keyTokenSecret:  t.Secret,
			keyExpiration:   t.Expiration.Format(time.RFC3339),
			keyDescription:  "Bootstrap token of NodePool " + pool + ", managed by hypershift",
			keyUsageAuth:    "true",
			keyUsageSigning: "true",
			keyExtraGroups:  PoolGroup(pool),
		},
	}
}

// AsSingleUseSecret renders the token as a Secret labelled SingleUseLabel:
// the NodePool controller deletes it once one node got its client
// certificate with it.
func (t Token) AsSingleUseSecret(pool string) *corev1.Secret {
	s := t.AsSecret(pool)
	s.Labels[SingleUseLabel] = "true"
	return s
}

// tokenFromSecret reads a token Secret; ok is false for anything else.
func tokenFromSecret(s *corev1.Secret) (Token, bool) {
	if s.Type != SecretType || !s.DeletionTimestamp.IsZero() {
		return Token{}, false
	}
	exp, err := time.Parse(time.RFC3339, string(s.Data[keyExpiration]))
	if err != nil {
		return Token{}, false
	}
	t := Token{ID: string(s.Data[keyTokenID]), Secret: string(s.Data[keyTokenSecret]), Expiration: exp}
	if t.ID == "" || t.Secret == "" || s.Name != t.SecretName() {
		return Token{}, false
	}
	return t, true
}

// CurrentToken picks the pool's token to hand out from the token Secrets of
// kube-system, single-use ones aside: the one that expires last, unless it is in the last third of
// its lifetime (then ok is false and a new token is due). rotateAt is when
// the returned token is due for replacement.
func CurrentToken(secrets []*corev1.Secret, pool string, ttl time.Duration, now time.Time) (tok Token, rotateAt time.Time, ok bool) {
	var tokens []Token
	for _, s := range secrets {
		// A single-use token is one host's, not the pool's to hand out.
		if s.Labels[hypershiftv1alpha1.NodePoolLabel] != pool || s.Labels[SingleUseLabel] == "true" {
			continue
		}
		if t, valid := tokenFromSecret(s); valid {
			tokens = append(tokens, t)
		}
	}
	if len(tokens) == 0 {
		return Token{}, time.Time{}, false
	}
	sort.Slice(tokens, func(i, j int) bool { return tokens[i].Expiration.After(tokens[j].Expiration) })
	tok = tokens[0]
	rotateAt = tok.Expiration.Add(-ttl / rotateWhenLeft)
	if !now.Before(rotateAt) {
		return Token{}, time.Time{}, false
	}
	return tok, rotateAt, true
}
