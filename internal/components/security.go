package components

import (
	"encoding/base64"
	"fmt"

	"sigs.k8s.io/yaml"
)

// encryptionConfig encrypts Secrets with secretbox (XSalsa20-Poly1305)
// under the control plane's own key; data written before encryption was
// turned on stays readable through the identity provider.
func encryptionConfig(key []byte) ([]byte, error) {
	if len(key) != 32 {
		return nil, fmt.Errorf("encryption key has %d bytes, want 32", len(key))
	}
	cfg := map[string]any{
		"apiVersion": "apiserver.config.k8s.io/v1",
		"kind":       "EncryptionConfiguration",
		"resources": []any{map[string]any{
			"resources": []string{"secrets"},
			"providers": []any{
				map[string]any{"secretbox": map[string]any{"keys": []any{
					map[string]any{"name": "key1", "secret": base64.StdEncoding.EncodeToString(key)},
				}}},
				map[string]any{"identity": map[string]any{}},
			},
		}},
	}
	return yaml.Marshal(cfg)
}

// auditPolicy records who did what (Metadata level, never request bodies,
// so Secrets do not leak into the log) and skips the noise of health checks
// and of components reading their own leases and events.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: None
    nonResourceURLs: ["/healthz*", "/livez*", "/readyz*", "/version"]
  - level: None
    verbs: ["get", "watch", "list"]
    resources:
      - group: "coordination.k8s.io"
        resources: ["leases"]
      - group: ""
        resources: ["events"]
  - level: Metadata
`
