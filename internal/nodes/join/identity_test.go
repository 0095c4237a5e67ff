package join

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"hypershift.dev/internal/nodes/cloudmeta"
)

// --provider-id-from says the Node's name and provider ID: with either
// given too, or with a source that is not one, the join stops before it
// asks the cluster anything.
func TestProviderIDFromRefusals(t *testing.T) {
	base := Options{Server: "https://192.0.2.10:6443", Token: "abcdef.0123456789abcdef", CAHash: "sha256:00", NodeDir: t.TempDir(), KubeletPort: DefaultKubeletPort}
	for _, tc := range []struct {
		from, name, id, want string
	}{
		{"gcp", "", "", `--provider-id-from "gcp": want one of aws, azure, kubevirt`},
		{"aws", "n1", "", "--provider-id-from aws and --node-name n1 both given"},
		{"azure", "", "azure:///x", "--provider-id-from azure and --provider-id azure:///x (or $HYPERSHIFT_PROVIDER_ID) both given"},
	} {
		opts := base
		opts.ProviderIDFrom, opts.NodeName, opts.ProviderID = tc.from, tc.name, tc.id
		err := Join(t.Context(), opts, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc, err, tc.want)
		}
	}
}

func TestMachineIdentity(t *testing.T) {
	opts := Options{ProviderIDFrom: "kubevirt", Metadata: cloudmeta.Client{Hostname: func() (string, error) { return "md-0-x7k2p", nil }}}
	var progress bytes.Buffer
	if err := machineIdentity(t.Context(), &opts, &progress); err != nil {
		t.Fatal(err)
	}
	if opts.NodeName != "md-0-x7k2p" || opts.ProviderID != "kubevirt://md-0-x7k2p" {
		t.Errorf("node %q, provider ID %q", opts.NodeName, opts.ProviderID)
	}
	if want := "node name md-0-x7k2p and provider ID kubevirt://md-0-x7k2p, from kubevirt\n"; progress.String() != want {
		t.Errorf("progress %q, want %q", progress.String(), want)
	}

	// No metadata service: the join stops at the lookup's deadline,
	// naming the flag.
	opts = Options{ProviderIDFrom: "aws", Metadata: cloudmeta.Client{Endpoint: "http://127.0.0.1:1", RequestTimeout: 50 * time.Millisecond, Deadline: 200 * time.Millisecond}}
	err := machineIdentity(t.Context(), &opts, &progress)
	if err == nil || !strings.HasPrefix(err.Error(), "--provider-id-from aws: EC2 instance metadata /latest/api/token: no answer in time") {
		t.Errorf("no metadata service: %v", err)
	}
	if opts.NodeName != "" || opts.ProviderID != "" {
		t.Errorf("a failed lookup set node %q, provider ID %q", opts.NodeName, opts.ProviderID)
	}
}
