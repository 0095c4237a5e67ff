package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
)

// verifyToken verifies a token as an in-cluster relying party does, with
// nothing configured but what every pod has: go-oidc discovers the issuer
// (the cluster's default, https://kubernetes.default.svc) and fetches the
// key set the discovery document names, over the CA the kubelet mounted
// and with the pod's own service-account token (the API server serves
// the documents to service accounts). It checks the issuer, the audience,
// expiry and the signature, and prints "verified SUBJECT ISSUER".
func verifyToken(args []string) error {
	fs := flag.NewFlagSet("verify-token", flag.ContinueOnError)
	issuer := fs.String("issuer", "https://kubernetes.default.svc", "the issuer to discover")
	audience := fs.String("audience", "", "the audience the token must be for")
	sa := fs.String("sa", "/var/run/secrets/kubernetes.io/serviceaccount", "service-account directory (token, ca.crt)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 || *audience == "" {
		return errors.New("usage: hello verify-token -audience AUDIENCE [-issuer URL] [-sa DIR] TOKEN_FILE")
	}
	caPEM, err := os.ReadFile(filepath.Join(*sa, "ca.crt"))
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return fmt.Errorf("no certificate in %s", filepath.Join(*sa, "ca.crt"))
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &bearer{
		file: filepath.Join(*sa, "token"),
		next: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}},
	}}
	ctx := oidc.ClientContext(context.Background(), client)
	provider, err := oidc.NewProvider(ctx, *issuer)
	if err != nil {
		return fmt.Errorf("discover %s: %w", *issuer, err)
	}
	token, err := os.ReadFile(fs.Arg(0))
	if err != nil {
		return err
	}
	idt, err := provider.Verifier(&oidc.Config{ClientID: *audience}).Verify(ctx, strings.TrimSpace(string(token)))
	if err != nil {
		return fmt.Errorf("verify %s: %w", fs.Arg(0), err)
	}
	fmt.Printf("verified %s %s\n", idt.Subject, idt.Issuer)
	return nil
}

// bearer sends the pod's service-account token, read at each request as
// the kubelet renews it.
type bearer struct {
	file string
	next http.RoundTripper
}

func (b *bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	token, err := os.ReadFile(b.file)
	if err != nil {
		return nil, err
	}
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	return b.next.RoundTrip(req)
}
