package etcdhandover

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"hypershift.dev/internal/pki"
	"hypershift.dev/internal/testenv"
)

// Three real etcd members with client TLS as the control plane sets them
// up: the hand-over of the leader moves leadership to another member, that
// of a follower does nothing, and the flags are read as rendered.
func TestHandOver(t *testing.T) {
	ca, err := pki.NewCA("etcd")
	if err != nil {
		t.Fatal(err)
	}
	serving, err := pki.Issue(ca, pki.CertRequest{CommonName: "etcd-server", IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Server: true, Client: true})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name string, content []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, content, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	caFile, certFile, keyFile := write("ca.crt", ca.CertPEM), write("server.crt", serving.CertPEM), write("server.key", serving.KeyPEM)

	const n = 3
	names, peers, clients := make([]string, n), make([]url.URL, n), make([]url.URL, n)
	var initial []string
	for i := range n {
		names[i] = fmt.Sprintf("etcd-%d", i)
		peers[i] = url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))}
		clients[i] = url.URL{Scheme: "https", Host: fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))}
		initial = append(initial, names[i]+"="+peers[i].String())
	}
	members := make([]*embed.Etcd, n)
	started := make(chan error, n)
	for i := range n {
		go func() {
			cfg := embed.NewConfig()
			cfg.Name, cfg.Dir = names[i], filepath.Join(dir, names[i])
			cfg.InitialCluster = strings.Join(initial, ",")
			cfg.InitialClusterToken = "handover"
			cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
			cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peers[i]}, []url.URL{peers[i]}
			cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{clients[i]}, []url.URL{clients[i]}
			cfg.ListenMetricsUrls = nil
			cfg.ClientTLSInfo.TrustedCAFile, cfg.ClientTLSInfo.CertFile, cfg.ClientTLSInfo.KeyFile = caFile, certFile, keyFile
			cfg.ClientTLSInfo.ClientCertAuth = true
			e, err := embed.StartEtcd(cfg)
			if err == nil {
				members[i] = e
				select {
				case <-e.Server.ReadyNotify():
				case <-time.After(time.Minute):
					err = fmt.Errorf("%s not ready", names[i])
				}
			}
			started <- err
		}()
	}
	for range n {
		if err := <-started; err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, e := range members {
			if e != nil {
				e.Close()
			}
		}
	})
	flagsOf := func(i int) memberFlags {
		m, ok := parseMemberFlags([]string{
			"--name=" + names[i], "--data-dir=/nowhere", "--advertise-client-urls=" + clients[i].String(),
			"--cert-file=" + certFile, "--key-file=" + keyFile, "--trusted-ca-file=" + caFile, "--client-cert-auth=true",
		})
		if !ok {
			t.Fatalf("the flags of %s were not read", names[i])
		}
		return m
	}
	leader := func() int {
		for i, e := range members {
			if e.Server.Leader() == e.Server.MemberID() {
				return i
			}
		}
		return -1
	}
	var was int
	testenv.Eventually(t, 30*time.Second, "a leader", func() (bool, error) {
		was = leader()
		return was >= 0, nil
	})

	ctx, cancel := context.WithTimeout(t.Context(), handOverTimeout)
	defer cancel()
	follower := (was + 1) % n
	if to, err := flagsOf(follower).handOver(ctx); err != nil || to != "" {
		t.Fatalf("a follower's hand-over: %q, %v; want nothing done", to, err)
	}
	if now := leader(); now != was {
		t.Fatalf("a follower's hand-over moved leadership from %s to %d", names[was], now)
	}
	to, err := flagsOf(was).handOver(ctx)
	if err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, "leadership moved to "+to, func() (bool, error) {
		now := leader()
		return now >= 0 && names[now] == to && now != was, nil
	})
}

func TestParseMemberFlags(t *testing.T) {
	if _, ok := parseMemberFlags([]string{"--name=etcd-0", "--cert-file=a", "--key-file=b", "--trusted-ca-file=c"}); ok {
		t.Error("flags without a client URL were taken")
	}
	m, ok := parseMemberFlags([]string{"--name=etcd-0", "--advertise-client-urls=https://127.0.0.1:1,https://127.0.0.1:2", "--cert-file=a", "--key-file=b", "--trusted-ca-file=c"})
	if !ok || m.clientURL != "https://127.0.0.1:1" || m.name != "etcd-0" {
		t.Errorf("parsed %+v, %t", m, ok)
	}
}
