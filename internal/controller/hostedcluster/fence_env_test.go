package hostedcluster_test

import (
	"net"
	"net/url"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/operator/operatortest"
	"hypershift.dev/internal/testenv"
)

// TestFence fences a running control plane: only etcd is left running,
// the API endpoint's port is free (no write can reach etcd), the cluster
// is not Available and says why; lifting the fence brings the same
// endpoint back with the objects written before. A bad annotation value
// is refused, naming the annotation, and changes nothing.
func TestFence(t *testing.T) {
	env, _ := operatortest.Setup(t, "clusters")
	c := env.Client
	ctx := t.Context()
	hc := &hypershiftv1alpha1.HostedCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "clusters", Name: "fence"}}
	if err := c.Create(ctx, hc); err != nil {
		t.Fatal(err)
	}
	hcpKey := client.ObjectKey{Namespace: "clusters-fence", Name: "fence"}
	waitCondition(t, c, hc, hypershiftv1alpha1.Available, metav1.ConditionTrue, "")
	waitCondition(t, c, hc, hypershiftv1alpha1.Fenced, metav1.ConditionFalse, hypershiftv1alpha1.NotFencedReason)
	hosted := hostedClient(ctx, t, c, hc)
	before := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "before-fence"}, Data: map[string]string{"k": "v"}}
	if _, err := hosted.CoreV1().ConfigMaps("default").Create(ctx, before, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	endpoint := hc.Status.Endpoint

	// A value that is not "true"/"false" is refused and fences nothing.
	annotate(t, c, hc, "yes")
	waitCondition(t, c, hc, hypershiftv1alpha1.Fenced, metav1.ConditionFalse, hypershiftv1alpha1.FenceRefusedReason)
	if cond := meta.FindStatusCondition(hc.Status.Conditions, hypershiftv1alpha1.Fenced.String()); cond.Message !=
		`annotation hypershift.dev/fenced is "yes": set it to "true" to fence the control plane, or remove it` {
		t.Errorf("Fenced message %q", cond.Message)
	}
	if !meta.IsStatusConditionTrue(hc.Status.Conditions, hypershiftv1alpha1.Available.String()) {
		t.Error("a refused fence made the cluster unavailable")
	}

	annotate(t, c, hc, "true")
	waitCondition(t, c, hc, hypershiftv1alpha1.Fenced, metav1.ConditionTrue, hypershiftv1alpha1.FencedReason)
	if cond := meta.FindStatusCondition(hc.Status.Conditions, hypershiftv1alpha1.Available.String()); cond.Status != metav1.ConditionFalse ||
		cond.Reason != hypershiftv1alpha1.FencedReason.String() {
		t.Errorf("Available %s/%s while fenced, want False/Fenced", cond.Status, cond.Reason)
	}
	hcp := &hypershiftv1alpha1.HostedControlPlane{}
	if err := c.Get(ctx, hcpKey, hcp); err != nil {
		t.Fatal(err)
	}
	etcd := 0
	for _, st := range hcp.Status.Components {
		switch {
		case st.Component == "etcd":
			etcd++
			if st.Phase != hypershiftv1alpha1.ComponentRunning {
				t.Errorf("%s is %s while fenced, want Running", st.Name, st.Phase)
			}
		case st.Phase != hypershiftv1alpha1.ComponentStopped:
			t.Errorf("%s (%s) is %s while fenced, want it stopped", st.Name, st.Component, st.Phase)
		}
	}
	if etcd == 0 {
		t.Errorf("no etcd instance in %+v", hcp.Status.Components)
	}
	if !meta.IsStatusConditionTrue(hcp.Status.Conditions, hypershiftv1alpha1.EtcdAvailable.String()) {
		t.Error("EtcdAvailable is not True while fenced")
	}
	// Nothing listens on the endpoint: its port can be taken.
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", u.Host)
	if err != nil {
		t.Errorf("the API endpoint %s is still in use while fenced: %v", u.Host, err)
	} else {
		_ = l.Close()
	}

	// Lifting the fence brings the API back at the same endpoint.
	annotate(t, c, hc, "")
	waitCondition(t, c, hc, hypershiftv1alpha1.Available, metav1.ConditionTrue, "")
	waitCondition(t, c, hc, hypershiftv1alpha1.Fenced, metav1.ConditionFalse, hypershiftv1alpha1.NotFencedReason)
	if hc.Status.Endpoint != endpoint {
		t.Errorf("endpoint %s after the fence, was %s", hc.Status.Endpoint, endpoint)
	}
	got, err := hosted.CoreV1().ConfigMaps("default").Get(ctx, before.Name, metav1.GetOptions{})
	if err != nil || got.Data["k"] != "v" {
		t.Errorf("object written before the fence: %v %v", got.Data, err)
	}
	// Available needs etcd and the API server; the others follow.
	testenv.Eventually(t, 2*time.Minute, "every component Running after the fence was lifted", func() (bool, error) {
		if err := c.Get(ctx, hcpKey, hcp); err != nil {
			return false, err
		}
		for _, st := range hcp.Status.Components {
			if st.Phase != hypershiftv1alpha1.ComponentRunning {
				return false, nil
			}
		}
		return len(hcp.Status.Components) > 1, nil
	})
	if _, port, _ := net.SplitHostPort(u.Host); port != strconv.Itoa(int(hc.Status.ControlPlaneEndpoint.Port)) {
		t.Errorf("published port %d, was %s", hc.Status.ControlPlaneEndpoint.Port, port)
	}
}

// annotate sets the fence annotation to v, or removes it when v is empty.
func annotate(t *testing.T, c client.Client, hc *hypershiftv1alpha1.HostedCluster, v string) {
	t.Helper()
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(hc), hc); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(hc.DeepCopy())
	if v == "" {
		delete(hc.Annotations, hypershiftv1alpha1.FencedAnnotation)
	} else {
		metav1.SetMetaDataAnnotation(&hc.ObjectMeta, hypershiftv1alpha1.FencedAnnotation, v)
	}
	if err := c.Patch(t.Context(), hc, patch); err != nil {
		t.Fatal(err)
	}
}

// waitCondition waits until the cluster's condition has the status (and
// the reason, unless empty); hc is left as last read.
func waitCondition(t *testing.T, c client.Client, hc *hypershiftv1alpha1.HostedCluster, typ hypershiftv1alpha1.ConditionType, status metav1.ConditionStatus, reason hypershiftv1alpha1.ConditionReason) {
	t.Helper()
	key := client.ObjectKeyFromObject(hc)
	testenv.Eventually(t, 3*time.Minute, typ.String()+"="+string(status)+" "+reason.String(), func() (bool, error) {
		err := c.Get(t.Context(), key, hc)
		cond := meta.FindStatusCondition(hc.Status.Conditions, typ.String())
		return cond != nil && cond.Status == status && (reason == "" || cond.Reason == reason.String()), err
	})
}
