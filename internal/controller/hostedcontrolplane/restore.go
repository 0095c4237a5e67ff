package hostedcontrolplane

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/backup"
	"hypershift.dev/internal/components"
	"hypershift.dev/internal/controller/conditions"
	"hypershift.dev/internal/hostedref"
	"hypershift.dev/internal/runtime"
)

// EtcdRestoredAnnotation on a HostedControlPlane records that its etcd
// members were restored from the archive it names: the specs then carry
// no restore files, and a member's data made later (a lost volume) is
// never filled from the old archive.
const EtcdRestoredAnnotation = "hypershift.dev/etcd-restored-from"

// reconcileRestore hands the restore of a HostedControlPlane marked for
// one to the runtime, which holds etcd's data: every etcd spec gets a
// Restore with the archive's URL, key and bucket credentials (and, where
// instances share the operator's files, the root file:// archives must be
// in), and the runtime runs the restore step before it first starts each
// member on empty data (runtime.Spec.Restore). Once every member runs, the
// restore is recorded on the HostedControlPlane and the specs keep an
// empty Restore, so nothing restarts while the credentials go.
func (r *Reconciler) reconcileRestore(ctx context.Context, s *scope) (ctrl.Result, error) {
	hcp := s.hcp
	if _, ok := hcp.Annotations[hypershiftv1alpha1.RestoreFromAnnotation]; !ok {
		return ctrl.Result{}, nil
	}
	if hcp.Annotations[EtcdRestoredAnnotation] != "" {
		setRestore(s.specs, &runtime.Restore{})
		return ctrl.Result{}, nil
	}
	req, err := hypershiftv1alpha1.RestoreRequestOf(hcp.Annotations)
	if err != nil {
		return r.restoreFailed(ctx, s, err)
	}
	hostFiles := r.Runtime.Capabilities().HostFiles
	fileRoot := ""
	if hostFiles {
		fileRoot = r.BackupFileRoot
	}
	if err := backup.CheckArchiveURL(req.URL, fileRoot, !hostFiles); err != nil {
		return r.restoreFailed(ctx, s, err)
	}
	if etcdRunning(s.specs, r.Runtime.Status(s.ref)) || hasRun(hcp) {
		patch := client.MergeFrom(hcp.DeepCopy())
		metav1.SetMetaDataAnnotation(&hcp.ObjectMeta, EtcdRestoredAnnotation, req.URL)
		if err := r.Client.Patch(ctx, hcp, patch); err != nil {
			return ctrl.Result{}, fmt.Errorf("record the etcd restore: %w", err)
		}
		ctrl.LoggerFrom(ctx).Info("etcd members restored", "url", req.URL)
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
	files := restoreFiles(req.URL, secret.Data)
	if hostFiles {
		files = append(files, runtime.File{Path: runtime.RestoreFileRootFile, Content: []byte(fileRoot), Secret: true})
	}
	setRestore(s.specs, &runtime.Restore{Files: files})
	// Until the members run, look again: that they run is what ends the
	// restore.
	s.requeueAfter(5 * time.Second)
	return ctrl.Result{}, nil
}

// hasRun says whether the control plane has completed a version since it
// was made: then its etcd members were restored already (by an operator
// from before the annotation), whatever runs now.
func hasRun(hcp *hypershiftv1alpha1.HostedControlPlane) bool {
	for _, h := range hcp.Status.VersionHistory {
		if h.State == hypershiftv1alpha1.CompletedVersion {
			return true
		}
	}
	return false
}

// restoreSecret reads the Secret of a restore request from the namespace of
// the HostedCluster that owns hcp (hostedref.Owner), the only namespace the
// request may name: a HostedControlPlane that no HostedCluster owns — one
// made by hand — restores nothing, and cannot have the operator read (or
// hand to its runtime) a Secret of another.
func (r *Reconciler) restoreSecret(ctx context.Context, hcp *hypershiftv1alpha1.HostedControlPlane, req *hypershiftv1alpha1.RestoreRequest) (*corev1.Secret, error) {
	hc, err := hostedref.Owner(ctx, r.Client, hcp)
	if err != nil {
		return nil, fmt.Errorf("restore refused: %w", err)
	}
	if req.Namespace != hc.Namespace {
		return nil, fmt.Errorf("restore refused: the request names Secret %s/%s; a restore Secret is read only from the namespace of HostedCluster %s/%s",
			req.Namespace, req.Secret, hc.Namespace, hc.Name)
	}
	secret := &corev1.Secret{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: hc.Namespace, Name: req.Secret}, secret); err != nil {
		return nil, fmt.Errorf("restore Secret %s/%s: %w", hc.Namespace, req.Secret, err)
	}
	return secret, nil
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
// request Secret's keys (the archive key, the bucket's credentials). The
// Secret is the tenant's: its keys never stand for the URL or the file
// root, which only the operator sets.
func restoreFiles(archiveURL string, data map[string][]byte) []runtime.File {
	files := []runtime.File{{Path: runtime.RestoreURLFile, Content: []byte(archiveURL), Secret: true}}
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if k == runtime.RestoreURLFile || k == runtime.RestoreFileRootFile {
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

// etcdRunning: every etcd instance of specs runs (it passed the restore
// step and etcd is ready).
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
