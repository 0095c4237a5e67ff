package entrypoint

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hypershift.dev/internal/nodes/join"
	"hypershift.dev/internal/nodes/join/jointest"
	"hypershift.dev/internal/pki"
)

func TestJoinReadsTheTokenFromAFileOrStdin(t *testing.T) {
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte("abcdef.0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name      string
		o         joinOptions
		stdin     string
		want, err string
	}{
		{name: "file", o: joinOptions{tokenFile: file}, want: "abcdef.0123456789abcdef"},
		{name: "stdin", o: joinOptions{tokenFile: "-"}, stdin: "  abcdef.0123456789abcdef\n", want: "abcdef.0123456789abcdef"},
		{name: "--token alone", o: joinOptions{Options: join.Options{Token: "abcdef.0123456789abcdef"}}, want: "abcdef.0123456789abcdef"},
		{name: "both", o: joinOptions{Options: join.Options{Token: "x"}, tokenFile: file}, err: "--token and --token-file both given"},
		{name: "empty file", o: joinOptions{tokenFile: empty}, err: "--token-file " + empty + " is empty"},
		{name: "missing file", o: joinOptions{tokenFile: "/nonexistent/token"}, err: "--token-file /nonexistent/token: open"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.o.readToken(strings.NewReader(tc.stdin))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want it to say %q", err, tc.err)
				}
				return
			}
			if err != nil || tc.o.Token != tc.want {
				t.Fatalf("token %q, err %v; want %q", tc.o.Token, err, tc.want)
			}
		})
	}
}

// A join through an interceptor that appends its CA to the cluster's is
// refused by discovery, before anything is written on the host.
func TestJoinThroughAnInterceptorCreatesNothing(t *testing.T) {
	c := jointest.NewCluster(t)
	attacker, err := pki.NewCA("root-ca")
	if err != nil {
		t.Fatal(err)
	}
	interceptor := c.Start(t, attacker, func(s *jointest.Server) {
		s.CABundle = append(append([]byte{}, c.Root.CertPEM...), attacker.CertPEM...)
		s.ClientCABundle = attacker.CertPEM
	})
	nodeDir := filepath.Join(t.TempDir(), "node")
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(c.Token.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "join", "--server", interceptor.URL, "--token-file", tokenFile, "--ca-cert-hash", c.Hash(t),
		"--node-dir", nodeDir, "--cni-bin-dir", "/nonexistent")
	if err == nil || !strings.Contains(err.Error(), "certificate signed by unknown authority") {
		t.Fatalf("join through an interceptor: error %v, want the pinned CA to refuse its certificate\n%s", err, out)
	}
	if _, err := os.Stat(nodeDir); err == nil {
		t.Errorf("the refused join created %s", nodeDir)
	}
	if interceptor.TokenSeen.Load() {
		t.Error("the token was sent to the interceptor")
	}
}

// A --kubelet-port that is no port is refused before discovery, with
// nothing created and the token sent nowhere.
func TestJoinRefusesABadKubeletPort(t *testing.T) {
	c := jointest.NewCluster(t)
	srv := c.Genuine(t)
	nodeDir := filepath.Join(t.TempDir(), "node")
	for _, port := range []string{"0", "70000", "-1"} {
		out, err := run(t, "join", "--server", srv.URL, "--token", c.Token.String(), "--ca-cert-hash", c.Hash(t),
			"--node-dir", nodeDir, "--kubelet-port", port)
		if err == nil || !strings.Contains(err.Error(), "--kubelet-port "+port+" is not a port") {
			t.Errorf("--kubelet-port %s: error %v, want it refused\n%s", port, err, out)
		}
	}
	if _, err := os.Stat(nodeDir); err == nil {
		t.Errorf("the refused join created %s", nodeDir)
	}
	if srv.TokenSeen.Load() {
		t.Error("the token was sent before the flags were checked")
	}
}
