package operator

import (
	"strings"
	"testing"

	"hypershift.dev/internal/hostnet"
)

func TestEndpointBindAddress(t *testing.T) {
	tests := []struct {
		host, want, wantErr string
	}{
		{host: "", want: "127.0.0.1"},
		{host: "127.0.0.1", want: "127.0.0.1"},
		{host: "::1", want: "::1"},
		{host: "localhost", want: "127.0.0.1"},
		{host: "0.0.0.0", wantErr: "means every address"},
		{host: "::", wantErr: "means every address"},
		{host: "192.0.2.77", wantErr: "is not an address of this host"},
	}
	if ip := hostnet.HostIPv4(); ip != nil {
		tests = append(tests, struct{ host, want, wantErr string }{host: ip.String(), want: ip.String()})
	}
	for _, tt := range tests {
		t.Run(tt.host, func(t *testing.T) {
			got, err := EndpointBindAddress(tt.host)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("EndpointBindAddress(%q) = %q, %v; want error %q", tt.host, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("EndpointBindAddress(%q) = %q, %v; want %q", tt.host, got, err, tt.want)
			}
		})
	}
}
