package hostedcluster

import (
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"hypershift.dev/internal/backup"
	"hypershift.dev/internal/pki"
)

// An archive is written by whoever held the cluster's backup key: a
// restore recreates only the key pairs of a control plane's PKI, as TLS
// Secrets. An archive that also carries the operator's own kubeconfig
// Secret, or a PKI name of another type, is refused whole.
func TestRestoreRecreatesOnlyKeyPairs(t *testing.T) {
	entry := func(typ corev1.SecretType) []byte {
		data, err := json.Marshal(archivedSecret{Type: typ, Data: map[string][]byte{corev1.TLSCertKey: []byte("c"), corev1.TLSPrivateKeyKey: []byte("k")}})
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	files := func(extra map[string][]byte) map[string][]byte {
		f := map[string][]byte{
			backup.SecretPrefix + pki.RootCAName + ".json":                     entry(corev1.SecretTypeTLS),
			backup.SecretPrefix + pki.AdminName + ".json":                      entry(corev1.SecretTypeTLS),
			backup.SecretPrefix + pki.PreviousName(pki.ClientCAName) + ".json": entry(corev1.SecretTypeTLS),
			backup.EncryptionKeyEntry:                                          []byte("key"),
		}
		for k, v := range extra {
			f[k] = v
		}
		return f
	}
	root, others, err := archivedKeyPairs(files(nil))
	if err != nil || root == nil || len(others) != 2 || others[pki.AdminName] == nil {
		t.Fatalf("a plain archive: root %v, others %v, %v", root != nil, others, err)
	}
	for what, extra := range map[string]map[string][]byte{
		"the operator's kubeconfig Secret": {backup.SecretPrefix + AdminKubeconfigSecret + ".json": entry(corev1.SecretTypeTLS)},
		"a PKI name as an Opaque Secret":   {backup.SecretPrefix + pki.EtcdClientName + ".json": entry(corev1.SecretTypeOpaque)},
		"a name with a path":               {backup.SecretPrefix + "../root-ca.json": entry(corev1.SecretTypeTLS)},
	} {
		if _, _, err := archivedKeyPairs(files(extra)); err == nil || !strings.Contains(err.Error(), "refusing the archive") {
			t.Errorf("an archive with %s: %v, want it refused", what, err)
		}
	}
	noRoot := files(nil)
	delete(noRoot, backup.SecretPrefix+pki.RootCAName+".json")
	if _, _, err := archivedKeyPairs(noRoot); err == nil {
		t.Error("an archive without the root CA was accepted")
	}
}
