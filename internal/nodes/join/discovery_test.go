package join

import (
	"bytes"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"hypershift.dev/internal/nodes/bootstrap"
	"hypershift.dev/internal/nodes/join/jointest"
	"hypershift.dev/internal/pki"
)

func newCA(t *testing.T, name string) pki.KeyPair {
	t.Helper()
	ca, err := pki.NewCA(name)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func TestDiscoverGenuineCluster(t *testing.T) {
	c := jointest.NewCluster(t)
	srv := c.Genuine(t)
	got, err := Discover(t.Context(), srv.URL, c.Token.String(), c.Hash(t))
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != c.Name || got.NodePool != c.Pool || got.Server != srv.URL {
		t.Errorf("discovered %s pool %s at %s", got.Name, got.NodePool, got.Server)
	}
	if !bytes.Equal(got.CAPEM, c.Root.CertPEM) || !bytes.Equal(got.ClientCAPEM, c.ClientCA.CertPEM) {
		t.Errorf("discovered CA\n%s\nclient CA\n%s", got.CAPEM, got.ClientCAPEM)
	}
	if got.Network.ClusterCIDR != "10.132.0.0/14" || got.Network.ClusterDNS != "172.31.0.10" || got.Network.APIServerPort != 6443 {
		t.Errorf("discovered network %+v", got.Network)
	}
}

// Join information of an older operator has no network: the node could
// not run kube-proxy or its API server proxy, so the join stops there,
// before the token is sent.
func TestDiscoverRefusesJoinInfoWithoutNetwork(t *testing.T) {
	c := jointest.NewCluster(t)
	srv := c.Start(t, c.Root, func(s *jointest.Server) { s.Network = nil })
	_, err := Discover(t.Context(), srv.URL, c.Token.String(), c.Hash(t))
	if err == nil || !strings.Contains(err.Error(), "lacks serviceCIDR") {
		t.Fatalf("Discover = %v, want a refusal naming the missing keys", err)
	}
	if srv.TokenSeen.Load() {
		t.Error("the token was sent to a cluster the node cannot join")
	}
}

// An interceptor (a proxy or a host answering for the server's address)
// appends its own CA to the genuine bundle, so that the pinned hash of the
// first certificate still matches, and presents a certificate of its own
// CA. Discovery must trust the pinned certificate only: the interceptor
// never gets the token, and its CAs never reach the node.
func TestDiscoverRefusesAnInterceptorsAppendedCA(t *testing.T) {
	c := jointest.NewCluster(t)
	attacker, attackerClients := newCA(t, "root-ca"), newCA(t, "client-ca")
	cases := map[string]func(*jointest.Server){
		"CA appended, own client CA": func(s *jointest.Server) {
			s.CABundle = append(append([]byte{}, c.Root.CertPEM...), attacker.CertPEM...)
			s.ClientCABundle = attackerClients.CertPEM
		},
		"CA and client CA appended, unsigned": func(s *jointest.Server) {
			s.CABundle = append(append([]byte{}, c.Root.CertPEM...), attacker.CertPEM...)
			s.ClientCABundle = append(append([]byte{}, c.ClientCA.CertPEM...), attackerClients.CertPEM...)
			s.SigningSecret = "" // it does not know the token's secret
		},
		"CA prepended": func(s *jointest.Server) {
			s.CABundle = append(append([]byte{}, attacker.CertPEM...), c.Root.CertPEM...)
		},
	}
	for name, change := range cases {
		t.Run(name, func(t *testing.T) {
			interceptor := c.Start(t, attacker, change)
			got, err := Discover(t.Context(), interceptor.URL, c.Token.String(), c.Hash(t))
			if err == nil {
				t.Fatalf("discovery through an interceptor succeeded: CA\n%s\nclient CA\n%s", got.CAPEM, got.ClientCAPEM)
			}
			if !strings.Contains(err.Error(), "certificate signed by unknown authority") {
				t.Errorf("error %q does not say the server's certificate is not the pinned CA's", err)
			}
			if interceptor.TokenSeen.Load() {
				t.Error("the token was sent to the interceptor")
			}
		})
	}
}

// A server that presents the pinned CA but cannot sign cluster-info with
// the token's secret (or signs it with another) is refused before the
// token is sent.
func TestDiscoverChecksTheTokenSignature(t *testing.T) {
	c := jointest.NewCluster(t)
	srv := c.Start(t, c.Root, func(s *jointest.Server) { s.SigningSecret = "0123456789abcdef" })
	_, err := Discover(t.Context(), srv.URL, c.Token.String(), c.Hash(t))
	want := "bootstrap token " + c.Token.ID + " of NodePool r was refused by clusters/r: its secret part is wrong"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want it to say %q", err, want)
	}
	if srv.TokenSeen.Load() {
		t.Error("the token was sent although cluster-info's signature did not match it")
	}
}

func TestDiscoverSaysWhatIsWrong(t *testing.T) {
	defer func(fresh, unsigned time.Duration) { freshTokenWait, unsignedTokenWait = fresh, unsigned }(freshTokenWait, unsignedTokenWait)
	freshTokenWait, unsignedTokenWait = time.Second, time.Second
	c := jointest.NewCluster(t)
	other := jointest.NewCluster(t)
	srv := c.Genuine(t)
	expired := c.Start(t, c.Root, func(s *jointest.Server) {
		s.Records[c.Token.ID] = bootstrap.TokenRecord{NodePool: c.Pool, Expiration: time.Now().Add(-time.Minute)}
	})
	leafClientCA := c.Start(t, c.Root, func(s *jointest.Server) {
		leaf, err := pki.Issue(c.ClientCA, pki.CertRequest{CommonName: "not-a-ca", Client: true})
		if err != nil {
			t.Fatal(err)
		}
		s.ClientCABundle = append(append([]byte{}, c.ClientCA.CertPEM...), leaf.CertPEM...)
	})
	deleted := c.Start(t, c.Root, func(s *jointest.Server) { s.SigningSecret = "" })
	cases := []struct {
		name, server, token, hash, want string
	}{
		{"recorded token deleted", deleted.URL, c.Token.String(), c.Hash(t), "is not usable on clusters/r: it was deleted (a --single-use token is, once a node used it)"},
		{"unknown token", srv.URL, "abcdef.0123456789abcdef", c.Hash(t), "bootstrap token abcdef was not issued by hosted cluster clusters/r"},
		{"wrong secret", srv.URL, c.Token.ID + ".0123456789abcdef", c.Hash(t), "its secret part is wrong"},
		{"another cluster's hash", srv.URL, c.Token.String(), other.Hash(t), "the join command is for another cluster"},
		{"expired", expired.URL, c.Token.String(), c.Hash(t), "of NodePool r expired at"},
		{"client CA holds a leaf", leafClientCA.URL, c.Token.String(), c.Hash(t), `holds "not-a-ca", which is not a CA certificate`},
		{"malformed token", srv.URL, "nope", c.Hash(t), "--token must be ID.SECRET"},
		{"malformed hash", srv.URL, c.Token.String(), "sha256:abc", "--ca-cert-hash must be sha256:"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Discover(t.Context(), tc.server, tc.token, tc.hash)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to say %q", err, tc.want)
			}
		})
	}
	if srv.TokenSeen.Load() || expired.TokenSeen.Load() || leafClientCA.TokenSeen.Load() || deleted.TokenSeen.Load() {
		t.Error("a token was sent although discovery refused it first")
	}
}

// A machine may boot while its API server does not answer: discovery tries
// again, and joins once it does.
func TestDiscoverRetriesAnUnreachableServer(t *testing.T) {
	c := jointest.NewCluster(t)
	srv := c.Genuine(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// The first two connections are dropped, then the server answers.
	var conns atomic.Int32
	go func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			if conns.Add(1) <= 2 {
				_ = in.Close()
				continue
			}
			out, err := net.Dial("tcp", srv.Listener.Addr().String())
			if err != nil {
				_ = in.Close()
				continue
			}
			go func() { _, _ = io.Copy(out, in); _ = out.Close() }()
			go func() { _, _ = io.Copy(in, out); _ = in.Close() }()
		}
	}()
	got, err := Discover(t.Context(), "https://"+l.Addr().String(), c.Token.String(), c.Hash(t))
	if err != nil {
		t.Fatalf("Discover through a server that drops its first connections: %v", err)
	}
	if got.Name != c.Name || conns.Load() < 3 {
		t.Errorf("discovered %q after %d connections", got.Name, conns.Load())
	}

	old := unreachableRetry
	unreachableRetry = 2 * time.Second
	defer func() { unreachableRetry = old }()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := closed.Addr().String()
	_ = closed.Close()
	if _, err := Discover(t.Context(), "https://"+addr, c.Token.String(), c.Hash(t)); err == nil || !strings.Contains(err.Error(), "tried for 2s") {
		t.Errorf("Discover of a server that never answers = %v, want it to give up saying how long it tried", err)
	}
}
