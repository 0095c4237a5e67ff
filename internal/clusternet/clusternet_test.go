package clusternet

import "testing"

func TestServiceIP(t *testing.T) {
	for _, tc := range []struct {
		cidr  string
		index int64
		want  string
	}{
		{"172.31.0.0/16", 10, "172.31.0.10"},
		{"10.96.0.0/12", 10, "10.96.0.10"},
		{"10.0.0.250/24", 10, "10.0.0.10"}, // masked first
		{"10.0.0.0/28", 10, "10.0.0.10"},
		{"fd00::/108", 10, "fd00::a"},
	} {
		got, err := ServiceIP(tc.cidr, tc.index)
		if err != nil || got.String() != tc.want {
			t.Errorf("ServiceIP(%s, %d) = %v, %v; want %s", tc.cidr, tc.index, got, err, tc.want)
		}
	}
}

func TestClusterDNSIP(t *testing.T) {
	for cidr, want := range map[string]string{
		"172.31.0.0/16": "172.31.0.10",
		"10.96.5.7/12":  "10.96.0.10", // the network's, not the given address's
		"fd00::/108":    "fd00::a",
		"10.0.0.0/29":   "", // 8 addresses: no 10th
		"nonsense":      "",
	} {
		got, err := ClusterDNSIP(cidr)
		if want == "" {
			if err == nil {
				t.Errorf("ClusterDNSIP(%s) = %s, want an error", cidr, got)
			}
			continue
		}
		if err != nil || got.String() != want {
			t.Errorf("ClusterDNSIP(%s) = %s, %v; want %s", cidr, got, err, want)
		}
	}
}
