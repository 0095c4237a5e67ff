package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMigrateRefusesBadInput: every flag is checked before either
// management plane is contacted (there is none here), naming the flag.
func TestMigrateRefusesBadInput(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	dir := t.TempDir()
	key := filepath.Join(dir, "key")
	if err := os.WriteFile(key, []byte(strings.Repeat("ab", 32)), 0o600); err != nil {
		t.Fatal(err)
	}
	short := filepath.Join(dir, "short.key")
	if err := os.WriteFile(short, []byte("abcd"), 0o600); err != nil {
		t.Fatal(err)
	}
	via := "file://" + filepath.Join(dir, "a.bak")
	base := []string{"--data-dir", dir, "migrate", "cluster"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--to-kubeconfig", "k", "--via", via, "--key-file", key}, "--name is required"},
		{[]string{"--name", "a", "--via", via, "--key-file", key}, "--to-kubeconfig is required"},
		{[]string{"--name", "a", "--to-kubeconfig", "k", "--key-file", key}, "--via is required"},
		{[]string{"--name", "a", "--to-kubeconfig", "k", "--via", "ftp://bucket/a.bak", "--key-file", key}, "--via: "},
		{[]string{"--name", "a", "--to-kubeconfig", "k", "--via", "gs://bucket/a.bak", "--key-file", key}, "no management plane found"},
		{[]string{"--name", "a", "--to-kubeconfig", "k", "--via", via, "--key-file", short}, short},
		{[]string{"--name", "a", "--to-kubeconfig", "k", "--via", via, "--key-file", key}, "no management plane found"},
		{[]string{"--name", "a", "--to-kubeconfig", "k", "--via", via, "--key-file", key, "--api-server-publishing", "Route"}, `--api-server-publishing "Route"`},
		{[]string{"--name", "a", "--to-kubeconfig", "k", "--via", via, "--key-file", key, "--api-server-publishing", "NodePort"}, "--api-server-publishing NodePort needs --api-server-address"},
		{[]string{"--name", "a", "--to-kubeconfig", "k", "--via", via, "--key-file", key, "--api-server-publishing", "HostPort", "--api-server-address", "192.0.2.1"}, "--api-server-address is for"},
		{[]string{"--name", "a", "--to-kubeconfig", "k", "--via", via, "--key-file", key, "--api-server-address", "192.0.2.1"}, "--api-server-address is for"},
		{[]string{"--name", "a", "--to-kubeconfig", "k", "--via", via, "--key-file", key, "--api-server-publishing", "HostPort", "--etcd-storage-class", "fast"}, "--etcd-storage-class and --etcd-storage-size are for a target of the kube runtime"},
		{[]string{"--name", "a", "--to-kubeconfig", "k", "--via", via, "--key-file", key, "--api-server-publishing", "NodePort", "--api-server-address", "192.0.2.1", "--etcd-storage-size", "lots"}, `--etcd-storage-size "lots"`},
	} {
		_, err := run(t, append(base, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("migrate %v: error %v, want it to contain %q", tc.args, err, tc.want)
		}
	}
}
