package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// get fetches a URL n times, each on a new connection (so a Service's
// load balancing picks again), and prints one line per answer:
// "HTTP <code> <first line of the body>". Any failed request fails the
// command, after all were tried.
func get(args []string) error {
	fs := flag.NewFlagSet("get", flag.ContinueOnError)
	n := fs.Int("n", 1, "how many requests")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("usage: hello get [-n N] URL")
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	var failed error
	for range *n {
		resp, err := client.Get(fs.Arg(0))
		if err != nil {
			fmt.Println("ERROR", err)
			failed = err
			continue
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		line, _, _ := strings.Cut(string(body), "\n")
		fmt.Printf("HTTP %d %s\n", resp.StatusCode, line)
	}
	return failed
}

// api GETs a path of the API server as the pod's service account: the
// token and CA the kubelet mounted, the server by its in-cluster name.
// It prints "HTTP <code>" and the body.
func api(args []string) error {
	fs := flag.NewFlagSet("api", flag.ContinueOnError)
	server := fs.String("server", "https://kubernetes.default.svc", "API server URL")
	sa := fs.String("sa", "/var/run/secrets/kubernetes.io/serviceaccount", "service-account directory (token, ca.crt)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("usage: hello api [-server URL] [-sa DIR] PATH")
	}
	token, err := os.ReadFile(filepath.Join(*sa, "token"))
	if err != nil {
		return err
	}
	caPEM, err := os.ReadFile(filepath.Join(*sa, "ca.crt"))
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return fmt.Errorf("no certificate in %s", filepath.Join(*sa, "ca.crt"))
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
	}}
	req, err := http.NewRequest(http.MethodGet, strings.TrimSuffix(*server, "/")+fs.Arg(0), nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	fmt.Printf("HTTP %d\n%s\n", resp.StatusCode, body)
	return nil
}

// resolve prints the addresses a name resolves to with the pod's
// resolv.conf (the Go resolver: nameserver, search path, ndots).
func resolve(args []string) error {
	if len(args) != 1 {
		return errors.New("usage: hello resolve NAME")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupHost(ctx, args[0])
	if err != nil {
		return err
	}
	sort.Strings(addrs)
	fmt.Println(strings.Join(addrs, "\n"))
	return nil
}
