package entrypoint

import (
	"strings"
	"testing"
)

// TestOperatorFlagsValidatedFirst: bad operator flags are refused, naming
// the flag, before the operator looks for a management cluster (there is
// none here, which would be the error otherwise).
func TestOperatorFlagsValidatedFirst(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	t.Setenv("POD_NAMESPACE", "")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--runtime=docker"}, `--runtime "docker": use process`},
		{[]string{"--image=x:1"}, "--image needs --runtime=kube"},
		{[]string{"--leader-elect"}, "--leader-elect needs --runtime=kube"},
		{[]string{"--etcd-storage-class=fast"}, "--etcd-storage-class needs --runtime=kube"},
		{[]string{"--runtime=kube", "--etcd-storage-size=lots"}, `--etcd-storage-size "lots" is not a positive quantity`},
		{[]string{"--runtime=kube", "--etcd-storage-size=0"}, `--etcd-storage-size "0" is not a positive quantity`},
		{[]string{"--runtime=kube", "--image=UPPER::bad"}, `--image "UPPER::bad" is not an image reference`},
		{[]string{"--runtime=kube", "--etcd-storage-class=a/b"}, `--etcd-storage-class "a/b" is not a valid StorageClass name`},
		{[]string{"--max-starting-control-planes=-1"}, "--max-starting-control-planes -1: use a number of control planes, or 0 for no limit"},
		{[]string{"--runtime=kube", "--max-starting-control-planes=4"}, "--max-starting-control-planes needs --runtime=process"},
		{[]string{"--control-plane-nice=20"}, "--control-plane-nice 20: use a nice value from 0 (same priority as the management plane) to 19 (lowest)"},
		{[]string{"--control-plane-nice=-1"}, "--control-plane-nice -1: use a nice value from 0"},
		{[]string{"--runtime=kube", "--control-plane-nice=5"}, "--control-plane-nice needs --runtime=process"},
		// Valid flags get as far as looking for the cluster.
		{[]string{"--runtime=kube", "--leader-elect", "--etcd-storage-size=20Gi"}, "no management plane found"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			_, err := run(t, append([]string{"--data-dir", t.TempDir(), "operator"}, tt.args...)...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want it to contain %q", err, tt.want)
			}
		})
	}
}
