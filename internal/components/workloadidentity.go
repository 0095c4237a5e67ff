package components

import (
	"net"
	"strconv"

	"sigs.k8s.io/yaml"

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
	// Only the API server calls it: with its kubelet client certificate
	// (webhookAdmissionFiles), of the cluster's client CA.
	o.ClientCAFile, o.ClientCommonNames = dir("client-ca.crt"), []string{webhookClientCommonName}
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
			{Path: "client-ca.crt", Content: p.Bundle(pki.ClientCAName), Reloadable: true},
		}, kubeconfigFiles(kc, p.WorkloadIdentityWebhook)...),
		Ports:     map[string]int{"https": port},
		Readiness: runtime.Probe{Scheme: "https", Host: loopback, Port: port, Path: "/readyz", CAPEM: p.Bundle(pki.RootCAName)},
		Env:       cfg.hostedEnv(),
		Requests:  runtime.Resources{MilliCPU: 5, MemoryBytes: 24 << 20},
	}, nil
}

// webhookClientCommonName is the name of the certificate the API server
// presents to the webhooks beside it: its kubelet client certificate
// (the leaf's name is its common name).
const webhookClientCommonName = pki.KubeAPIServerKubeletName

// webhookAdmissionFiles configure the API server's admission webhooks to
// present its kubelet client certificate to the workload-identity webhook
// at port, and to no other: the kubeconfig's user is named by the
// webhook's host:port (upstream's WebhookAdmissionConfiguration).
func webhookAdmissionFiles(dir func(string) string, port int) ([]runtime.File, error) {
	kubeconfig, err := yaml.Marshal(map[string]any{
		"apiVersion": "v1",
		"kind":       "Config",
		"users": []any{map[string]any{
			"name": net.JoinHostPort(loopback, strconv.Itoa(port)),
			"user": map[string]any{"client-certificate": dir("kubelet-client.crt"), "client-key": dir("kubelet-client.key")},
		}},
	})
	if err != nil {
		return nil, err
	}
	plugin := func(name string) map[string]any {
		return map[string]any{"name": name, "configuration": map[string]any{
			"apiVersion":     "apiserver.config.k8s.io/v1",
			"kind":           "WebhookAdmissionConfiguration",
			"kubeConfigFile": dir("webhook-kubeconfig.yaml"),
		}}
	}
	admission, err := yaml.Marshal(map[string]any{
		"apiVersion": "apiserver.config.k8s.io/v1",
		"kind":       "AdmissionConfiguration",
		"plugins":    []any{plugin("MutatingAdmissionWebhook"), plugin("ValidatingAdmissionWebhook")},
	})
	if err != nil {
		return nil, err
	}
	return []runtime.File{
		{Path: "webhook-kubeconfig.yaml", Content: kubeconfig},
		{Path: "admission-config.yaml", Content: admission},
	}, nil
}
