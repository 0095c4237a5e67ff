package pki

import (
	"fmt"
	"os"
	"time"

	"k8s.io/client-go/transport"
)

// ClientCertReloadEnv carries, to the components an operator starts (they
// inherit its environment; it is not part of their specs), how often
// client-go re-reads client certificate files for connections already
// open. client-go's default, 5 minutes, is far inside a third of a year,
// but not of the minutes-long validities of tests: a kept-alive
// connection would present an expired certificate, which API servers
// check on every request.
const ClientCertReloadEnv = "HYPERSHIFT_CLIENT_CERT_RELOAD_INTERVAL"

// ShortenClientCertReload shortens client-go's reload interval to a tenth
// of a short leaf validity, for this process and the components it starts.
func ShortenClientCertReload(leaf time.Duration) error {
	interval := leaf / 10
	if interval >= transport.CertCallbackRefreshDuration {
		return nil
	}
	transport.CertCallbackRefreshDuration = interval
	if err := os.Setenv(ClientCertReloadEnv, interval.String()); err != nil {
		return fmt.Errorf("set %s: %w", ClientCertReloadEnv, err)
	}
	return nil
}

// ClientCertReloadFromEnv applies an interval an operator passed down.
func ClientCertReloadFromEnv() error {
	v := os.Getenv(ClientCertReloadEnv)
	if v == "" {
		return nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return fmt.Errorf("%s=%q: want a positive duration", ClientCertReloadEnv, v)
	}
	transport.CertCallbackRefreshDuration = d
	return nil
}
