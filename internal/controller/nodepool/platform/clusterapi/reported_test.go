package clusterapi

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestReportedIsBounded: what the infrastructure reports of machines
// reaches the pool's status bounded — at most MaxReportedMachines
// machines, sorted; 8 addresses of a known type and at most 256 bytes
// each; a provider ID and a failure cut short.
func TestReportedIsBounded(t *testing.T) {
	var machines []unstructured.Unstructured
	for i := range MaxReportedMachines + 20 {
		u := unstructured.Unstructured{Object: map[string]any{
			"spec": map[string]any{"providerID": "aws:///" + strings.Repeat("z", 900)},
			"status": map[string]any{
				"addresses": []any{
					map[string]any{"type": "Mystery", "address": "10.0.0.1"},
					map[string]any{"type": "InternalIP", "address": strings.Repeat("1", 300)},
				},
				"deprecated": map[string]any{"v1beta1": map[string]any{"failureReason": "X", "failureMessage": strings.Repeat("m", 5000)}},
			},
		}}
		for j := range 12 {
			addrs := u.Object["status"].(map[string]any)["addresses"].([]any)
			u.Object["status"].(map[string]any)["addresses"] = append(addrs, map[string]any{"type": "InternalIP", "address": fmt.Sprintf("10.0.%d.%d", i, j)})
		}
		u.SetName(fmt.Sprintf("m-%03d", MaxReportedMachines+20-i))
		machines = append(machines, u)
	}
	got := reported(machines)
	if len(got) != MaxReportedMachines || got[0].Name != "m-001" || got[len(got)-1].Name != fmt.Sprintf("m-%03d", MaxReportedMachines) {
		t.Fatalf("%d machines reported, %s … %s; want the first %d by name", len(got), got[0].Name, got[len(got)-1].Name, MaxReportedMachines)
	}
	m := got[0]
	if len(m.Addresses) != 8 || m.Addresses[0].Type != "InternalIP" || len(m.Addresses[0].Address) > 256 {
		t.Errorf("addresses %+v: want 8 of a known type, none over 256 bytes", m.Addresses)
	}
	if n := len([]rune(m.ProviderID)); n > 512 {
		t.Errorf("provider ID of %d characters, want at most 512", n)
	}
	if n := len([]rune(m.Failure)); n > 1024 || !strings.HasPrefix(m.Failure, "failed: X: mmm") {
		t.Errorf("failure of %d characters %.40q…, want the provider's, at most 1024", n, m.Failure)
	}
}
