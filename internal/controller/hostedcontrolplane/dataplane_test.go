package hostedcontrolplane

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/clustercache"
	"hypershift.dev/internal/runtime/runtimetest"
	"hypershift.dev/internal/testenv"
)

// TestKonnectivityInputs: the agent is rendered from the Secrets
// konnectivity-ca and konnectivity-agent and the control plane's
// konnectivity port; until all exist it is left out, naming what is missing.
func TestKonnectivityInputs(t *testing.T) {
	env := testenv.Start(t)
	ctx := t.Context()
	const ns = "clusters-k"
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	published := &runtimetest.Fake{PublishedHost: "192.0.2.10", PublishedPorts: map[string]int{"endpoint": 30000}}
	r := &Reconciler{Client: env.Client, Runtime: published, Clusters: clustercache.New(clustercache.Options{})}
	s := &scope{hcp: &hypershiftv1alpha1.HostedControlPlane{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "k"}}}

	k, missing, err := r.konnectivityInputs(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"Secret clusters-k/konnectivity-ca", "Secret clusters-k/konnectivity-agent", `"konnectivity" port`}
	if k != nil || len(missing) != len(want) {
		t.Fatalf("nothing there: %+v, missing %q; want nil and %q", k, missing, want)
	}
	for i := range want {
		if !strings.Contains(missing[i], want[i]) {
			t.Errorf("missing[%d] = %q, want it to name %q", i, missing[i], want[i])
		}
	}

	for name, data := range map[string]map[string][]byte{
		konnectivityCASecret:    {corev1.TLSCertKey: []byte("ca-cert"), corev1.TLSPrivateKeyKey: []byte("ca-key")},
		konnectivityAgentSecret: {corev1.TLSCertKey: []byte("agent-cert"), corev1.TLSPrivateKeyKey: []byte("agent-key")},
	} {
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Type: corev1.SecretTypeTLS, Data: data}
		if err := env.Client.Create(ctx, secret); err != nil {
			t.Fatal(err)
		}
	}
	k, missing, err = r.konnectivityInputs(ctx, s)
	if err != nil || k != nil || len(missing) != 1 {
		t.Fatalf("Secrets without the port: %+v, %q, %v; want only the port missing", k, missing, err)
	}
	published.PublishedPorts[konnectivityPort] = 30001
	k, missing, err = r.konnectivityInputs(ctx, s)
	if err != nil || len(missing) != 0 || k == nil {
		t.Fatalf("everything there: %+v, %q, %v", k, missing, err)
	}
	if k.ServerHost != "192.0.2.10" || k.ServerPort != 30001 || string(k.CA) != "ca-cert" ||
		string(k.Cert) != "agent-cert" || string(k.Key) != "agent-key" {
		t.Errorf("agent inputs %+v: want the published host and konnectivity port, the CA's certificate (not its key) and the agent's pair", k)
	}
}
