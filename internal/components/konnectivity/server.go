package konnectivity

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	serveroptions "sigs.k8s.io/apiserver-network-proxy/cmd/server/app/options"
	"sigs.k8s.io/apiserver-network-proxy/konnectivity-client/proto/client"
	"sigs.k8s.io/apiserver-network-proxy/pkg/server"
	"sigs.k8s.io/apiserver-network-proxy/pkg/server/proxystrategies"
	"sigs.k8s.io/apiserver-network-proxy/pkg/util"
	"sigs.k8s.io/apiserver-network-proxy/proto/agent"
)

// headerTimeout bounds how long the health and admin servers wait for a
// request's headers, as upstream's do.
const headerTimeout = 10 * time.Second

// serve runs upstream's proxy server (its routing, its backends, its
// frontend protocol) behind listeners of ours, because upstream's command
// has no hook for the one thing added: every agent's connection passes
// the node-identity check (nodeIdentity) before upstream sees it. It
// serves the form the control plane renders — the API servers on a unix
// socket over gRPC, the agents on a TLS port with client certificates of
// the cluster's Konnectivity CA, health and admin over HTTP — and refuses
// the options it does not implement rather than ignore them.
func serve(ctx context.Context, o *serveroptions.ProxyRunOptions) error {
	// Upstream's validation refuses a cluster CA together with token
	// authentication, as its agents prove themselves with one or the
	// other; here they need both, so the token options are checked below.
	upstream := *o
	upstream.AgentNamespace, upstream.AgentServiceAccount, upstream.AuthenticationAudience, upstream.KubeconfigPath = "", "", "", ""
	if err := upstream.Validate(); err != nil {
		return fmt.Errorf("%s: %w", Server, err)
	}
	switch {
	case o.Mode != "grpc" || o.UdsName == "":
		return fmt.Errorf("%s: only --mode=grpc with --uds-name is supported", Server)
	case o.ClusterCaCert == "":
		return fmt.Errorf("%s: --cluster-ca-cert is required: agents authenticate with a client certificate", Server)
	case o.AgentNamespace == "" || o.AgentServiceAccount == "" || o.AuthenticationAudience == "" || o.KubeconfigPath == "":
		return fmt.Errorf("%s: --agent-namespace, --agent-service-account, --authentication-audience and --kubeconfig are required: "+
			"every agent proves which node it runs on", Server)
	case o.EnableLeaseController, o.EnableProfiling:
		return fmt.Errorf("%s: --enable-lease-controller and --enable-profiling are not supported", Server)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", o.KubeconfigPath)
	if err != nil {
		return fmt.Errorf("%s: kubeconfig: %w", Server, err)
	}
	cfg.Timeout = reviewTimeout
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("%s: %w", Server, err)
	}
	ids := newNodeIdentity(kube, o.AgentNamespace, o.AgentServiceAccount, o.AuthenticationAudience)

	strategies, err := proxystrategies.ParseProxyStrategies(o.ProxyStrategies)
	if err != nil {
		return fmt.Errorf("%s: %w", Server, err)
	}
	// Upstream's own token check is off: nodeIdentity makes it, and more.
	ps := server.NewProxyServer(o.ServerID, strategies, o.ServerCount, &server.AgentTokenAuthenticationOptions{}, o.XfrChannelSize)
	ps.SetBackendDialTimeout(o.BackendDialTimeout)

	frontend, err := frontendServer(o, ps)
	if err != nil {
		return err
	}
	defer frontend.Stop()
	agents, err := agentServer(o, ps, ids)
	if err != nil {
		return err
	}
	defer agents.Stop()
	health, err := httpServer(o.HealthBindAddress, o.HealthPort, healthMux(ps))
	if err != nil {
		return err
	}
	defer health.Close()
	admin, err := httpServer(o.AdminBindAddress, o.AdminPort, adminMux())
	if err != nil {
		return err
	}
	defer admin.Close()

	<-ctx.Done()
	klog.InfoS("Shutting down")
	return nil
}

// frontendServer serves the API servers' tunnels on the unix socket,
// readable and writable by the server's user and group only.
func frontendServer(o *serveroptions.ProxyRunOptions, ps *server.ProxyServer) (*grpc.Server, error) {
	if o.DeleteUDSFile {
		if err := os.Remove(o.UdsName); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s: %w", Server, err)
		}
	}
	old := syscall.Umask(0o007)
	lis, err := net.Listen("unix", o.UdsName)
	syscall.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Server, err)
	}
	s := grpc.NewServer(grpc.KeepaliveParams(keepalive.ServerParameters{Time: o.FrontendKeepaliveTime}))
	client.RegisterProxyServiceServer(s, ps)
	go func() { _ = s.Serve(lis) }()
	return s, nil
}

// agentServer serves the agents: TLS with a client certificate of the
// cluster's CA, then the node-identity check on every stream.
func agentServer(o *serveroptions.ProxyRunOptions, ps *server.ProxyServer, ids *nodeIdentity) (*grpc.Server, error) {
	tlsConfig, err := agentTLS(o)
	if err != nil {
		return nil, err
	}
	s := grpc.NewServer(
		grpc.Creds(credentials.NewTLS(tlsConfig)),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: o.KeepaliveTime}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 30 * time.Second, PermitWithoutStream: true}),
		grpc.StreamInterceptor(ids.intercept),
	)
	agent.RegisterAgentServiceServer(s, ps)
	lis, err := net.Listen("tcp", net.JoinHostPort(o.AgentBindAddress, strconv.Itoa(o.AgentPort)))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Server, err)
	}
	go func() { _ = s.Serve(lis) }()
	return s, nil
}

func agentTLS(o *serveroptions.ProxyRunOptions) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(o.ClusterCert, o.ClusterKey)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Server, err)
	}
	ca, err := os.ReadFile(o.ClusterCaCert)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Server, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("%s: no certificate in %s", Server, o.ClusterCaCert)
	}
	minVersion, err := util.GetTLSVersion(o.TLSMinVersion)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Server, err)
	}
	var suites []uint16
	accepted := util.GetAcceptedCiphers()
	for _, name := range o.CipherSuites {
		id, ok := accepted[name]
		if !ok {
			return nil, fmt.Errorf("%s: unknown cipher suite %q", Server, name)
		}
		suites = append(suites, id)
	}
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pool,
		MinVersion:   minVersion,
		CipherSuites: suites,
	}, nil
}

// healthMux answers /healthz always and /readyz once an agent is
// connected, as upstream's health server does.
func healthMux(ps *server.ProxyServer) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.Handler())
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "ok") })
	ready := func(w http.ResponseWriter, _ *http.Request) {
		if ok, msg := ps.Readiness.Ready(); !ok {
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprint(w, msg)
			return
		}
		fmt.Fprint(w, "ok")
	}
	mux.HandleFunc("/readyz", ready)
	mux.HandleFunc("/ready", ready)
	return mux
}

func adminMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.Handler())
	return mux
}

// httpServer listens before it returns, so a taken port fails the start.
func httpServer(host string, port int, mux *http.ServeMux) (*http.Server, error) {
	lis, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Server, err)
	}
	s := &http.Server{Handler: mux, MaxHeaderBytes: 1 << 20, ReadHeaderTimeout: headerTimeout}
	go func() {
		if err := s.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			klog.ErrorS(err, "Serve", "address", lis.Addr())
		}
	}()
	return s, nil
}
