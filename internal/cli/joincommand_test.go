package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"hypershift.dev/internal/nodes/join"
)

func TestCreateJoinCommandBoundsTheTTL(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	// No management plane: the bound is checked before anything is asked
	// of it, so nothing is created.
	_, err := run(t, "--data-dir", t.TempDir(), "create", "join-command", "--name", "r", "--ttl", "48h")
	want := "--ttl 48h0m0s is longer than the 24h0m0s a join token may live: pass --ttl 24h0m0s or less"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want it to say %q", err, want)
	}
	if err := (join.TokenOptions{TTL: 24 * time.Hour}).Check(); err != nil {
		t.Errorf("the bound itself is refused: %v", err)
	}
	var help bytes.Buffer
	cmd, _ := NewRootCommand()
	cmd.SetOut(&help)
	cmd.SetArgs([]string{"create", "join-command", "--help"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"at most 24h0m0s", "--single-use", "--token-file"} {
		if !strings.Contains(help.String(), s) {
			t.Errorf("create join-command --help does not say %q", s)
		}
	}
}
