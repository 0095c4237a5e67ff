// Package migrate moves a hosted cluster to another management plane
// through a final backup, keeping its CAs, keys, endpoint and data, so
// existing kubeconfigs and service-account tokens keep working: it fences
// the cluster on the source, has the source's operator take a final backup,
// restores it through the target's operator, waits until it is Available
// there, then removes it from the source. A failure before the target
// serves is rolled back. It is the library behind `hypershift migrate
// cluster`, in the shape of clusterctl's move: the command parses flags,
// builds the two clients and calls Migrate.
package migrate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/backup"
	"hypershift.dev/internal/clusterclient"
)

// Options say which hosted cluster moves, from where to where, and how.
type Options struct {
	// Source and Target are clients of the two management planes.
	Source, Target client.Client
	// TargetKubeconfig names the target in messages (the kubeconfig the
	// Target client was built from).
	TargetKubeconfig string
	// Cluster is the HostedCluster to move; it keeps its namespace and
	// name on the target.
	Cluster types.NamespacedName
	// Via is the final archive's URL, which both operators reach; Key is
	// its key.
	Via string
	Key []byte
	// Timeout bounds each step: fence, backup, restore, removal.
	Timeout time.Duration
	// The target's publishing and etcd storage, when it runs the other
	// runtime (spec.go).
	Publishing, APIServerAddress, EtcdStorageClass, EtcdStorageSize string
	// ErrOut, when set, is told of reads that failed and are retried.
	ErrOut io.Writer
}

// migration is one run: the two planes and what it did, so that a
// failure undoes exactly that.
type migration struct {
	o   Options
	out io.Writer
	nn  types.NamespacedName
	// srcUID is the source HostedCluster this run acts on; every write to
	// it is preconditioned on it.
	srcUID types.UID
	// srcEndpoint is the source's published API endpoint (host:port), to
	// say when the target publishes another.
	srcEndpoint string
	// fenced: this run fenced the source (it was not fenced before).
	fenced bool
	// dstNamespaceCreated: the target's namespace did not exist before.
	dstNamespaceCreated bool
	start               time.Time
}

// Migrate moves opts.Cluster from opts.Source to opts.Target, saying each
// step on progress. It checks both planes and the cluster before anything
// changes; then it fences, backs up, restores, waits and removes the
// source, and rolls back what it did when the target does not serve,
// also when ctx is cancelled.
func Migrate(ctx context.Context, opts Options, progress io.Writer) error {
	if err := opts.CheckPublishing(); err != nil {
		return err
	}
	m := &migration{o: opts, out: progress, nn: opts.Cluster}
	if err := m.checkPlanes(ctx); err != nil {
		return err
	}
	hc, err := m.checkSource(ctx)
	if err != nil {
		return err
	}
	if err := m.checkTarget(ctx, hc); err != nil {
		return err
	}
	return m.run(ctx)
}

// checkPlanes makes sure both management planes answer and are two.
func (m *migration) checkPlanes(ctx context.Context) error {
	srcNS, dstNS := &corev1.Namespace{}, &corev1.Namespace{}
	if err := m.o.Source.Get(ctx, client.ObjectKey{Name: metav1.NamespaceSystem}, srcNS); err != nil {
		return fmt.Errorf("source management plane does not answer: %w", err)
	}
	if err := m.o.Target.Get(ctx, client.ObjectKey{Name: metav1.NamespaceSystem}, dstNS); err != nil {
		return fmt.Errorf("--to-kubeconfig %s: the target management plane does not answer: %w", m.o.TargetKubeconfig, err)
	}
	if srcNS.UID == dstNS.UID {
		return fmt.Errorf("--to-kubeconfig %s is this management plane (namespace kube-system has the same UID): give the other plane's kubeconfig", m.o.TargetKubeconfig)
	}
	return nil
}

// checkSource reads the cluster to move and refuses one that cannot be.
func (m *migration) checkSource(ctx context.Context) (*hypershiftv1alpha1.HostedCluster, error) {
	hc := &hypershiftv1alpha1.HostedCluster{}
	if err := m.o.Source.Get(ctx, m.nn, hc); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, clusterclient.NotFound(m.nn)
		}
		return nil, fmt.Errorf("read hosted cluster %s: %w", m.nn, err)
	}
	fenced := hc.Annotations[hypershiftv1alpha1.FencedAnnotation] == "true"
	switch {
	case !hc.DeletionTimestamp.IsZero():
		return nil, fmt.Errorf("hosted cluster %s is being deleted", m.nn)
	case asleep(hc):
		return nil, fmt.Errorf("hosted cluster %s is hibernated: a sleeping control plane is not woken to be fenced for its final snapshot; `hypershift resume cluster %s -n %s --wait`, then migrate again", m.nn, m.nn.Name, m.nn.Namespace)
	case !fenced && !meta.IsStatusConditionTrue(hc.Status.Conditions, hypershiftv1alpha1.Available.String()):
		return nil, fmt.Errorf("hosted cluster %s is not Available: see `hypershift describe cluster %s -n %s`", m.nn, m.nn.Name, m.nn.Namespace)
	}
	if backupUnderWay(hc) {
		return nil, fmt.Errorf("hosted cluster %s has a backup under way (annotation %s): wait for it and migrate again", m.nn, hypershiftv1alpha1.BackupRequestAnnotation)
	}
	m.srcUID = hc.UID
	if ep := hc.Status.ControlPlaneEndpoint; ep.Port != 0 {
		m.srcEndpoint = net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port)))
	}
	return hc, nil
}

// checkTarget refuses a target that has the cluster already, and has its
// API server judge the cluster's spec (a dry run).
func (m *migration) checkTarget(ctx context.Context, hc *hypershiftv1alpha1.HostedCluster) error {
	err := m.o.Target.Get(ctx, m.nn, &hypershiftv1alpha1.HostedCluster{})
	switch {
	case err == nil:
		return fmt.Errorf("hosted cluster %s exists on the target management plane (--to-kubeconfig %s): remove it there or migrate another cluster", m.nn, m.o.TargetKubeconfig)
	case meta.IsNoMatchError(err):
		return fmt.Errorf("--to-kubeconfig %s: the target has no hypershift API: run `hypershift up` or `hypershift install` there", m.o.TargetKubeconfig)
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("read hosted cluster %s on the target: %w", m.nn, err)
	}
	// A namespace still terminating (an earlier rollback removed it) takes
	// no new objects: wait until it is gone.
	ns := &corev1.Namespace{}
	err = wait.PollUntilContextTimeout(ctx, clusterclient.PollInterval, m.o.Timeout, true, func(ctx context.Context) (bool, error) {
		err := m.o.Target.Get(ctx, client.ObjectKey{Name: m.nn.Namespace}, ns)
		switch {
		case apierrors.IsNotFound(err):
			m.dstNamespaceCreated = true
			return true, nil
		case err != nil:
			return false, fmt.Errorf("read namespace %s on the target: %w", m.nn.Namespace, err)
		}
		return ns.DeletionTimestamp.IsZero(), nil
	})
	if wait.Interrupted(err) {
		return fmt.Errorf("namespace %s on the target is still being deleted after %s", m.nn.Namespace, m.o.Timeout)
	}
	if err != nil {
		return err
	}
	probe := &hypershiftv1alpha1.HostedCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: hc.Namespace, Name: hc.Name, Labels: hc.Labels},
		Spec:       *hc.Spec.DeepCopy(),
	}
	m.o.AdaptSpec(probe)
	if err := clusterclient.ValidateAll(ctx, m.o.Target, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: m.nn.Namespace}}, probe); err != nil {
		return fmt.Errorf("the target management plane refuses hosted cluster %s: %w", m.nn, err)
	}
	return nil
}

// run fences, backs up, restores, waits and removes; a failure before the
// target serves is rolled back.
func (m *migration) run(ctx context.Context) error {
	m.start = time.Now()
	m.say("migrating hosted cluster %s (uid %s) to %s via %s", m.nn, m.srcUID, m.o.TargetKubeconfig, m.o.Via)
	if err := m.fence(ctx); err != nil {
		return m.rollback(ctx, err)
	}
	downtimeStart := time.Now()
	if err := m.waitFenced(ctx); err != nil {
		return m.rollback(ctx, err)
	}
	m.say("fenced: only etcd runs, no write reaches it")
	rec, err := m.finalBackup(ctx)
	if err != nil {
		return m.rollback(ctx, err)
	}
	m.say("final backup %s: %d bytes in %s", rec.URL, rec.SizeBytes, rec.Duration.Round(time.Millisecond))
	if err := m.restore(ctx); err != nil {
		return m.rollback(ctx, err)
	}
	if err := clusterclient.WaitAvailable(ctx, m.out, m.o.ErrOut, m.o.Target, m.nn, m.o.Timeout); err != nil {
		return m.rollback(ctx, fmt.Errorf("on the target: %w", err))
	}
	downtime := time.Since(downtimeStart)
	m.say("hosted cluster %s serves on the target management plane; downtime %.1fs (fence to Available)", m.nn, downtime.Seconds())
	if err := backup.ReportEndpoint(ctx, m.out, m.o.Target, m.nn, m.srcEndpoint); err != nil {
		m.say("%v", err)
	}
	// From here the target is the cluster: the source is only removed.
	if err := m.removeSource(ctx); err != nil {
		return fmt.Errorf("hosted cluster %s moved (downtime %.1fs), but removing the fenced source failed: %w; remove it with `hypershift destroy cluster --name %s -n %s` on the source",
			m.nn, downtime.Seconds(), err, m.nn.Name, m.nn.Namespace)
	}
	fmt.Fprintf(m.out, "migrated hosted cluster %s in %.1fs; downtime %.1fs\n", m.nn, time.Since(m.start).Seconds(), downtime.Seconds())
	return nil
}

// say prints a step with the time since the migration started.
func (m *migration) say(format string, args ...any) {
	fmt.Fprintf(m.out, "[%6.1fs] %s\n", time.Since(m.start).Seconds(), fmt.Sprintf(format, args...))
}

// patchSource merge-patches the source cluster's annotations, only if it
// is still the cluster this run started with (the UID in the patch is a
// precondition).
func (m *migration) patchSource(ctx context.Context, annotations map[string]any) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"uid": m.srcUID, "annotations": annotations}})
	if err != nil {
		return err
	}
	hc := &hypershiftv1alpha1.HostedCluster{ObjectMeta: metav1.ObjectMeta{Namespace: m.nn.Namespace, Name: m.nn.Name}}
	return m.o.Source.Patch(ctx, hc, client.RawPatch(types.MergePatchType, patch))
}

func (m *migration) fence(ctx context.Context) error {
	hc := &hypershiftv1alpha1.HostedCluster{}
	if err := m.o.Source.Get(ctx, m.nn, hc); err != nil {
		return fmt.Errorf("read hosted cluster %s: %w", m.nn, err)
	}
	if hc.Annotations[hypershiftv1alpha1.FencedAnnotation] == "true" {
		m.say("hosted cluster %s was fenced already; it stays fenced if the migration fails", m.nn)
		return nil
	}
	if err := m.patchSource(ctx, map[string]any{hypershiftv1alpha1.FencedAnnotation: "true"}); err != nil {
		return fmt.Errorf("fence hosted cluster %s: %w", m.nn, err)
	}
	m.fenced = true
	m.say("fence requested (annotation %s)", hypershiftv1alpha1.FencedAnnotation)
	return nil
}

// waitFenced waits for Fenced=True: every API server is gone.
func (m *migration) waitFenced(ctx context.Context) error {
	hc := &hypershiftv1alpha1.HostedCluster{}
	var cond *metav1.Condition
	err := wait.PollUntilContextTimeout(ctx, clusterclient.PollInterval, m.o.Timeout, true, func(ctx context.Context) (bool, error) {
		if err := m.o.Source.Get(ctx, m.nn, hc); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		cond = meta.FindStatusCondition(hc.Status.Conditions, hypershiftv1alpha1.Fenced.String())
		if cond != nil && cond.Reason == hypershiftv1alpha1.FenceRefusedReason.String() {
			return false, fmt.Errorf("the operator refused the fence: %s", cond.Message)
		}
		return cond != nil && cond.Status == metav1.ConditionTrue, nil
	})
	if wait.Interrupted(err) {
		msg := "no Fenced condition"
		if cond != nil {
			msg = cond.Reason + ": " + cond.Message
		}
		return fmt.Errorf("hosted cluster %s not fenced after %s (%s)", m.nn, m.o.Timeout, msg)
	}
	return err
}

// finalBackup asks the source's operator for a backup of the fenced
// cluster and waits for it.
func (m *migration) finalBackup(ctx context.Context) (*hypershiftv1alpha1.BackupRecord, error) {
	hc := &hypershiftv1alpha1.HostedCluster{}
	if err := m.o.Source.Get(ctx, m.nn, hc); err != nil {
		return nil, fmt.Errorf("read hosted cluster %s: %w", m.nn, err)
	}
	req, raw, err := backup.NewClusterRequest(ctx, m.o.Source, hc, m.o.Via, m.o.Key)
	if err != nil {
		return nil, err
	}
	if err := m.patchSource(ctx, map[string]any{hypershiftv1alpha1.BackupRequestAnnotation: raw}); err != nil {
		return nil, fmt.Errorf("request the final backup of %s: %w", m.nn, err)
	}
	return backup.WaitCluster(ctx, m.o.Source, m.nn, req.ID, m.o.Timeout)
}

// restore recreates the cluster on the target from the final archive,
// through `restore cluster`'s path (the archive is read and checked first).
func (m *migration) restore(ctx context.Context) error {
	r := backup.RestoreOptions{
		From: m.o.Via, Key: m.o.Key, Name: m.nn.Name, Namespace: m.nn.Namespace, Timeout: m.o.Timeout,
		Adjust: func(hc *hypershiftv1alpha1.HostedCluster) {
			for _, c := range m.o.AdaptSpec(hc) {
				m.say("on the target: %s", c)
			}
		},
	}
	err := r.Validate()
	var a *backup.ClusterArchive
	if err == nil {
		a, err = backup.ReadCluster(ctx, r)
	}
	if err == nil {
		err = backup.RestoreCluster(ctx, m.out, m.o.ErrOut, m.o.Target, a, r)
	}
	if err != nil {
		return fmt.Errorf("restore on the target: %w", err)
	}
	return nil
}

// removeSource deletes the source cluster (only the one this run started
// with) and waits until it is gone. Its node pools go first and see their
// cluster deleting, so nothing is drained through the moved API.
func (m *migration) removeSource(ctx context.Context) error {
	hc := &hypershiftv1alpha1.HostedCluster{ObjectMeta: metav1.ObjectMeta{Namespace: m.nn.Namespace, Name: m.nn.Name}}
	uid := m.srcUID
	if err := m.o.Source.Delete(ctx, hc, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
		return err
	}
	if err := clusterclient.WaitGone(ctx, m.o.Source, m.nn, m.srcUID, m.o.Timeout); err != nil {
		return err
	}
	m.say("removed hosted cluster %s from the source management plane", m.nn)
	return nil
}

// asleep: the cluster hibernates, is on its way to, or is asked to.
func asleep(hc *hypershiftv1alpha1.HostedCluster) bool {
	c := meta.FindStatusCondition(hc.Status.Conditions, hypershiftv1alpha1.Hibernated.String())
	return (hc.Spec.Hibernation != nil && hc.Spec.Hibernation.Enabled) ||
		(c != nil && (c.Status == metav1.ConditionTrue || c.Reason == hypershiftv1alpha1.HibernatingReason.String()))
}

// rollback undoes what the run did when the target does not serve: the
// copy restored on the target (the cluster did not exist there before, so
// one carrying this archive's restore mark is this run's), the target's
// namespace if this run made it, then the fence. It runs even when the
// command was interrupted.
func (m *migration) rollback(ctx context.Context, cause error) error {
	if ctx.Err() != nil {
		cause = fmt.Errorf("interrupted: %w", cause)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.o.Timeout)
	defer cancel()
	m.say("failed: %v; rolling back", cause)
	var undo []string
	var errs []error
	dst := &hypershiftv1alpha1.HostedCluster{}
	err := m.o.Target.Get(ctx, m.nn, dst)
	switch {
	case err == nil && restoredFrom(dst, m.o.Via):
		uid := dst.UID
		if err := m.o.Target.Delete(ctx, dst, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("delete the restored copy on the target: %w", err))
		} else if err := clusterclient.WaitGone(ctx, m.o.Target, m.nn, uid, m.o.Timeout); err != nil {
			errs = append(errs, fmt.Errorf("the restored copy on the target: %w", err))
		} else {
			undo = append(undo, "deleted the restored copy on the target")
		}
	case err != nil && !apierrors.IsNotFound(err):
		errs = append(errs, fmt.Errorf("read hosted cluster %s on the target: %w", m.nn, err))
	}
	if m.dstNamespaceCreated && len(errs) == 0 {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: m.nn.Namespace}}
		if err := m.o.Target.Delete(ctx, ns); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("delete namespace %s on the target: %w", m.nn.Namespace, err))
		}
	}
	// The fence is lifted only once the target's copy is gone: on one
	// host both would want the same API port.
	if m.fenced && len(errs) == 0 {
		if err := m.patchSource(ctx, map[string]any{hypershiftv1alpha1.FencedAnnotation: nil}); err != nil {
			errs = append(errs, fmt.Errorf("lift the fence of %s: %w", m.nn, err))
		} else {
			undo = append(undo, "lifted the fence on the source")
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("migration of %s failed: %w; rollback incomplete: %w (the source stays fenced until the annotation %s is removed)",
			m.nn, cause, errors.Join(errs...), hypershiftv1alpha1.FencedAnnotation)
	}
	if len(undo) == 0 {
		undo = append(undo, "nothing had changed")
	}
	return fmt.Errorf("migration of %s failed: %w; rolled back: %s", m.nn, cause, strings.Join(undo, ", "))
}

// restoredFrom: the cluster was restored from the archive at url.
func restoredFrom(hc *hypershiftv1alpha1.HostedCluster, url string) bool {
	req, err := hypershiftv1alpha1.RestoreRequestOf(hc.Annotations)
	return err == nil && req != nil && req.URL == url
}

// backupUnderWay: the cluster's backup request has no answer in its status
// yet (the operator runs one request at a time).
func backupUnderWay(hc *hypershiftv1alpha1.HostedCluster) bool {
	raw, ok := hc.Annotations[hypershiftv1alpha1.BackupRequestAnnotation]
	if !ok {
		return false
	}
	req := hypershiftv1alpha1.BackupRequest{}
	if err := json.Unmarshal([]byte(raw), &req); err != nil {
		return false // an invalid request is answered with a condition, not run
	}
	st := hc.Status.Backup
	return st == nil || (st.FailedRequestID != req.ID && (st.LastBackup == nil || st.LastBackup.RequestID != req.ID))
}
