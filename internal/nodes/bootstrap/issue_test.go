package bootstrap

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/testenv"
)

// IssueToken makes the token Secret the API server authenticates with and
// records the token's pool in the join information; a single-use token is
// labelled so.
func TestIssueTokenCreatesTheSecretAndItsRecord(t *testing.T) {
	env := testenv.Start(t)
	kube := kubernetes.NewForConfigOrDie(env.RESTConfig)
	ctx := t.Context()
	now := time.Now()
	for _, tc := range []struct {
		pool      string
		singleUse bool
	}{{"shared", false}, {"once", true}} {
		tok, err := IssueToken(ctx, kube, TokenRequest{Pool: tc.pool, Now: now, TTL: time.Hour, SingleUse: tc.singleUse})
		if err != nil {
			t.Fatalf("%s: %v", tc.pool, err)
		}
		if d := tok.Expiration.Sub(now); d > time.Hour || d < time.Hour-2*time.Second {
			t.Errorf("%s: token expires %s, want within an hour of %s", tc.pool, tok.Expiration, now)
		}
		secret, err := kube.CoreV1().Secrets(metav1.NamespaceSystem).Get(ctx, tok.SecretName(), metav1.GetOptions{})
		if err != nil {
			t.Fatalf("%s: token Secret: %v", tc.pool, err)
		}
		if secret.Type != SecretType || secret.Labels[hypershiftv1alpha1.NodePoolLabel] != tc.pool {
			t.Errorf("%s: Secret type %s labels %v, want a bootstrap token of pool %s", tc.pool, secret.Type, secret.Labels, tc.pool)
		}
		if got := secret.Labels[SingleUseLabel] == "true"; got != tc.singleUse {
			t.Errorf("%s: single-use label %v, want %v", tc.pool, got, tc.singleUse)
		}
		cm, err := kube.CoreV1().ConfigMaps(JoinInfoNamespace).Get(ctx, JoinInfoName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if rec, ok := LookupToken(cm.Data, tok.ID); !ok || rec.NodePool != tc.pool {
			t.Errorf("%s: join information records %+v (%v), want pool %s", tc.pool, rec, ok, tc.pool)
		}
	}
}
