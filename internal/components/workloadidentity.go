package components

import (
	"net"
	"strconv"

	"hypershift.dev/internal/pki"
	"hypershift.dev/internal/runtime"
	"hypershift.dev/internal/workloadidentity"
)

// WorkloadIdentityWebhook gives pods of annotated ServiceAccounts the
// projected token and environment of cloud workload identity
// (internal/workloadidentity); rendered when the cluster asks for it
// (spec.workloadIdentityWebhook), on one host only.
const WorkloadIdentityWebhook = workloadidentity.Name

// WorkloadIdentityWebhookPort is the webhook's port; a control plane
// allocates it only when it runs the webhook.
const WorkloadIdentityWebhookPort = workloadidentity.Name

// WorkloadIdentityWebhookPortNames are the ports a control plane that runs
// the webhook needs besides PortNames.
func WorkloadIdentityWebhookPortNames() []string { return []string{WorkloadIdentityWebhookPort} }

// workloadIdentityWebhook: the control plane runs the webhook.
func (cfg Config) workloadIdentityWebhook() bool {
	return cfg.WorkloadIdentityWebhook != nil && !cfg.Management && !cfg.pods()
}

// WorkloadIdentityWebhookURL is where the hosted API server calls the
// webhook: on loopback, beside it. Admission webhooks named by URL take
// the API server's control-plane egress (direct), not the Konnectivity
// tunnel into the cluster.
func WorkloadIdentityWebhookURL(port int) string {
	return "https://" + net.JoinHostPort(loopback, strconv.Itoa(port)) + workloadidentity.MutatePath
}

// renderWorkloadIdentityWebhook is the webhook on loopback. It serves with
// the API server's certificate (issued by the root CA its registration's
// caBundle holds; its SANs include loopback), and reads ServiceAccounts
// with a client certificate of its own, whose user may only get them
// (dataplane's RBAC).
func renderWorkloadIdentityWebhook(cfg Config) (runtime.Spec, error) {
	port := cfg.Ports[WorkloadIdentityWebhookPort]
	name := WorkloadIdentityWebhook
	dir := cfg.dir(name, name)
	kc, err := localKubeconfig(cfg, name, name)
	if err != nil {
		return runtime.Spec{}, err
	}
	o := workloadidentity.DefaultOptions()
	o.BindAddress, o.Port = loopback, port
	o.CertFile, o.KeyFile, o.Kubeconfig = dir("tls.crt"), dir("tls.key"), dir("kubeconfig")
	if w := cfg.WorkloadIdentityWebhook; w != nil {
		o.Config = *w
	}
	p := cfg.PKI
	return runtime.Spec{
		Name:      name,
		Component: name,
		Args:      o.Args(),
		Files: append([]runtime.File{
			{Path: "tls.crt", Content: p.KubeAPIServer.CertPEM, Reloadable: true},
			{Path: "tls.key", Content: p.KubeAPIServer.KeyPEM, Secret: true, Reloadable: true},
		}, kubeconfigFiles(kc, p.WorkloadIdentityWebhook)...),
		Ports:     map[string]int{"https": port},
		Readiness: runtime.Probe{Scheme: "https", Host: loopback, Port: port, Path: "/readyz", CAPEM: p.Bundle(pki.RootCAName)},
		Env:       cfg.hostedEnv(),
		Requests:  runtime.Resources{MilliCPU: 5, MemoryBytes: 24 << 20},
	}, nil
}
