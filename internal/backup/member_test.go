package backup

import (
	"strings"
	"testing"

	"hypershift.dev/internal/runtime"
)

func TestMemberFromEtcdArgs(t *testing.T) {
	spec := runtime.Spec{Name: "etcd-1", Args: []string{
		"--name=etcd-1", "--data-dir=/d/etcd-1/data",
		"--initial-advertise-peer-urls=https://127.0.0.1:2",
		"--initial-cluster=etcd-0=https://127.0.0.1:1,etcd-1=https://127.0.0.1:2",
		"--initial-cluster-token=clusters-a", "--logger=zap",
	}}
	dir, m, err := MemberFromEtcdArgs(spec.Args)
	if err != nil {
		t.Fatal(err)
	}
	if dir != "/d/etcd-1/data" || m.Name != "etcd-1" || m.PeerURL != "https://127.0.0.1:2" ||
		m.InitialCluster != "etcd-0=https://127.0.0.1:1,etcd-1=https://127.0.0.1:2" || m.ClusterToken != "clusters-a" {
		t.Errorf("MemberFromEtcdArgs = %q, %+v", dir, m)
	}
	spec.Args = spec.Args[:1]
	if _, _, err := MemberFromEtcdArgs(spec.Args); err == nil || !strings.Contains(err.Error(), "--data-dir") {
		t.Errorf("arguments without a data dir: %v, want an error naming the missing flags", err)
	}
}
