package e2e

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// What may fail in a rotation: etcd and the API servers read the etcd CA
// only at start, so DropOld restarts them (docs/security.md, "CA
// rotation"), one at a time, etcd first: a single API server cannot
// restart without a gap; a highly available control plane keeps serving. outage is the longest time /readyz did not answer (asked every
// 100 ms); failed counts requests of the followed admin kubeconfig (a
// create and a get every 100 ms, 5 s each, so a refused port fails ten a
// second); unreachable the node checks (one a second) the API server did
// not answer. Measured per rotation: single replica 6 failed, 2
// unreachable, 8.2–8.9 s without an answer; HA 0 failed, 0 unreachable,
// 0–0.2 s. The budgets are about twice that.
type restartBudget struct {
	outage              time.Duration
	failed, unreachable int
}

var (
	singleReplicaRestartBudget   = restartBudget{outage: 18 * time.Second, failed: 20, unreachable: 4}
	highlyAvailableRestartBudget = restartBudget{outage: 2 * time.Second, failed: 2, unreachable: 1}
)

// caCertificates are the signing certificates of the CAs whose consumers
// read them once, as stored for cluster c before a rotation.
type caCertificates map[string][]byte

var readOnceCANames = []string{"etcd-ca", "konnectivity-ca"}

func readOnceCAs(t *testing.T, hs *cli) caCertificates {
	t.Helper()
	cs := hostedClient(t, filepath.Join(hs.dataDir, "management.kubeconfig"))
	out := caCertificates{}
	for _, name := range readOnceCANames {
		s, err := cs.CoreV1().Secrets("clusters-c").Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("CA Secret %s: %v", name, err)
		}
		out[name] = s.Data[corev1.TLSCertKey]
	}
	return out
}

// checkReplaced: each CA was replaced by the rotation, and no generation of
// it is left over.
func (before caCertificates) checkReplaced(t *testing.T, hs *cli) {
	t.Helper()
	after := readOnceCAs(t, hs)
	cs := hostedClient(t, filepath.Join(hs.dataDir, "management.kubeconfig"))
	for _, name := range readOnceCANames {
		if bytes.Equal(before[name], after[name]) {
			t.Errorf("the rotation left CA %s as it was", name)
		}
		for _, gen := range []string{name + "-next", name + "-previous"} {
			if _, err := cs.CoreV1().Secrets("clusters-c").Get(t.Context(), gen, metav1.GetOptions{}); err == nil {
				t.Errorf("CA generation %s is still stored after the rotation", gen)
			}
		}
	}
}
