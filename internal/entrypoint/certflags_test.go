package entrypoint

import (
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/transport"

	"hypershift.dev/internal/pki"
)

func TestCertValidityFlagsRefuseWhatCannotWork(t *testing.T) {
	for _, tc := range []struct {
		leaf, ca time.Duration
		want     string
	}{
		{leaf: 30 * time.Second, ca: time.Hour, want: "--leaf-certificate-validity 30s: use at least 1m0s"},
		{leaf: 2 * time.Hour, ca: time.Hour, want: "--ca-validity 1h0m0s is shorter than --leaf-certificate-validity 2h0m0s"},
	} {
		err := (&certValidityFlags{leaf: tc.leaf, ca: tc.ca}).validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("leaf %s, CA %s: error %v, want %q", tc.leaf, tc.ca, err, tc.want)
		}
	}
	if err := (&certValidityFlags{leaf: time.Minute, ca: time.Minute}).validate(); err != nil {
		t.Errorf("a 1-minute leaf under a 1-minute CA refused: %v", err)
	}
}

func TestShortValiditiesShortenClientGoReload(t *testing.T) {
	defer func(d time.Duration) { transport.CertCallbackRefreshDuration = d }(transport.CertCallbackRefreshDuration)
	t.Setenv(pki.ClientCertReloadEnv, "")
	year := certValidityFlags{leaf: 365 * 24 * time.Hour}
	if err := year.applyClientCertReload(); err != nil || transport.CertCallbackRefreshDuration != 5*time.Minute {
		t.Fatalf("a 1-year validity set the reload interval to %s (%v), want client-go's 5m", transport.CertCallbackRefreshDuration, err)
	}
	short := certValidityFlags{leaf: 90 * time.Second}
	if err := short.applyClientCertReload(); err != nil {
		t.Fatal(err)
	}
	if transport.CertCallbackRefreshDuration != 9*time.Second {
		t.Fatalf("reload interval %s, want a tenth of 90s", transport.CertCallbackRefreshDuration)
	}
	// A component started by that operator takes it from the environment.
	transport.CertCallbackRefreshDuration = 5 * time.Minute
	if err := pki.ClientCertReloadFromEnv(); err != nil || transport.CertCallbackRefreshDuration != 9*time.Second {
		t.Fatalf("component's interval %s (%v), want 9s from %s", transport.CertCallbackRefreshDuration, err, pki.ClientCertReloadEnv)
	}
	t.Setenv(pki.ClientCertReloadEnv, "soon")
	if err := pki.ClientCertReloadFromEnv(); err == nil {
		t.Fatal("a bad interval was accepted")
	}
}
