package bootstrap

import (
	"regexp"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// secretOf turns a rendered token Secret into what the API server returns
// (StringData becomes Data).
func secretOf(t Token, pool string) *corev1.Secret {
	s := t.AsSecret(pool)
	s.Data = map[string][]byte{}
	for k, v := range s.StringData {
		s.Data[k] = []byte(v)
	}
	s.StringData = nil
	return s
}

func TestNewToken(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	tok, err := NewToken(now, DefaultTTL)
	if err != nil {
		t.Fatal(err)
	}
	// The API server's token format.
	if !regexp.MustCompile(`^[a-z0-9]{6}\.[a-z0-9]{16}$`).MatchString(tok.String()) {
		t.Errorf("token %q does not match [a-z0-9]{6}.[a-z0-9]{16}", tok)
	}
	s := tok.AsSecret("workers")
	if s.Name != "bootstrap-token-"+tok.ID || s.Namespace != "kube-system" || s.Type != SecretType {
		t.Errorf("secret %s/%s of type %s", s.Namespace, s.Name, s.Type)
	}
	for k, want := range map[string]string{
		"usage-bootstrap-authentication": "true",
		"usage-bootstrap-signing":        "true",
		"auth-extra-groups":              "system:bootstrappers:hypershift:workers",
		"expiration":                     "2030-01-02T00:00:00Z",
	} {
		if got := s.StringData[k]; got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
}

func TestSingleUseSecret(t *testing.T) {
	tok, err := NewToken(time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if got := tok.AsSingleUseSecret("workers").Labels; got[SingleUseLabel] != "true" || got["hypershift.dev/nodepool"] != "workers" {
		t.Errorf("single-use token Secret labels %v, want %s=true and its pool", got, SingleUseLabel)
	}
	if _, ok := tok.AsSecret("workers").Labels[SingleUseLabel]; ok {
		t.Errorf("a standing token is labelled %s", SingleUseLabel)
	}
}

func TestCurrentToken(t *testing.T) {
	ttl := 24 * time.Hour
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	old, _ := NewToken(start, ttl)
	newer, _ := NewToken(start.Add(10*time.Hour), ttl)
	other, _ := NewToken(start.Add(20*time.Hour), ttl)
	singleUse, _ := NewToken(start.Add(12*time.Hour), ttl)
	single := secretOf(singleUse, "a")
	single.Labels[SingleUseLabel] = "true"
	secrets := []*corev1.Secret{secretOf(old, "a"), secretOf(newer, "a"), secretOf(other, "b"), single}

	cases := []struct {
		name   string
		now    time.Time
		want   string
		wantOK bool
	}{
		{"newest of the pool", start.Add(11 * time.Hour), newer.ID, true},
		{"still young enough", start.Add(10*time.Hour + 16*time.Hour - time.Second), newer.ID, true},
		{"last third of its life: rotate", start.Add(10*time.Hour + 16*time.Hour), "", false},
		{"expired", start.Add(48 * time.Hour), "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, rotateAt, ok := CurrentToken(secrets, "a", ttl, tc.now)
			if ok != tc.wantOK || got.ID != tc.want {
				t.Fatalf("got %q ok=%v, want %q ok=%v", got.ID, ok, tc.want, tc.wantOK)
			}
			if ok && !rotateAt.Equal(newer.Expiration.Add(-8*time.Hour)) {
				t.Errorf("rotateAt %s, want 8h before expiry %s", rotateAt, newer.Expiration)
			}
		})
	}
	if _, _, ok := CurrentToken(secrets, "c", ttl, start); ok {
		t.Error("a pool without tokens got one")
	}
}
