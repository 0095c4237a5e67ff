// Package managementplane runs the embedded management plane of `hypershift
// up`: a real etcd, kube-apiserver and the kube-controller-manager's
// garbage-collector, namespace and cluster-role aggregation controllers, as supervised processes under
// DATA_DIR/management, with the hypershift.dev API installed.
package managementplane

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hypershift.dev/internal/atomicfile"
	"hypershift.dev/internal/components"
	"hypershift.dev/internal/datadir"
	"hypershift.dev/internal/install"
	"hypershift.dev/internal/kubeconfig"
	"hypershift.dev/internal/pki"
	"hypershift.dev/internal/runtime"
	"hypershift.dev/internal/runtime/process"
	"hypershift.dev/internal/scheme"
)

const serviceCIDR = "10.0.0.0/24"

// The process runtime keeps a control plane under ROOT/NAMESPACE: rooted at
// the data dir, this one lives in DATA_DIR/management.
var ref = runtime.ControlPlaneRef{Namespace: datadir.ManagementDir, Name: datadir.ManagementDir}

// Options configure the management plane.
type Options struct {
	DataDir string
	// Binary runs the components; empty means this process's executable.
	Binary string
	Log    logr.Logger
	// Versions are the Kubernetes versions the operator's release catalog
	// holds, for the admission policy; nil: the compiled-in one.
	Versions []string
	// LeafValidity and CAValidity are how long new certificates are
	// valid; zero: pki's defaults.
	LeafValidity, CAValidity time.Duration
}

// Plane is a running management plane.
type Plane struct {
	runtime    *process.Runtime
	RESTConfig *rest.Config
	Kubeconfig string
	versions   []string
	// certs is the PKI the running components have; render turns a PKI
	// into their specs and the admin kubeconfig (RenewCertificates).
	certs  *pki.ControlPlane
	render func(*pki.ControlPlane) ([]runtime.Spec, []byte, error)
	// renewal renews the leaves that are due and returns the PKI.
	renewal func() (*pki.ControlPlane, error)
	log     logr.Logger

	clusterAPIMu      sync.Mutex
	clusterAPIStarted bool
}

// PortTakenError says a component of the management plane could not bind
// its port: another program listens on it.
type PortTakenError struct {
	Component string
	// Message is the component's last log lines.
	Message string
}

func (e *PortTakenError) Error() string {
	return fmt.Sprintf("%s cannot bind its port, another program listens on it: %s", e.Component, e.Message)
}

// Start starts (or adopts) the management plane's processes, waits until its
// API serves, and installs the hypershift.dev API.
//
// Ports are chosen once and kept. Until the plane first serves (its
// kubeconfig is written last) no client knows them, so a port another
// program took between the choice and the bind is chosen anew, once; after
// that the plane keeps its endpoint and Start names the taken port.
func Start(ctx context.Context, opts Options) (*Plane, error) {
	if err := os.MkdirAll(opts.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	rt, err := process.New(process.Options{Root: opts.DataDir, Binary: opts.Binary, Log: opts.Log.WithName("management")})
	if err != nil {
		return nil, err
	}
	_, err = os.Stat(datadir.Layout{Root: opts.DataDir}.ManagementKubeconfig())
	served := err == nil
	p, err := start(ctx, opts, rt)
	var taken *PortTakenError
	if err == nil || served || !errors.As(err, &taken) {
		return p, err
	}
	opts.Log.Info("a port of the management plane was taken before it first served; choosing new ports", "component", taken.Component, "log", taken.Message)
	if ferr := rt.ForgetPorts(ctx, ref); ferr != nil {
		return nil, errors.Join(err, ferr)
	}
	return start(ctx, opts, rt)
}

func start(ctx context.Context, opts Options, rt *process.Runtime) (*Plane, error) {
	ports, err := rt.Ports(ctx, ref, components.PortRequest(components.PortNames(components.SingleReplica)))
	if err != nil {
		return nil, err
	}
	pkiDir := filepath.Join(rt.Dir(ref), "pki")
	encryptionKey, err := pki.EnsureEncryptionKeyFile(pkiDir)
	if err != nil {
		return nil, fmt.Errorf("management encryption key: %w", err)
	}
	store := pki.FileStore{Dir: pkiDir}
	pkiOpts := pki.ControlPlaneOptions{
		APIServerIPs:      []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")},
		APIServerDNSNames: []string{"localhost"},
		LeafValidity:      opts.LeafValidity,
		CAValidity:        opts.CAValidity,
		Renew:             true,
	}
	certs, err := pki.EnsureControlPlane(store, pkiOpts)
	if err != nil {
		return nil, fmt.Errorf("management PKI: %w", err)
	}
	server := fmt.Sprintf("https://127.0.0.1:%d", ports[components.EndpointPort])
	render := func(certs *pki.ControlPlane) ([]runtime.Spec, []byte, error) {
		specs, err := components.Render(components.Config{
			Name:          ref.Name,
			Layout:        rt.Layout(ref),
			PKI:           certs,
			Ports:         ports,
			ServiceCIDR:   serviceCIDR,
			EncryptionKey: encryptionKey,
			Management:    true,
		})
		if err != nil {
			return nil, nil, err
		}
		kc, err := kubeconfig.Render(kubeconfig.Params{
			Name: "hypershift-management", Server: server, CAPEM: certs.RootCA.CertPEM,
			ClientPEM: certs.Admin.CertPEM, KeyPEM: certs.Admin.KeyPEM,
		})
		return specs, kc, err
	}
	specs, kc, err := render(certs)
	if err != nil {
		return nil, err
	}
	// The operator's own client names the admin certificate by its files,
	// which client-go re-reads: a renewal needs no restart of it.
	restConfig := &rest.Config{Host: server, TLSClientConfig: rest.TLSClientConfig{
		CAData:   certs.RootCA.CertPEM,
		CertFile: filepath.Join(pkiDir, pki.AdminName+".crt"),
		KeyFile:  filepath.Join(pkiDir, pki.AdminName+".key"),
	}}
	p := &Plane{
		runtime: rt, RESTConfig: restConfig, Kubeconfig: datadir.Layout{Root: opts.DataDir}.ManagementKubeconfig(), versions: opts.Versions,
		certs: certs, render: render, log: opts.Log.WithName("management"),
	}
	p.renewal = func() (*pki.ControlPlane, error) { return pki.EnsureControlPlane(store, pkiOpts) }
	if err := rt.Apply(ctx, ref, specs); err != nil {
		return nil, err
	}
	if err := p.serve(ctx, kc); err != nil {
		// Leave nothing running behind a failed start.
		p.Stop(context.Background())
		return nil, err
	}
	return p, nil
}

// serve waits for the API, installs the hypershift.dev API and writes the
// kubeconfig.
func (p *Plane) serve(ctx context.Context, kc []byte) error {
	if err := p.waitReady(ctx); err != nil {
		return err
	}
	c, err := client.New(p.RESTConfig, client.Options{Scheme: scheme.New()})
	if err != nil {
		return err
	}
	if err := install.API(ctx, c, install.RuntimeProcess, p.versions, ""); err != nil {
		return fmt.Errorf("install hypershift.dev API: %w", err)
	}
	// Usable means invalid specs are refused, not admitted for a second.
	if err := install.WaitPoliciesEnforced(ctx, c, install.RuntimeProcess, p.versions); err != nil {
		return err
	}
	// Written last: its presence tells other commands the plane is usable.
	return atomicfile.Write(p.Kubeconfig, kc, 0o600)
}

func (p *Plane) waitReady(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(p.RESTConfig)
	if err != nil {
		return err
	}
	var lastErr error
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := p.portTaken(); err != nil {
			return false, err
		}
		// Bounded: a program that holds the port may accept and never answer.
		rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		_, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(rctx)
		if err == nil {
			return true, nil
		}
		if ctx.Err() == nil {
			// The poll's own deadline is not the server's error.
			lastErr = err
		}
		return false, p.portTaken()
	})
	var taken *PortTakenError
	if errors.As(err, &taken) {
		return err
	}
	if err != nil {
		return fmt.Errorf("management API server not ready: %w (last error: %v; %s; logs under %s)", err, lastErr, p.unwell(), p.runtime.Dir(ref)) //nolint:errorlint // the poll error is wrapped
	}
	return nil
}

// portTaken returns a PortTakenError for a component that exited because
// its port is taken (it says so while it waits to start again).
func (p *Plane) portTaken() error {
	for _, s := range p.runtime.Status(ref) {
		if s.Phase == runtime.BackOff && strings.Contains(s.Message, "address already in use") {
			return &PortTakenError{Component: s.Name, Message: s.Message}
		}
	}
	return nil
}

// unwell describes the components that do not run or have restarted, with
// their last log lines.
func (p *Plane) unwell() string {
	var out []string
	for _, s := range p.runtime.Status(ref) {
		if s.Phase == runtime.Running && s.Restarts == 0 {
			continue
		}
		out = append(out, fmt.Sprintf("%s is %s after %d restarts (%s): %s", s.Name, s.Phase, s.Restarts, s.LastExitReason, s.Message))
	}
	if len(out) == 0 {
		return "every component runs"
	}
	return strings.Join(out, "; ")
}

// Status reports the management plane's components.
func (p *Plane) Status() []string {
	var out []string
	for _, s := range p.runtime.Status(ref) {
		out = append(out, fmt.Sprintf("%s=%s", s.Name, s.Phase))
	}
	return out
}

// Stop stops the management plane's processes, keeping its data; Cluster
// API's manager first.
func (p *Plane) Stop(ctx context.Context) {
	p.stopClusterAPI(ctx)
	p.runtime.Stop(ctx, ref)
}

// Release stops supervising without stopping the processes.
func (p *Plane) Release() { p.runtime.Release() }
