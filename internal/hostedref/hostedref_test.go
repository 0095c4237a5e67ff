package hostedref_test

import (
	"encoding/pem"
	"net/http/httptest"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/hostedref"
	"hypershift.dev/internal/kubeconfig"
)

// The operator's connections go around the endpoint proxy's activity count
// only while the cluster may sleep when idle and the internal endpoint is
// known; the credentials stay the admin kubeconfig's.
func TestOperatorKubeconfig(t *testing.T) {
	srv := httptest.NewTLSServer(nil) // for a CA certificate
	srv.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	admin, err := kubeconfig.Render(kubeconfig.Params{Name: "c", Server: "https://api.example:6443", Token: "admin-token", CAPEM: ca})
	if err != nil {
		t.Fatal(err)
	}
	idle := &hypershiftv1alpha1.ControlPlaneHibernation{IdleAfter: &metav1.Duration{Duration: time.Minute}}
	internal := &hypershiftv1alpha1.ControlPlaneActivity{InternalEndpoint: &hypershiftv1alpha1.APIEndpoint{Host: "127.0.0.1", Port: 41234}}
	for _, tt := range []struct {
		name       string
		hibernate  *hypershiftv1alpha1.ControlPlaneHibernation
		activity   *hypershiftv1alpha1.ControlPlaneActivity
		wantServer string
	}{
		{"never sleeps", nil, internal, "https://api.example:6443"},
		{"sleeps on request only", &hypershiftv1alpha1.ControlPlaneHibernation{}, internal, "https://api.example:6443"},
		{"idle wake, endpoint not known yet", idle, nil, "https://api.example:6443"},
		{"idle wake", idle, internal, "https://127.0.0.1:41234"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			hcp := &hypershiftv1alpha1.HostedControlPlane{}
			hcp.Spec.Hibernation, hcp.Status.Activity = tt.hibernate, tt.activity
			out, err := hostedref.OperatorKubeconfig(admin, hcp)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := kubeconfig.Parse(out)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Host != tt.wantServer || cfg.BearerToken != "admin-token" {
				t.Errorf("server %s, token %q; want %s with the admin token", cfg.Host, cfg.BearerToken, tt.wantServer)
			}
		})
	}
}

// A HostedCluster's control plane is at NS-NAME/NAME; NS-NAME alone is
// ambiguous, the key is not.
func TestControlPlaneKey(t *testing.T) {
	a := hostedref.ControlPlaneKey(types.NamespacedName{Namespace: "a", Name: "b-c"})
	b := hostedref.ControlPlaneKey(types.NamespacedName{Namespace: "a-b", Name: "c"})
	if a != (types.NamespacedName{Namespace: "a-b-c", Name: "b-c"}) || a == b {
		t.Errorf("control-plane keys %s and %s", a, b)
	}
	hc := &hypershiftv1alpha1.HostedCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "b-c"}}
	if hostedref.ControlPlaneNamespace(hc) != a.Namespace {
		t.Errorf("ControlPlaneNamespace %s, ControlPlaneKey %s", hostedref.ControlPlaneNamespace(hc), a)
	}
}
