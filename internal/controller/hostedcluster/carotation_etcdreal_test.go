package hostedcluster

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"hypershift.dev/internal/pki"
	"hypershift.dev/internal/testenv"
)

// TestEtcdCARotationAgainstRealEtcd runs a real etcd the way a control
// plane does (client certificate auth, its certificate files re-read per
// handshake, its CA read once) through the etcd CA's rotation: while it
// holds the old CA alone, the reissued leaves work only through their
// cross-signed chain, and only a restart with the new bundle makes it
// refuse the old CA — what ReissueLeaves and DropOld wait for.
func TestEtcdCARotationAgainstRealEtcd(t *testing.T) {
	ctx := t.Context()
	store := pki.FileStore{Dir: t.TempDir()}
	opts := pki.ControlPlaneOptions{Renew: true}
	before, err := pki.EnsureControlPlane(store, opts)
	if err != nil {
		t.Fatal(err)
	}
	dir, data := t.TempDir(), t.TempDir()
	write := func(name string, content []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path+".tmp", content, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path+".tmp", path); err != nil {
			t.Fatal(err)
		}
		return path
	}
	port := testenv.FreePort(t)
	clientURL := fmt.Sprintf("https://127.0.0.1:%d", port)
	start := func(cp *pki.ControlPlane) *embed.Etcd {
		cfg := embed.NewConfig()
		cfg.Name, cfg.Dir = "etcd-0", data
		peer, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", testenv.FreePort(t)))
		client, _ := url.Parse(clientURL)
		cfg.InitialCluster = "etcd-0=" + peer.String()
		cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
		cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*peer}, []url.URL{*peer}
		cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*client}, []url.URL{*client}
		cfg.ListenMetricsUrls = nil
		cfg.ClientTLSInfo.TrustedCAFile = write("ca.crt", cp.Bundle(pki.EtcdCAName))
		cfg.ClientTLSInfo.CertFile = write("server.crt", cp.EtcdServer.CertPEM)
		cfg.ClientTLSInfo.KeyFile = write("server.key", cp.EtcdServer.KeyPEM)
		cfg.ClientTLSInfo.ClientCertAuth = true
		e, err := embed.StartEtcd(cfg)
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-e.Server.ReadyNotify():
		case <-time.After(60 * time.Second):
			e.Close()
			t.Fatal("etcd did not become ready")
		}
		return e
	}
	e := start(before)
	defer func() { e.Close() }()
	urls := []string{clientURL}

	// ReissueLeaves: the new CA signs; etcd still holds the old CA alone
	// and re-reads only its own certificate.
	for _, step := range []func() error{
		func() error { return pki.StartCARotation(store, pki.RotatedCANames(), 0, time.Now()) },
		func() error { return pki.PromoteNextCAs(store, pki.RotatedCANames()) },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	reissued, err := pki.EnsureControlPlane(store, opts)
	if err != nil {
		t.Fatal(err)
	}
	write("server.crt", reissued.EtcdServer.CertPEM)
	write("server.key", reissued.EtcdServer.KeyPEM)
	if obs := observeEtcdReissued(ctx, urls, reissued); !obs.done {
		t.Fatalf("ReissueLeaves against etcd holding the old CA: %s", obs.waiting)
	}
	// Without the chain, the old CA etcd holds would refuse the same leaf.
	bare, err := pki.Issue(reissued.EtcdCA, pki.CertRequest{CommonName: "etcd-client", Client: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := etcdHealth(ctx, clientURL, reissued.EtcdCA.CertPEM, bare); err == nil {
		t.Fatal("etcd holding the old CA accepted a certificate of the new CA without the cross-signed chain: the test shows nothing")
	}

	// DropOld: a probe of the old CA is accepted until etcd restarts with
	// the new bundle alone, refused after; the leaves keep their chain.
	probe, err := pki.Issue(reissued.Previous[pki.EtcdCAName], pki.CertRequest{CommonName: probeCommonName, Client: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := pki.DropPreviousCAs(store, pki.RotatedCANames()); err != nil {
		t.Fatal(err)
	}
	dropped, err := pki.EnsureControlPlane(store, opts)
	if err != nil {
		t.Fatal(err)
	}
	if obs := observeEtcdDropped(ctx, urls, dropped, probe, true); obs.done {
		t.Fatal("DropOld saw the old etcd CA refused before etcd restarted")
	}
	e.Close()
	e = start(dropped)
	if obs := observeEtcdDropped(ctx, urls, dropped, probe, true); !obs.done {
		t.Fatalf("DropOld after etcd restarted with the new bundle: %s", obs.waiting)
	}
}
