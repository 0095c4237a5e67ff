package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hypershift.dev/internal/golden"
	"hypershift.dev/internal/release/releasetest"
)

// run runs the command line of internal/cli with args and returns what it
// printed (standard output and error).
func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd, _ := NewRootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

func TestCreateClusterRenderGolden(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	for golden, args := range map[string][]string{
		"create-cluster-none.golden.yaml": {"none"},
		"create-cluster-node-port.golden.yaml": {
			"none",
			"--api-server-publishing", "NodePort", "--api-server-address", "192.0.2.10", "--api-server-node-port", "30443",
			"--etcd-storage-class", "fast", "--etcd-storage-size", "4Gi",
		},
		"create-cluster-issuer.golden.yaml": {
			"none",
			"--oidc-issuer-url", "https://oidc.example.com/clusters/demo", "--oidc-storage", "s3://oidc/clusters/demo?region=eu-west-1",
			"--oidc-credentials-secret", "oidc-bucket", "--oidc-keep-on-delete", "--service-account-signing-key-secret", "demo-sa-key",
			"--workload-identity-webhook", "--azure-tenant-id", "72f988bf-86f1-41af-91ab-2d7cd011db47", "--aws-region", "eu-west-1",
		},
		"create-cluster-host-volumes.golden.yaml": {
			"host",
			"--api-server-publishing", "NodePort", "--api-server-address", "192.0.2.10",
			"--storage-class-mapping", "standard=fast", "--storage-class-mapping", "bulk=slow-hdd",
		},
		"create-cluster-kubevirt.golden.yaml": renderKubeVirt,
		"create-cluster-aws.golden.yaml":      renderAWS,
		"create-cluster-azure.golden.yaml":    renderAzure,
	} {
		t.Run(golden, func(t *testing.T) {
			checkRenderGolden(t, filepath.Join("testdata", golden), args[0], args[1:]...)
		})
	}
}

func checkRenderGolden(t *testing.T, path, platform string, args ...string) {
	t.Helper()
	got, err := run(t, append([]string{"--data-dir", t.TempDir(), "create", "cluster", platform, "--name", "demo", "--render"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, path, []byte(got))
}

func TestErrorsSayWhatToDo(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	empty := t.TempDir()
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"get", "clusters"}, "no management plane found: run `hypershift up` or pass --kubeconfig"},
		{[]string{"create", "cluster", "none", "--name", "a"}, "no management plane found"},
		{[]string{"create", "cluster", "none"}, "--name is required: `hypershift create cluster none --name NAME`"},
		{[]string{"create", "cluster"}, "name a platform: `hypershift create cluster none --name NAME`"},
		{[]string{"create", "cluster", "gcp", "--name", "a"}, `unknown platform "gcp": use none, simulated, host, kubevirt, aws or azure`},
		{[]string{"create", "kubeconfig"}, "--name is required"},
		{[]string{"destroy", "cluster"}, "--name is required"},
		{[]string{"describe", "cluster"}, "name the cluster: `hypershift describe cluster NAME`"},
		{[]string{"create", "cluster", "none", "--name", "a", "--api-server-publishing", "NodePort"}, "--api-server-publishing NodePort needs --api-server-address"},
		{[]string{"create", "cluster", "none", "--name", "a", "--api-server-publishing", "LoadBalancer"}, "--api-server-publishing LoadBalancer needs --api-server-address: the DNS name"},
		{[]string{"create", "cluster", "none", "--name", "a", "--api-server-publishing", "Route"}, `--api-server-publishing "Route": use HostPort, NodePort or LoadBalancer`},
		{[]string{"create", "cluster", "none", "--name", "a", "--api-server-address", "10.0.0.1"}, "--api-server-address and --api-server-node-port are for --api-server-publishing NodePort or LoadBalancer"},
		{[]string{"create", "cluster", "none", "--name", "a", "--etcd-storage-size", "lots"}, `--etcd-storage-size "lots" is not a size such as 8Gi`},
		{[]string{"create", "cluster", "none", "--name", "a", "--storage-class-mapping", "standard=fast"}, "--storage-class-mapping is for platform host"},
		{[]string{"create", "cluster", "host", "--name", "a", "--storage-class-mapping", "standard"}, `--storage-class-mapping "standard": use GUEST=INFRA`},
		{[]string{"create", "cluster", "host", "--name", "a", "--storage-class-mapping", "standard=Fast_SSD"}, `--storage-class-mapping "standard=Fast_SSD": use GUEST=INFRA`},
		{[]string{"create", "cluster", "host", "--name", "a", "--storage-class-mapping", "s=a", "--storage-class-mapping", "s=b"}, "the hosted cluster's StorageClass s is mapped twice"},
		{[]string{"create", "cluster", "none", "--name", "a", "--oidc-storage", "s3://b/p"}, "--oidc-storage needs --oidc-issuer-url"},
		{[]string{"create", "cluster", "none", "--name", "a", "--oidc-issuer-url", "https://o.example.com", "--oidc-storage", "ftp://b/p"}, `--oidc-storage "ftp://b/p": use s3://`},
		{[]string{"create", "cluster", "none", "--name", "a", "--oidc-credentials-secret", "c"}, "--oidc-credentials-secret is for --oidc-storage"},
		{[]string{"create", "cluster", "none", "--name", "a", "--aws-region", "eu-west-1"}, "--azure-tenant-id and --aws-region are settings of --workload-identity-webhook"},
		{[]string{"create", "cluster", "none", "--name", "a", "--service-account-signing-key-secret", "Bad_Name"}, `--service-account-signing-key-secret "Bad_Name" is not a Secret name`},
		{[]string{"restore", "cluster", "--from", "file:///backups/a.bak", "--key-file", "k", "--overwrite"}, "--overwrite deletes the hosted cluster it replaces: name it with --name and --namespace"},
		{[]string{"restore", "cluster", "--from", "file:///backups/a.bak", "--key-file", "k", "--overwrite", "--name", "a"}, "name it with --name and --namespace"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			_, err := run(t, append([]string{"--data-dir", empty}, tt.args...)...)
			if err == nil || !strings.Contains(describeError(err), tt.want) {
				t.Errorf("error %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	out, err := run(t, "version")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "kubernetes v1.37.1") {
		t.Errorf("version output %q lacks the hosted Kubernetes version", out)
	}
}

func TestVersionListsReleases(t *testing.T) {
	dir := t.TempDir()
	bin := releasetest.Write(t, dir, "v1.36.3", "a release")
	out, err := run(t, "version", "--releases-dir", dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"v1.37.1\tcompiled in", "v1.36.3\t" + bin} {
		if !strings.Contains(out, want) {
			t.Errorf("version output %q lacks %q", out, want)
		}
	}
	if err := os.WriteFile(bin, []byte("tampered"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, "version", "--releases-dir", dir); err == nil || !strings.Contains(err.Error(), bin) {
		t.Errorf("a tampered release: error %v, want one naming %s", err, bin)
	}
}
