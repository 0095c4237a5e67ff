package hostedcontrolplane

import (
	"strings"
	"testing"

	"hypershift.dev/internal/components"
	"hypershift.dev/internal/runtime"
)

func TestEtcdMember(t *testing.T) {
	spec := runtime.Spec{Name: "etcd-1", Args: []string{
		"--name=etcd-1", "--data-dir=/d/etcd-1/data",
		"--initial-advertise-peer-urls=https://127.0.0.1:2",
		"--initial-cluster=etcd-0=https://127.0.0.1:1,etcd-1=https://127.0.0.1:2",
		"--initial-cluster-token=clusters-a", "--logger=zap",
	}}
	dir, m, err := EtcdMember(spec.Args)
	if err != nil {
		t.Fatal(err)
	}
	if dir != "/d/etcd-1/data" || m.Name != "etcd-1" || m.PeerURL != "https://127.0.0.1:2" ||
		m.InitialCluster != "etcd-0=https://127.0.0.1:1,etcd-1=https://127.0.0.1:2" || m.ClusterToken != "clusters-a" {
		t.Errorf("EtcdMember = %q, %+v", dir, m)
	}
	spec.Args = spec.Args[:1]
	if _, _, err := EtcdMember(spec.Args); err == nil || !strings.Contains(err.Error(), "--data-dir") {
		t.Errorf("arguments without a data dir: %v, want an error naming the missing flags", err)
	}
}

// TestRestoreInPodsParts: the restore's files carry the URL and the
// request Secret's keys; etcd counts as restored only once every member
// runs; file:// archives are refused naming the scheme.
func TestRestoreInPodsParts(t *testing.T) {
	files := restoreFiles("s3://b/a.bak", map[string][]byte{"key": []byte("k"), "AWS_ACCESS_KEY_ID": []byte("id"), "url": []byte("ignored")})
	var paths []string
	for _, f := range files {
		paths = append(paths, f.Path+"="+string(f.Content))
		if !f.Secret {
			t.Errorf("restore file %s is not secret", f.Path)
		}
	}
	if got := strings.Join(paths, ","); got != "url=s3://b/a.bak,AWS_ACCESS_KEY_ID=id,key=k" {
		t.Errorf("restore files %s", got)
	}

	specs := []runtime.Spec{
		{Name: "etcd-0", Component: components.Etcd},
		{Name: "etcd-1", Component: components.Etcd},
		{Name: "kube-apiserver", Component: components.KubeAPIServer},
	}
	for _, tt := range []struct {
		name     string
		statuses []runtime.InstanceStatus
		want     bool
	}{
		{"no status yet (operator restarted)", nil, false},
		{"one member starting", []runtime.InstanceStatus{{Name: "etcd-0", Phase: runtime.Running}, {Name: "etcd-1", Phase: runtime.Starting}}, false},
		{"a member in back-off (its restore fails)", []runtime.InstanceStatus{{Name: "etcd-0", Phase: runtime.Running}, {Name: "etcd-1", Phase: runtime.BackOff}}, false},
		{"every member runs", []runtime.InstanceStatus{{Name: "etcd-0", Phase: runtime.Running}, {Name: "etcd-1", Phase: runtime.Running}, {Name: "kube-apiserver", Phase: runtime.Starting}}, true},
	} {
		if got := etcdRunning(specs, tt.statuses); got != tt.want {
			t.Errorf("%s: etcdRunning = %v, want %v", tt.name, got, tt.want)
		}
	}
	if etcdRunning(specs[2:], []runtime.InstanceStatus{{Name: "kube-apiserver", Phase: runtime.Running}}) {
		t.Error("etcdRunning without etcd specs")
	}

	rs := &runtime.Restore{}
	setRestore(specs, rs)
	if specs[0].Restore != rs || specs[1].Restore != rs || specs[2].Restore != nil {
		t.Errorf("setRestore gave %v %v %v, want the etcd members only", specs[0].Restore, specs[1].Restore, specs[2].Restore)
	}

	if err := checkPodsArchiveURL("file:///var/backups/a.bak"); err == nil || !strings.Contains(err.Error(), "file://") || !strings.Contains(err.Error(), "s3://") {
		t.Errorf("file:// archive: %v, want a refusal naming file:// and what to use", err)
	}
	if err := checkPodsArchiveURL("s3://b/a.bak?region=x"); err != nil {
		t.Errorf("s3:// archive: %v", err)
	}
}
