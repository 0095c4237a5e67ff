package cli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"hypershift.dev/internal/components"
	"hypershift.dev/internal/endpointproxy"
)

func init() { registerComponent(components.KubeAPIServerProxy, runKubeAPIServerProxy) }

// runKubeAPIServerProxy is `hypershift component kube-apiserver-proxy
// --listen ADDR --health-listen ADDR --backend-ca-file F --backend HOST:PORT …`:
// the stable endpoint of replicated API servers, routing to those whose
// /readyz passes.
func runKubeAPIServerProxy(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet(components.KubeAPIServerProxy, flag.ContinueOnError)
	listen := fs.String("listen", "", "address to listen on")
	healthListen := fs.String("health-listen", "", "address of the proxy's own /readyz (optional)")
	caFile := fs.String("backend-ca-file", "", "CA that signs the API servers' serving certificates")
	var backends backendList
	fs.Var(&backends, "backend", "API server address (repeat)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	check, err := readyzCheck(*caFile)
	if err != nil {
		return err
	}
	p, err := endpointproxy.New(backends, check)
	if err != nil {
		return fmt.Errorf("%s: %w", components.KubeAPIServerProxy, err)
	}
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("%s: %w", components.KubeAPIServerProxy, err)
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go p.HealthChecks(ctx, 500*time.Millisecond)
	if *healthListen != "" {
		go serveProxyHealth(ctx, *healthListen, p)
	}
	return p.Serve(ctx, l)
}

// readyzCheck probes an API server's /readyz, verifying it with caFile.
func readyzCheck(caFile string) (func(context.Context, string) error, error) {
	if caFile == "" {
		return nil, nil
	}
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("read backend CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, errors.New("backend CA file holds no certificate")
	}
	client := &http.Client{Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		DisableKeepAlives: true,
	}}
	return func(ctx context.Context, backend string) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+backend+"/readyz", nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("readyz: %d", resp.StatusCode)
		}
		return nil
	}, nil
}

func serveProxyHealth(ctx context.Context, addr string, p *endpointproxy.Proxy) {
	mux := http.NewServeMux()
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !p.Ready() {
			http.Error(w, "no ready API server", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	_ = srv.ListenAndServe()
}

type backendList []string

func (b *backendList) String() string { return strings.Join(*b, ",") }

func (b *backendList) Set(v string) error {
	*b = append(*b, v)
	return nil
}
