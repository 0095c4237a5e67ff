package hostedcontrolplane

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/backup"
	"hypershift.dev/internal/components"
	"hypershift.dev/internal/controller/conditions"
	"hypershift.dev/internal/runtime"
)

// EtcdRestoredAnnotation on a HostedControlPlane of a runtime whose
// instances are pods records that its etcd members were restored from the
// archive it names: the restore Secret is then no longer rendered, and a
// member's volume made later is never filled from the old archive.
const EtcdRestoredAnnotation = "hypershift.dev/etcd-restored-from"

// restoreInPods restores etcd where the runtime, not the operator, holds
// its data (the kube runtime's volumes): every etcd spec gets a Restore
// with the archive's URL, key and bucket credentials, which the runtime
// hands to the pods (an init container that restores an empty data dir
// before etcd first starts). Once every member runs, the restore is
// recorded on the HostedControlPlane and the specs keep an empty Restore,
// so the workload does not change (no restart) while the credentials go.
func (r *Reconciler) restoreInPods(ctx context.Context, s *scope, raw string) (ctrl.Result, error) {
	hcp := s.hcp
	if hcp.Annotations[EtcdRestoredAnnotation] != "" {
		setRestore(s.specs, &runtime.Restore{})
		return ctrl.Result{}, nil
	}
	req := &hypershiftv1alpha1.RestoreRequest{}
	if err := json.Unmarshal([]byte(raw), req); err != nil {
		return r.restoreFailed(ctx, s, fmt.Errorf("annotation %s: %w", hypershiftv1alpha1.RestoreFromAnnotation, err))
	}
	if err := backup.CheckArchiveURL(req.URL, "", true); err != nil {
		return r.restoreFailed(ctx, s, err)
	}
	if etcdRunning(s.specs, r.Runtime.Status(s.ref)) {
		patch := client.MergeFrom(hcp.DeepCopy())
		metav1.SetMetaDataAnnotation(&hcp.ObjectMeta, EtcdRestoredAnnotation, req.URL)
		if err := r.Client.Patch(ctx, hcp, patch); err != nil {
			return ctrl.Result{}, fmt.Errorf("record the etcd restore: %w", err)
		}
		ctrl.LoggerFrom(ctx).Info("etcd members restored in their pods", "url", req.URL)
		setRestore(s.specs, &runtime.Restore{})
		return ctrl.Result{}, nil
	}
	secret, err := r.restoreSecret(ctx, hcp, req)
	if err != nil {
		return r.restoreFailed(ctx, s, err)
	}
	if _, _, err := backup.FromSecretData(secret.Data); err != nil {
		return r.restoreFailed(ctx, s, fmt.Errorf("restore Secret %s/%s: %w", req.Namespace, req.Secret, err))
	}
	setRestore(s.specs, &runtime.Restore{Files: restoreFiles(req.URL, secret.Data)})
	// Until the members run, look again: their pods' readiness is what
	// ends the restore.
	s.requeueAfter(5 * time.Second)
	return ctrl.Result{}, nil
}

// restoreFailed reports a restore that cannot go on and keeps every
// instance from running: an etcd started empty would serve a cluster
// without its objects.
func (r *Reconciler) restoreFailed(ctx context.Context, s *scope, err error) (ctrl.Result, error) {
	conditions.Set(&s.hcp.Status.Conditions, s.hcp.Generation, hypershiftv1alpha1.Degraded, true,
		hypershiftv1alpha1.RestoreFailedReason, err.Error())
	ctrl.LoggerFrom(ctx).Error(err, "restore etcd data")
	return ctrl.Result{RequeueAfter: 10 * time.Second}, nil
}

// restoreFiles are the files of the restore: the archive's URL and the
// request Secret's keys (the archive key, the bucket's credentials).
func restoreFiles(archiveURL string, data map[string][]byte) []runtime.File {
	files := []runtime.File{{Path: runtime.RestoreURLFile, Content: []byte(archiveURL), Secret: true}}
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if k == runtime.RestoreURLFile {
			continue
		}
		files = append(files, runtime.File{Path: k, Content: data[k], Secret: true})
	}
	return files
}

// setRestore gives every etcd spec the restore.
func setRestore(specs []runtime.Spec, rs *runtime.Restore) {
	for i := range specs {
		if specs[i].Component == components.Etcd {
			specs[i].Restore = rs
		}
	}
}

// etcdRunning: every etcd instance of specs runs (its pod passed the
// restore and etcd is ready).
func etcdRunning(specs []runtime.Spec, statuses []runtime.InstanceStatus) bool {
	phase := map[string]runtime.Phase{}
	for _, st := range statuses {
		phase[st.Name] = st.Phase
	}
	n := 0
	for _, spec := range specs {
		if spec.Component != components.Etcd {
			continue
		}
		n++
		if phase[spec.Name] != runtime.Running {
			return false
		}
	}
	return n > 0
}
