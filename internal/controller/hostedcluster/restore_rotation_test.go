package hostedcluster

import (
	"encoding/json"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
)

// A cluster whose CAs were rotated keeps spec.certificates.rotateCA; its
// archive carries the rotation's status, and a restore takes it over, so
// the restored cluster does not rotate its CAs again (nextCARotation starts
// a rotation for a token without a status). A token other than the
// archive's, or an archive without a status, starts nothing here.
func TestRestoredCARotationIsNotStartedAgain(t *testing.T) {
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	done := &hypershiftv1alpha1.CARotationStatus{Phase: hypershiftv1alpha1.CARotationDone, Token: "t1", StartedAt: now, PhaseSince: now, CompletedAt: &now}
	source := &hypershiftv1alpha1.HostedCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "clusters"},
		Spec:       hypershiftv1alpha1.HostedClusterSpec{Certificates: &hypershiftv1alpha1.CertificatesSpec{RotateCA: "t1"}},
	}
	setCARotation(source, done)
	archived, err := json.Marshal(archivedObject(source))
	if err != nil {
		t.Fatal(err)
	}
	restoredOf := func(token string) *hypershiftv1alpha1.HostedCluster {
		hc := &hypershiftv1alpha1.HostedCluster{}
		if err := json.Unmarshal(archived, hc); err != nil {
			t.Fatal(err)
		}
		hc.Status = hypershiftv1alpha1.HostedClusterStatus{} // a create drops the status
		hc.Spec.Certificates.RotateCA = token
		return hc
	}

	hc := restoredOf("t1")
	if started := nextCARotation(hc.Spec.Certificates, caRotationOf(hc), rotationObservation{}, time.Now()); started == nil || started.Phase != hypershiftv1alpha1.CARotationTrustBoth {
		t.Fatalf("without the archive's status the token starts no rotation (%v): the test shows nothing", started)
	}
	st, err := restoredCARotation(archived, hc)
	if err != nil {
		t.Fatal(err)
	}
	if st == nil || st.Phase != hypershiftv1alpha1.CARotationDone || st.Token != "t1" || !st.CompletedAt.Equal(&now) {
		t.Fatalf("restored rotation %+v, want the archive's Done t1", st)
	}
	setCARotation(hc, st)
	if next := nextCARotation(hc.Spec.Certificates, caRotationOf(hc), rotationObservation{}, time.Now()); next != st {
		t.Errorf("after the restore the rotation became %+v, want it left Done", next)
	}

	if st, err := restoredCARotation(archived, restoredOf("t2")); err != nil || st != nil {
		t.Errorf("another token took the archive's status %+v (%v)", st, err)
	}
	plain, err := json.Marshal(archivedObject(&hypershiftv1alpha1.HostedCluster{Spec: source.Spec}))
	if err != nil {
		t.Fatal(err)
	}
	if st, err := restoredCARotation(plain, restoredOf("t1")); err != nil || st != nil {
		t.Errorf("an archive without a rotation status gave %+v (%v)", st, err)
	}
}
