package process

import "testing"

func TestFailedChecks(t *testing.T) {
	tests := []struct{ body, want string }{
		{"[+]ping ok\n[-]etcd failed: reason withheld\n[+]log ok\n[-]poststarthook/rbac failed\nreadyz check failed\n", "[-]etcd failed: reason withheld; [-]poststarthook/rbac failed"},
		{"no ready API server\n", "no ready API server"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := failedChecks(tt.body); got != tt.want {
			t.Errorf("failedChecks(%q) = %q, want %q", tt.body, got, tt.want)
		}
	}
}
