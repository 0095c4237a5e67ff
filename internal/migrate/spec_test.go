package migrate

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
)

func TestBackupUnderWay(t *testing.T) {
	withRequest := func(id string, st *hypershiftv1alpha1.BackupStatus) *hypershiftv1alpha1.HostedCluster {
		hc := &hypershiftv1alpha1.HostedCluster{Status: hypershiftv1alpha1.HostedClusterStatus{Backup: st}}
		if id != "" {
			hc.Annotations = map[string]string{hypershiftv1alpha1.BackupRequestAnnotation: `{"id":"` + id + `","url":"file:///b","secret":"s"}`}
		}
		return hc
	}
	done := &hypershiftv1alpha1.BackupStatus{LastBackup: &hypershiftv1alpha1.BackupRecord{RequestID: "r1"}}
	failed := &hypershiftv1alpha1.BackupStatus{FailedRequestID: "r1", LastBackup: &hypershiftv1alpha1.BackupRecord{RequestID: "r0"}}
	for _, tc := range []struct {
		name string
		hc   *hypershiftv1alpha1.HostedCluster
		want bool
	}{
		{"no request", withRequest("", nil), false},
		{"no status yet", withRequest("r1", nil), true},
		{"answered", withRequest("r1", done), false},
		{"failed", withRequest("r1", failed), false},
		{"newer request than the last answer", withRequest("r2", done), true},
	} {
		if got := backupUnderWay(tc.hc); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestAdaptSpec: a cluster moving to the other runtime is published as
// the flags say; to a host port it loses the etcd storage only the kube
// runtime honours, to the kube runtime it gets the storage the flags give;
// without --api-server-publishing nothing changes.
func TestAdaptSpec(t *testing.T) {
	class := "static"
	size := resource.MustParse("1Gi")
	kubeCluster := func() *hypershiftv1alpha1.HostedCluster {
		hc := hypershiftv1alpha1.NewHostedCluster("clusters", "a", hypershiftv1alpha1.NonePlatform, "")
		hc.Spec.Services = []hypershiftv1alpha1.ServicePublishingStrategyMapping{{Service: hypershiftv1alpha1.APIServer, ServicePublishingStrategy: hypershiftv1alpha1.ServicePublishingStrategy{
			Type: hypershiftv1alpha1.NodePort, NodePort: &hypershiftv1alpha1.NodePortPublishingStrategy{Address: "192.0.2.1"},
		}}}
		hc.Spec.Etcd.Managed = &hypershiftv1alpha1.ManagedEtcdSpec{Storage: hypershiftv1alpha1.ManagedEtcdStorageSpec{
			Type: hypershiftv1alpha1.PersistentVolumeEtcdStorage, PersistentVolume: &hypershiftv1alpha1.PersistentVolumeEtcdStorageSpec{StorageClassName: &class, Size: &size},
		}}
		return hc
	}

	hc := kubeCluster()
	if changed := (Options{}).AdaptSpec(hc); len(changed) != 0 || !equality.Semantic.DeepEqual(hc, kubeCluster()) {
		t.Errorf("without --api-server-publishing the spec changed: %v", changed)
	}

	hc = kubeCluster()
	changed := (Options{Publishing: "HostPort"}).AdaptSpec(hc)
	if len(hc.Spec.Services) != 1 || hc.Spec.Services[0].Type != hypershiftv1alpha1.HostPort || hc.Spec.Services[0].NodePort != nil {
		t.Errorf("services %+v, want the API server on a host port", hc.Spec.Services)
	}
	if hc.Spec.Etcd.Managed != nil {
		t.Errorf("etcd %+v, want no storage on a host-port target", hc.Spec.Etcd)
	}
	if len(changed) != 2 {
		t.Errorf("changes reported %q, want publishing and storage", changed)
	}

	hc = kubeCluster()
	hc.Spec.Services, hc.Spec.Etcd.Managed = nil, nil
	(Options{Publishing: "NodePort", APIServerAddress: "198.51.100.7", EtcdStorageClass: "fast", EtcdStorageSize: "2Gi"}).AdaptSpec(hc)
	if s := hc.Spec.Services; len(s) != 1 || s[0].Type != hypershiftv1alpha1.NodePort || s[0].NodePort == nil || s[0].NodePort.Address != "198.51.100.7" {
		t.Errorf("services %+v, want NodePort at 198.51.100.7", s)
	}
	if m := hc.Spec.Etcd.Managed; m == nil || *m.Storage.PersistentVolume.StorageClassName != "fast" || m.Storage.PersistentVolume.Size.String() != "2Gi" {
		t.Errorf("etcd %+v, want storage class fast of 2Gi", hc.Spec.Etcd)
	}
}
