package hostedcontrolplane

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/backup"
	"hypershift.dev/internal/components"
	"hypershift.dev/internal/controller/conditions"
	"hypershift.dev/internal/hostedref"
)

// restoredMarker, in the control plane's directory, records that its etcd
// data came from an archive: the restore happens once, before etcd first
// starts, and never again over data etcd has written since.
const restoredMarker = "restored-from"

// reconcileRestore fills the etcd members' data dirs from the archive of a
// HostedControlPlane marked for restore, before the runtime first starts
// them. Until that is done, nothing runs: an etcd started empty would
// serve a cluster without its objects.
func (r *Reconciler) reconcileRestore(ctx context.Context, s *scope) (ctrl.Result, error) {
	hcp := s.hcp
	raw, ok := hcp.Annotations[hypershiftv1alpha1.RestoreFromAnnotation]
	if !ok {
		return ctrl.Result{}, nil
	}
	layout := r.Runtime.Layout(s.ref)
	if layout.Pods {
		return r.restoreInPods(ctx, s, raw)
	}
	marker := filepath.Join(layout.Dir, restoredMarker)
	if _, err := os.Stat(marker); err == nil {
		return ctrl.Result{}, nil
	}
	if err := r.restoreEtcd(ctx, s, raw, marker); err != nil {
		conditions.Set(&hcp.Status.Conditions, hcp.Generation, hypershiftv1alpha1.Degraded, true,
			hypershiftv1alpha1.RestoreFailedReason, err.Error())
		ctrl.LoggerFrom(ctx).Error(err, "restore etcd data")
		return ctrl.Result{RequeueAfter: 10 * time.Second}, nil
	}
	return ctrl.Result{}, nil
}

// restoreSecret reads the Secret of a restore request from the namespace of
// the HostedCluster that owns hcp (hostedref.Owner), the only namespace the
// request may name: a HostedControlPlane that no HostedCluster owns — one
// made by hand — restores nothing, and cannot have the operator read (or,
// on the kube runtime, copy into its own namespace) a Secret of another.
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

func (r *Reconciler) restoreEtcd(ctx context.Context, s *scope, raw, marker string) error {
	req := &hypershiftv1alpha1.RestoreRequest{}
	if err := json.Unmarshal([]byte(raw), req); err != nil {
		return fmt.Errorf("annotation %s: %w", hypershiftv1alpha1.RestoreFromAnnotation, err)
	}
	secret, err := r.restoreSecret(ctx, s.hcp, req)
	if err != nil {
		return err
	}
	key, creds, err := backup.FromSecretData(secret.Data)
	if err != nil {
		return fmt.Errorf("restore Secret %s/%s: %w", req.Namespace, req.Secret, err)
	}
	if err := backup.CheckArchiveURL(req.URL, r.BackupFileRoot, false); err != nil {
		return err
	}
	fetchCtx, cancel := context.WithTimeout(ctx, backup.FetchTimeout)
	defer cancel()
	a, err := backup.Fetch(fetchCtx, req.URL, key, creds)
	if err != nil {
		return err
	}
	snapshot := a.Files[backup.EtcdSnapshotEntry]
	if len(snapshot) == 0 {
		return fmt.Errorf("archive %s has no %s", req.URL, backup.EtcdSnapshotEntry)
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("the hypershift binary that restores etcd members: %w", err)
	}
	file := filepath.Join(filepath.Dir(marker), ".restore-snapshot.db")
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return fmt.Errorf("write the etcd snapshot: %w", err)
	}
	if err := os.WriteFile(file, snapshot, 0o600); err != nil {
		return fmt.Errorf("write the etcd snapshot: %w", err)
	}
	defer os.Remove(file)
	for _, spec := range s.specs {
		if spec.Component != components.Etcd {
			continue
		}
		if _, _, err := backup.MemberFromEtcdArgs(spec.Args); err != nil {
			return fmt.Errorf("etcd instance %s: %w", spec.Name, err)
		}
		// A member an interrupted pass restored is left as it is.
		if err := restoreMember(ctx, exe, file, spec.Args); err != nil {
			return fmt.Errorf("etcd instance %s: %w", spec.Name, err)
		}
	}
	if err := os.WriteFile(marker, []byte(req.URL+"\n"), 0o600); err != nil {
		return fmt.Errorf("record the restore: %w", err)
	}
	ctrl.LoggerFrom(ctx).Info("restored etcd data", "url", req.URL, "snapshotBytes", len(snapshot))
	return nil
}

// memberRestoreTimeout bounds the restore of one member.
const memberRestoreTimeout = 10 * time.Minute

// restoreMember fills the data dir of the etcd member etcdArgs describe
// from the snapshot in file, in a child process (exe restore etcd-data
// --snapshot): a snapshot is the tenant's data, and one that makes etcd's
// restore code panic or run away must not take the operator, and every
// other cluster, down with it. The child's last output is the error.
func restoreMember(ctx context.Context, exe, file string, etcdArgs []string) error {
	ctx, cancel := context.WithTimeout(ctx, memberRestoreTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, append([]string{"restore", "etcd-data", "--snapshot", file, "--"}, etcdArgs...)...) //nolint:gosec // our own binary; the rendered etcd spec's arguments
	out := &tailBuffer{max: 4 << 10}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = []string{} // it reads a file: none of the operator's credentials
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("restore etcd data: %w: %s", err, strings.TrimSpace(out.String()))
	}
	return nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max int
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string { return string(b.buf) }
