package workloadidentity

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/signal"
	"strconv"
	"syscall"
	"time"

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
// serving certificate, how it reaches the hosted cluster's API server, and
// the Config it applies.
type Options struct {
	// BindAddress and Port are where the server listens (TLS).
	BindAddress string
	Port        int
	// CertFile and KeyFile are the serving certificate and key, read again
	// when either changes.
	CertFile, KeyFile string
	// Kubeconfig reaches the API server whose ServiceAccounts the webhook
	// reads (get on serviceaccounts); empty: the in-cluster configuration.
	Kubeconfig string
	Config     Config
}

// DefaultOptions are the defaults of every flag.
func DefaultOptions() Options {
	return Options{BindAddress: "0.0.0.0", Port: 9443, Config: DefaultConfig()}
}

// AddFlags binds fs's flags to o; o's values are the flags' defaults.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.BindAddress, "bind-address", o.BindAddress, "address to listen on")
	fs.IntVar(&o.Port, "port", o.Port, "port to listen on (TLS)")
	fs.StringVar(&o.CertFile, "tls-cert-file", o.CertFile, "serving certificate, reloaded when it changes")
	fs.StringVar(&o.KeyFile, "tls-private-key-file", o.KeyFile, "serving key, reloaded when it changes")
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
	if err := o.Config.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Run serves the webhook until ctx ends or SIGTERM or SIGINT, then stops
// accepting connections and lets requests in flight finish (up to
// shutdownGrace). It serves Handler at MutatePath, and /healthz and
// /readyz.
func Run(ctx context.Context, o Options) error {
	if err := o.Validate(); err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	log := zap.New().WithName(Name)
	cert := &servingCert{certFile: o.CertFile, keyFile: o.KeyFile, log: log}
	if _, err := cert.get(nil); err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	getSA, err := serviceAccountGetter(o.Kubeconfig)
	if err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	mux := http.NewServeMux()
	mux.Handle(MutatePath, Handler(getSA, o.Config, log))
	// Both probes pass once the server answers at all: it serves only
	// after its certificate loaded and its client was built, and a failed
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
		Handler:           mux,
		TLSConfig:         &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: cert.get},
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
	log.Info("serving", "address", l.Addr().String(), "path", MutatePath)
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
