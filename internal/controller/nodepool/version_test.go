package nodepool

import (
	"strings"
	"testing"
)

func TestCheckSkew(t *testing.T) {
	tests := []struct {
		pool, cp string
		wantErr  string // empty: allowed
	}{
		{pool: "v1.37.1", cp: "v1.37.1"},
		{pool: "v1.36.3", cp: "v1.37.1"},
		{pool: "v1.37.2", cp: "v1.37.1"}, // a newer patch of the same minor: allowed, as admission does
		{pool: "v1.34.0", cp: "v1.37.1"},
		{pool: "v1.33.9", cp: "v1.37.1", wantErr: "spec.kubernetesVersion v1.33.9 is more than 3 minors older than the control plane's v1.37.1: set v1.34.x or newer"},
		{pool: "v1.38.0", cp: "v1.37.1", wantErr: "spec.kubernetesVersion v1.38.0 is newer than the control plane's v1.37.1"},
		{pool: "v1.37.1", cp: "v1.36.3", wantErr: "set v1.36.x or older, or upgrade the HostedCluster first"},
		{pool: "latest", cp: "v1.37.1", wantErr: `spec.kubernetesVersion "latest" is not a version`},
	}
	for _, tt := range tests {
		err := checkSkew(tt.pool, tt.cp)
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("checkSkew(%s, %s) = %v, want nil", tt.pool, tt.cp, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("checkSkew(%s, %s) = %v, want an error containing %q", tt.pool, tt.cp, err, tt.wantErr)
		}
	}
}
