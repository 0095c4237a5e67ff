package workloadidentity

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/signal"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// Name is the component: `hypershift component workload-identity-webhook`.
const Name = "workload-identity-webhook"

const (
	// lookupTimeout bounds one ServiceAccount read: under the API server's
	// default webhook timeout (10s), so a slow read is refused with a
	// message naming the ServiceAccount rather than the API server's
	// generic timeout.
	lookupTimeout = 5 * time.Second
	// shutdownGrace is how long a stopping server lets requests in flight
	// finish.
	shutdownGrace = 10 * time.Second
	// The client's rate: one read per pod created, so client-go's default
	// (5/s) would throttle a rollout.
	lookupQPS   = 50
	lookupBurst = 100
)

// Options is the webhook server's command line: where it listens, its
// serving certificate, who may call it, how it reaches the hosted cluster's API server, and
// the Config it applies.
type Options struct {
	// BindAddress and Port are where the server listens (TLS).
	BindAddress string
	Port        int
	// CertFile and KeyFile are the serving certificate and key, read again
	// when either changes.
	CertFile, KeyFile string
	// ClientCAFile, when set, is the CA bundle a caller's client
	// certificate must chain to, read again when it changes; empty: no
	// client authentication (anyone who reaches the port may call).
	// ClientCommonNames are the CommonNames that certificate may carry;
	// empty: any the CA issued. See clientAuth.
	ClientCAFile      string
	ClientCommonNames []string
	// Kubeconfig reaches the API server whose ServiceAccounts the webhook
	// reads (get on serviceaccounts); empty: the in-cluster configuration.
	Kubeconfig string
	Config     Config
}

// DefaultOptions are the defaults of every flag.
func DefaultOptions() Options {
	// Loopback: it serves the API server beside it, and nothing else
	// needs to reach it.
	return Options{BindAddress: "127.0.0.1", Port: 9443, Config: DefaultConfig()}
}

// AddFlags binds fs's flags to o; o's values are the flags' defaults.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.BindAddress, "bind-address", o.BindAddress, "address to listen on")
	fs.IntVar(&o.Port, "port", o.Port, "port to listen on (TLS)")
	fs.StringVar(&o.CertFile, "tls-cert-file", o.CertFile, "serving certificate, reloaded when it changes")
	fs.StringVar(&o.KeyFile, "tls-private-key-file", o.KeyFile, "serving key, reloaded when it changes")
	fs.StringVar(&o.ClientCAFile, "client-ca-file", o.ClientCAFile, "if set, callers must present a client certificate of this CA bundle (reloaded when it changes); /healthz and /readyz stay open")
	fs.StringArrayVar(&o.ClientCommonNames, "client-common-name", o.ClientCommonNames, "a CommonName the client certificate may carry (repeatable; none: any of --client-ca-file)")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "kubeconfig of the API server whose ServiceAccounts are read (empty: in-cluster)")
	c := &o.Config
	fs.StringVar(&c.Azure.TenantID, "azure-tenant-id", c.Azure.TenantID, "AZURE_TENANT_ID for ServiceAccounts without the "+AzureTenantIDAnnotation+" annotation")
	fs.StringVar(&c.Azure.AuthorityHost, "azure-authority-host", c.Azure.AuthorityHost, "AZURE_AUTHORITY_HOST: the Entra ID endpoint of the cloud")
	fs.StringVar(&c.Azure.Audience, "azure-audience", c.Azure.Audience, "audience of Azure tokens")
	fs.StringVar(&c.AWS.AnnotationPrefix, "aws-annotation-prefix", c.AWS.AnnotationPrefix, "domain of the AWS annotations")
	fs.StringVar(&c.AWS.Region, "aws-default-region", c.AWS.Region, "if set, AWS_REGION and AWS_DEFAULT_REGION of AWS pods")
	fs.StringVar(&c.AWS.Audience, "aws-token-audience", c.AWS.Audience, "audience of AWS tokens when the ServiceAccount names none")
	fs.Int64Var(&c.AWS.TokenExpiration, "aws-token-expiration", c.AWS.TokenExpiration, "lifetime of AWS tokens in seconds when no annotation sets it")
	fs.BoolVar(&c.AWS.RegionalSTS, "aws-sts-regional-endpoint", c.AWS.RegionalSTS, "inject AWS_STS_REGIONAL_ENDPOINTS=regional unless the ServiceAccount's annotation says otherwise")
	fs.StringVar(&c.AWS.TokenMountPath, "aws-token-mount-path", c.AWS.TokenMountPath, "where containers mount the AWS token")
}

// Parse reads the webhook's flags; Parse(nil) gives DefaultOptions. It
// does not validate (Run does), so the defaults parse: the component
// registry's round trip (components.Own) relies on it.
func Parse(args []string) (Options, error) {
	o := DefaultOptions()
	fs := pflag.NewFlagSet(Name, pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		return Options{}, err
	}
	if fs.NArg() > 0 {
		return Options{}, fmt.Errorf("%s takes no arguments, got %q", Name, fs.Args())
	}
	return o, nil
}

// Args renders o as the webhook's flags, leaving out those at their
// defaults; Parse reads them back.
func (o Options) Args() []string {
	def := DefaultOptions()
	var args []string
	add := func(name, value, defValue string) {
		if value != defValue {
			args = append(args, "--"+name+"="+value)
		}
	}
	c, d := o.Config.withDefaults(), def.Config
	add("bind-address", o.BindAddress, def.BindAddress)
	add("port", strconv.Itoa(o.Port), strconv.Itoa(def.Port))
	add("tls-cert-file", o.CertFile, def.CertFile)
	add("tls-private-key-file", o.KeyFile, def.KeyFile)
	add("client-ca-file", o.ClientCAFile, def.ClientCAFile)
	for _, name := range o.ClientCommonNames {
		args = append(args, "--client-common-name="+name)
	}
	add("kubeconfig", o.Kubeconfig, def.Kubeconfig)
	add("azure-tenant-id", c.Azure.TenantID, d.Azure.TenantID)
	add("azure-authority-host", c.Azure.AuthorityHost, d.Azure.AuthorityHost)
	add("azure-audience", c.Azure.Audience, d.Azure.Audience)
	add("aws-annotation-prefix", c.AWS.AnnotationPrefix, d.AWS.AnnotationPrefix)
	add("aws-default-region", c.AWS.Region, d.AWS.Region)
	add("aws-token-audience", c.AWS.Audience, d.AWS.Audience)
	add("aws-token-expiration", strconv.FormatInt(c.AWS.TokenExpiration, 10), strconv.FormatInt(d.AWS.TokenExpiration, 10))
	add("aws-sts-regional-endpoint", strconv.FormatBool(c.AWS.RegionalSTS), strconv.FormatBool(d.AWS.RegionalSTS))
	add("aws-token-mount-path", c.AWS.TokenMountPath, d.AWS.TokenMountPath)
	return args
}

// Validate reports what Run cannot start with, naming the flag.
func (o Options) Validate() error {
	var errs []error
	if o.Port < 1 || o.Port > 65535 {
		errs = append(errs, fmt.Errorf("--port %d: want 1 to 65535", o.Port))
	}
	if o.CertFile == "" || o.KeyFile == "" {
		errs = append(errs, errors.New("--tls-cert-file and --tls-private-key-file are required: the API server calls webhooks over TLS only"))
	}
	if len(o.ClientCommonNames) > 0 && o.ClientCAFile == "" {
		errs = append(errs, errors.New("--client-common-name needs --client-ca-file: names are checked only on certificates of that CA"))
	}
	if slices.Contains(o.ClientCommonNames, "") {
		errs = append(errs, errors.New("--client-common-name: want a name, got an empty one"))
	}
	if err := o.Config.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Run serves the webhook until ctx ends or SIGTERM or SIGINT, then stops
// accepting connections and lets requests in flight finish (up to
// shutdownGrace). It serves Handler at MutatePath, and /healthz and
// /readyz; with a client CA, Handler to its clients only (clientAuth).
func Run(ctx context.Context, o Options) error {
	if err := o.Validate(); err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	log := zap.New().WithName(Name)
	mux := http.NewServeMux()
	tlsConfig, handler, err := serving(o, mux, log, "/healthz", "/readyz")
	if err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	getSA, err := serviceAccountGetter(o.Kubeconfig)
	if err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	mux.Handle(MutatePath, Handler(getSA, o.Config, log))
	// Both probes pass once the server answers at all: it serves only
	// after its certificates loaded and its client was built, and a failed
	// ServiceAccount read is the request's answer, not the server's state.
	ok := func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }
	mux.HandleFunc("/healthz", ok)
	mux.HandleFunc("/readyz", ok)
	addr := net.JoinHostPort(o.BindAddress, strconv.Itoa(o.Port))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	srv := &http.Server{
		Handler:           handler,
		TLSConfig:         tlsConfig,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	served := make(chan error, 1)
	go func() { served <- srv.ServeTLS(l, "", "") }()
	log.Info("serving", "address", l.Addr().String(), "path", MutatePath,
		"clientCAFile", o.ClientCAFile, "clientCommonNames", o.ClientCommonNames)
	select {
	case err := <-served:
		return fmt.Errorf("%s: %w", Name, err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		_ = srv.Close()
		return fmt.Errorf("%s: stop: %w", Name, err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("%s: %w", Name, err)
	}
	log.Info("stopped")
	return nil
}

// serving is the server's TLS configuration, with o's serving
// certificate, and its handler: mux behind o's client authentication, if
// any, which leaves the paths open to connections without a certificate.
// The files are read once here, so that one that does not load stops Run.
func serving(o Options, mux http.Handler, log logr.Logger, open ...string) (*tls.Config, http.Handler, error) {
	cert := newServingCert(o.CertFile, o.KeyFile, log)
	if _, err := cert.get(); err != nil {
		return nil, nil, err
	}
	tlsConfig := &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return cert.get() },
	}
	if o.ClientCAFile == "" {
		log.Info("no --client-ca-file: any client that reaches the port may call the webhook")
		return tlsConfig, mux, nil
	}
	auth, err := newClientAuth(o.ClientCAFile, o.ClientCommonNames, log)
	if err != nil {
		return nil, nil, err
	}
	auth.configure(tlsConfig)
	return tlsConfig, auth.require(mux, open...), nil
}

// serviceAccountGetter reads ServiceAccounts from the API server of
// kubeconfig with one GET each, bounded by lookupTimeout: no cache, so no
// memory that grows with the tenant's ServiceAccounts and no staleness
// right after one is annotated.
func serviceAccountGetter(kubeconfig string) (ServiceAccountGetter, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %q: %w", kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = lookupQPS, lookupBurst
	cfg.UserAgent = "hypershift-" + Name
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("client for kubeconfig %q: %w", kubeconfig, err)
	}
	return func(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
		ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
		defer cancel()
		return kube.CoreV1().ServiceAccounts(namespace).Get(ctx, name, metav1.GetOptions{})
	}, nil
}
