package releaseserver

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
	"syscall"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"hypershift.dev/internal/release"
)

// Name is the component: `hypershift component release-server`.
const Name = "release-server"

var metaSelfSubjectReview = metav1.TypeMeta{APIVersion: "authentication.k8s.io/v1", Kind: "SelfSubjectReview"}

// Config is the release server's command line; the control-plane renderer
// sets it, Parse reads the same flags back.
type Config struct {
	// Listen is HOST:PORT.
	Listen string
	// CertFile and KeyFile are the serving certificate and key.
	CertFile, KeyFile string
	// ClientCAFile verifies nodes' client certificates (the API server's
	// --client-ca-file).
	ClientCAFile string
	// APIServer is the hosted API server's URL (for SelfSubjectReviews),
	// verified with APIServerCAFile.
	APIServer       string
	APIServerCAFile string
	// ReleasesDir holds the releases beside the compiled-in one.
	ReleasesDir string
}

// Args renders the configuration as flags, leaving out empty ones.
func (c Config) Args() []string {
	var args []string
	add := func(name, value string) {
		if value != "" {
			args = append(args, "--"+name+"="+value)
		}
	}
	add("listen", c.Listen)
	add("tls-cert-file", c.CertFile)
	add("tls-private-key-file", c.KeyFile)
	add("client-ca-file", c.ClientCAFile)
	add("api-server", c.APIServer)
	add("api-server-ca-file", c.APIServerCAFile)
	add("releases-dir", c.ReleasesDir)
	return args
}

// Parse reads the release server's flags.
func Parse(args []string) (Config, error) {
	var c Config
	fs := flag.NewFlagSet(Name, flag.ContinueOnError)
	fs.StringVar(&c.Listen, "listen", "", "address to listen on (HOST:PORT)")
	fs.StringVar(&c.CertFile, "tls-cert-file", "", "serving certificate")
	fs.StringVar(&c.KeyFile, "tls-private-key-file", "", "serving key")
	fs.StringVar(&c.ClientCAFile, "client-ca-file", "", "CA bundle that verifies nodes' client certificates")
	fs.StringVar(&c.APIServer, "api-server", "", "hosted API server URL, to review bearer tokens")
	fs.StringVar(&c.APIServerCAFile, "api-server-ca-file", "", "CA that verifies the hosted API server")
	fs.StringVar(&c.ReleasesDir, "releases-dir", "", "releases beside the compiled-in one")
	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	return c, nil
}

// Run serves releases until SIGTERM or SIGINT.
func Run(ctx context.Context, c Config) error {
	log := zap.New().WithName(Name)
	h, tlsConfig, err := c.handler(log)
	if err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	l, err := net.Listen("tcp", c.Listen)
	if err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	srv := &http.Server{Handler: h, TLSConfig: tlsConfig, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	log.Info("serving releases", "listen", c.Listen, "versions", h.Releases.Versions())
	if err := srv.ServeTLS(l, "", ""); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("%s: %w", Name, err)
	}
	return nil
}

// handler builds the handler and the TLS configuration from c's files.
func (c Config) handler(log logr.Logger) (*Handler, *tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
	if err != nil {
		return nil, nil, fmt.Errorf("serving certificate: %w", err)
	}
	clientCAs, err := readPool(c.ClientCAFile)
	if err != nil {
		return nil, nil, fmt.Errorf("client CA: %w", err)
	}
	apiCAs, err := readPool(c.APIServerCAFile)
	if err != nil {
		return nil, nil, fmt.Errorf("API server CA: %w", err)
	}
	catalog, err := release.Load(c.ReleasesDir)
	if err != nil {
		return nil, nil, err
	}
	apiClient := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: apiCAs, MinVersion: tls.VersionTLS12},
	}}
	h := &Handler{
		Releases: catalog,
		Authn:    &Authenticator{ClientCAs: clientCAs, Review: SelfSubjectReviewer(c.APIServer, apiClient)},
		Log:      log,
	}
	// Client certificates are requested, not verified by TLS: the handler
	// verifies them, so another cluster's certificate gets a 401 rather
	// than a failed handshake.
	return h, &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.RequestClientCert,
		MinVersion:   tls.VersionTLS12,
	}, nil
}

func readPool(path string) (*x509.CertPool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("%s holds no certificate", path)
	}
	return pool, nil
}
