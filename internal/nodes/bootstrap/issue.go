package bootstrap

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"hypershift.dev/internal/kubeconfig"
	"hypershift.dev/internal/pki"
)

// TokenRequest says which token to issue.
type TokenRequest struct {
	// Pool is the NodePool whose nodes the token lets in.
	Pool string
	// Now and TTL set the token's expiration.
	Now time.Time
	TTL time.Duration
	// SingleUse labels the token to be deleted once one node used it.
	SingleUse bool
}

// IssueToken makes a new bootstrap token in the hosted cluster of c: its
// Secret in kube-system, and its record in the join information, which
// tells `hypershift join` the pool it belongs to. `create join-command` and
// the NodePool controller both issue tokens through it.
func IssueToken(ctx context.Context, c kubernetes.Interface, req TokenRequest) (Token, error) {
	tok, err := NewToken(req.Now, req.TTL)
	if err != nil {
		return Token{}, err
	}
	secret := tok.AsSecret(req.Pool)
	if req.SingleUse {
		secret = tok.AsSingleUseSecret(req.Pool)
	}
	if _, err := c.CoreV1().Secrets(metav1.NamespaceSystem).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		return Token{}, fmt.Errorf("create bootstrap token: %w", err)
	}
	if err := RecordToken(ctx, c, tok, req.Pool, req.Now); err != nil {
		return Token{}, err
	}
	return tok, nil
}

// Join is what `hypershift join` needs to join a hosted cluster: its API
// server, a bootstrap token, and the hash that pins the cluster's CA.
type Join struct {
	Server string
	Token  Token
	CAHash string
}

// IssueJoin issues a token for req.Pool in the hosted cluster of
// adminKubeconfig and returns what `hypershift join` needs to use it. It
// first publishes the join information of cluster (NS/NAME), which `join`
// reads before it trusts the API server.
func IssueJoin(ctx context.Context, adminKubeconfig []byte, cluster string, network Network, req TokenRequest) (Join, error) {
	server, caPEM, err := Endpoint(adminKubeconfig)
	if err != nil {
		return Join{}, err
	}
	kube, err := clientOf(adminKubeconfig)
	if err != nil {
		return Join{}, err
	}
	if err := EnsureJoinInfo(ctx, kube, cluster, caPEM, network); err != nil {
		return Join{}, err
	}
	hash, err := pki.CACertHash(caPEM)
	if err != nil {
		return Join{}, fmt.Errorf("hash of the cluster CA: %w", err)
	}
	tok, err := IssueToken(ctx, kube, req)
	if err != nil {
		return Join{}, err
	}
	return Join{Server: server, Token: tok, CAHash: hash}, nil
}

// JoinCommand is IssueJoin's `hypershift join` line.
func JoinCommand(ctx context.Context, adminKubeconfig []byte, cluster string, network Network, req TokenRequest) (string, error) {
	j, err := IssueJoin(ctx, adminKubeconfig, cluster, network, req)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("hypershift join --server %s --token %s --ca-cert-hash %s", j.Server, j.Token, j.CAHash), nil
}

// RevokeToken deletes the Secret of tok, a token this program just issued
// in the hosted cluster of adminKubeconfig and could not hand out; gone
// already is fine.
func RevokeToken(ctx context.Context, adminKubeconfig []byte, tok Token) error {
	kube, err := clientOf(adminKubeconfig)
	if err != nil {
		return err
	}
	err = kube.CoreV1().Secrets(metav1.NamespaceSystem).Delete(ctx, tok.SecretName(), metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// clientOf is a client of the hosted cluster of adminKubeconfig, read with
// kubeconfig.Parse: inline credentials only.
func clientOf(adminKubeconfig []byte) (kubernetes.Interface, error) {
	cfg, err := kubeconfig.Parse(adminKubeconfig)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}
