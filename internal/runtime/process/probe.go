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

// reconnectEvery is how many probes share one connection before the next
// opens a new one: a probe over a kept-alive connection costs the
// component no TLS handshake, and a fresh handshake now and then (once a
// minute at the default probe period) still verifies the certificate the
// component serves now.
const reconnectEvery = 6

// prober runs one readiness probe over a kept-alive connection.
type prober struct {
	client *http.Client
	url    string
	path   string
	runs   int
}

// newProber returns a prober of p; close it when done.
func newProber(p runtime.Probe) *prober {
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
		Transport: &http.Transport{TLSClientConfig: tlsConfig, MaxIdleConnsPerHost: 1},
	}
	host := p.Host
	if host == "" {
		host = "127.0.0.1"
	}
	url := fmt.Sprintf("%s://%s%s", p.Scheme, net.JoinHostPort(host, strconv.Itoa(p.Port)), p.Path)
	return &prober{client: client, url: url, path: p.Path}
}

// probe runs the probe once.
func (p *prober) probe(ctx context.Context) error {
	p.runs++
	if p.runs%reconnectEvery == 0 {
		p.client.CloseIdleConnections()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url, nil)
	if err != nil {
		return err
	}
	resp, err := p.client.Do(req)
	if err != nil {
		// A connection the component closed (restarted, reloaded) is not
		// kept for the next probe.
		p.client.CloseIdleConnections()
		return err
	}
	defer resp.Body.Close()
	// Read to the end so that the connection can be used again.
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s returned %d: %s", p.path, resp.StatusCode, failedChecks(string(body)))
	}
	return nil
}

// close drops the kept-alive connection.
func (p *prober) close() { p.client.CloseIdleConnections() }

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
