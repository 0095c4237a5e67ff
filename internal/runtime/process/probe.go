package process

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"hypershift.dev/internal/runtime"
)

// newProber returns a function that runs p once.
func newProber(p runtime.Probe) func(ctx context.Context) error {
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
	if len(p.CAPEM) > 0 {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(p.CAPEM)
		tlsConfig.RootCAs = pool
	} else {
		// Components without a CA-signed serving certificate (controller
		// manager, scheduler) make a self-signed one; only the answer of the
		// loopback health endpoint matters.
		tlsConfig.InsecureSkipVerify = true
	}
	client := &http.Client{
		Timeout:   2 * time.Second,
		Transport: &http.Transport{TLSClientConfig: tlsConfig, DisableKeepAlives: true},
	}
	host := p.Host
	if host == "" {
		host = "127.0.0.1"
	}
	url := fmt.Sprintf("%s://%s%s", p.Scheme, net.JoinHostPort(host, strconv.Itoa(p.Port)), p.Path)
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s returned %d: %s", p.Path, resp.StatusCode, failedChecks(string(body)))
		}
		return nil
	}
}

// failedChecks keeps the failing lines of a verbose health answer ("[-]…"),
// or its first line.
func failedChecks(body string) string {
	var failed []string
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, "[-]") {
			failed = append(failed, line)
		}
	}
	if len(failed) == 0 {
		first, _, _ := strings.Cut(strings.TrimSpace(body), "\n")
		return first
	}
	return strings.Join(failed, "; ")
}
