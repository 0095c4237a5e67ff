package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/backup"
)

// newMigrateCommand is `hypershift migrate cluster`: it moves a hosted
// cluster to another management plane through a final backup, keeping its
// CAs, keys, endpoint and data, so existing kubeconfigs and
// service-account tokens keep working.
func newMigrateCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "migrate", Short: "Move hosted clusters to another management plane"}
	var o migrateOptions
	cluster := &cobra.Command{
		Use:   "cluster --name NAME --to-kubeconfig FILE --via URL --key-file FILE",
		Short: "Fence a hosted cluster, back it up, restore it on another management plane, then remove it here",
		Long: `Moves a hosted cluster to the management plane of --to-kubeconfig:
fences the cluster here (etcd keeps running, every writer stops), takes a
final backup through this plane's operator to --via, restores it through
the target's operator (same CAs, keys and API port), waits until it is
Available there, then deletes it here. The downtime (fence to Available on
the target) is measured and printed. If anything fails before the target
serves, the restored copy (if any) is deleted and the fence lifted.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd, g)
		},
	}
	f := cluster.Flags()
	f.StringVar(&o.name, "name", "", "name of the HostedCluster (required)")
	f.StringVarP(&o.namespace, "namespace", "n", defaultNamespace, "namespace of the HostedCluster (the same on the target)")
	f.StringVar(&o.toKubeconfig, "to-kubeconfig", "", "kubeconfig of the target management plane (required; e.g. its DATA_DIR/management.kubeconfig)")
	f.StringVar(&o.via, "via", "", "archive URL both operators reach: file:///dir/name.bak, s3://, gs:// or azblob://bucket/key?… (required)")
	f.StringVar(&o.keyFile, "key-file", "", "archive key: 32 raw bytes or 64 hex digits (`openssl rand -hex 32 > key`)")
	f.DurationVar(&o.timeout, "timeout", 10*time.Minute, "how long each step (fence, backup, restore, removal) may take")
	f.StringVar(&o.publishing, "api-server-publishing", "", "how the target publishes the API server, when it runs the other runtime: HostPort (a plane of `hypershift up`), NodePort or LoadBalancer (a cluster of `hypershift install`); default: as the source")
	f.StringVar(&o.apiServerAddress, "api-server-address", "", "with --api-server-publishing NodePort or LoadBalancer: the address clients use on the target")
	f.StringVar(&o.etcdStorageClass, "etcd-storage-class", "", "with --api-server-publishing NodePort or LoadBalancer: StorageClass of etcd's volumes on the target (default: its operator's)")
	f.StringVar(&o.etcdStorageSize, "etcd-storage-size", "", "with --api-server-publishing NodePort or LoadBalancer: size of each etcd member's volume on the target, e.g. 8Gi")
	cmd.AddCommand(cluster)
	return cmd
}

type migrateOptions struct {
	name, namespace, toKubeconfig, via, keyFile string
	timeout                                     time.Duration
	// The target's publishing and etcd storage, when it runs the other
	// runtime (migrate_spec.go).
	publishing, apiServerAddress, etcdStorageClass, etcdStorageSize string
}

// migration is one run: the two planes and what it did, so that a
// failure undoes exactly that.
type migration struct {
	o        *migrateOptions
	cmd      *cobra.Command
	src, dst client.Client
	key      []byte
	nn       types.NamespacedName
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

func (o *migrateOptions) run(cmd *cobra.Command, g *globalOptions) error {
	m, err := o.prepare(cmd, g)
	if err != nil {
		return err
	}
	// An interrupt ends the waiting, and the rollback undoes what was done.
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return m.run(ctx)
}

// prepare checks every input and both planes before anything changes.
func (o *migrateOptions) prepare(cmd *cobra.Command, g *globalOptions) (*migration, error) {
	switch {
	case o.name == "":
		return nil, errors.New("--name is required: the HostedCluster to move")
	case o.toKubeconfig == "":
		return nil, errors.New("--to-kubeconfig is required: the kubeconfig of the target management plane")
	case o.via == "":
		return nil, fmt.Errorf("--via is required: where the final archive goes, e.g. file:///var/backups/%s-migration.bak", o.name)
	}
	if err := backup.CheckScheme(o.via); err != nil {
		return nil, fmt.Errorf("--via: %w", err)
	}
	if err := o.checkPublishing(); err != nil {
		return nil, err
	}
	key, err := backup.LoadKey(o.keyFile)
	if err != nil {
		return nil, err
	}
	src, err := g.client()
	if err != nil {
		return nil, fmt.Errorf("source management plane: %w", err)
	}
	dst, err := (&globalOptions{kubeconfig: o.toKubeconfig, dataDir: g.dataDir}).client()
	if err != nil {
		return nil, fmt.Errorf("--to-kubeconfig: %w", err)
	}
	m := &migration{o: o, cmd: cmd, src: src, dst: dst, key: key, nn: types.NamespacedName{Namespace: o.namespace, Name: o.name}}
	ctx := cmd.Context()
	if err := m.checkPlanes(ctx); err != nil {
		return nil, err
	}
	hc, err := m.checkSource(ctx)
	if err != nil {
		return nil, err
	}
	if err := m.checkTarget(ctx, hc); err != nil {
		return nil, err
	}
	return m, nil
}

// checkPlanes makes sure both management planes answer and are two.
func (m *migration) checkPlanes(ctx context.Context) error {
	srcNS, dstNS := &corev1.Namespace{}, &corev1.Namespace{}
	if err := m.src.Get(ctx, client.ObjectKey{Name: metav1.NamespaceSystem}, srcNS); err != nil {
		return fmt.Errorf("source management plane does not answer: %w", err)
	}
	if err := m.dst.Get(ctx, client.ObjectKey{Name: metav1.NamespaceSystem}, dstNS); err != nil {
		return fmt.Errorf("--to-kubeconfig %s: the target management plane does not answer: %w", m.o.toKubeconfig, err)
	}
	if srcNS.UID == dstNS.UID {
		return fmt.Errorf("--to-kubeconfig %s is this management plane (namespace kube-system has the same UID): give the other plane's kubeconfig", m.o.toKubeconfig)
	}
	return nil
}

// checkSource reads the cluster to move and refuses one that cannot be.
func (m *migration) checkSource(ctx context.Context) (*hypershiftv1alpha1.HostedCluster, error) {
	hc := &hypershiftv1alpha1.HostedCluster{}
	if err := m.src.Get(ctx, m.nn, hc); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, clusterNotFound(m.nn)
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
	err := m.dst.Get(ctx, m.nn, &hypershiftv1alpha1.HostedCluster{})
	switch {
	case err == nil:
		return fmt.Errorf("hosted cluster %s exists on the target management plane (--to-kubeconfig %s): remove it there or migrate another cluster", m.nn, m.o.toKubeconfig)
	case meta.IsNoMatchError(err):
		return fmt.Errorf("--to-kubeconfig %s: the target has no hypershift API: run `hypershift up` or `hypershift install` there", m.o.toKubeconfig)
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("read hosted cluster %s on the target: %w", m.nn, err)
	}
	// A namespace still terminating (an earlier rollback removed it) takes
	// no new objects: wait until it is gone.
	ns := &corev1.Namespace{}
	err = wait.PollUntilContextTimeout(ctx, pollInterval, m.o.timeout, true, func(ctx context.Context) (bool, error) {
		err := m.dst.Get(ctx, client.ObjectKey{Name: m.nn.Namespace}, ns)
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
		return fmt.Errorf("namespace %s on the target is still being deleted after %s", m.nn.Namespace, m.o.timeout)
	}
	if err != nil {
		return err
	}
	probe := &hypershiftv1alpha1.HostedCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: hc.Namespace, Name: hc.Name, Labels: hc.Labels},
		Spec:       *hc.Spec.DeepCopy(),
	}
	m.o.adaptSpec(probe)
	if err := validateAll(ctx, m.dst, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: m.nn.Namespace}}, probe); err != nil {
		return fmt.Errorf("the target management plane refuses hosted cluster %s: %w", m.nn, err)
	}
	return nil
}

// run fences, backs up, restores, waits and removes; a failure before the
// target serves is rolled back.
func (m *migration) run(ctx context.Context) error {
	m.start = time.Now()
	m.say("migrating hosted cluster %s (uid %s) to %s via %s", m.nn, m.srcUID, m.o.toKubeconfig, m.o.via)
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
	if err := waitAvailable(ctx, m.cmd, m.dst, m.nn, m.o.timeout); err != nil {
		return m.rollback(ctx, fmt.Errorf("on the target: %w", err))
	}
	downtime := time.Since(downtimeStart)
	m.say("hosted cluster %s serves on the target management plane; downtime %.1fs (fence to Available)", m.nn, downtime.Seconds())
	if err := (&restoreOptions{}).reportEndpoint(ctx, m.cmd, m.dst, m.nn, m.srcEndpoint); err != nil {
		m.say("%v", err)
	}
	// From here the target is the cluster: the source is only removed.
	if err := m.removeSource(ctx); err != nil {
		return fmt.Errorf("hosted cluster %s moved (downtime %.1fs), but removing the fenced source failed: %w; remove it with `hypershift destroy cluster --name %s -n %s` on the source",
			m.nn, downtime.Seconds(), err, m.nn.Name, m.nn.Namespace)
	}
	fmt.Fprintf(m.cmd.OutOrStdout(), "migrated hosted cluster %s in %.1fs; downtime %.1fs\n", m.nn, time.Since(m.start).Seconds(), downtime.Seconds())
	return nil
}

// say prints a step with the time since the migration started.
func (m *migration) say(format string, args ...any) {
	fmt.Fprintf(m.cmd.OutOrStdout(), "[%6.1fs] %s\n", time.Since(m.start).Seconds(), fmt.Sprintf(format, args...))
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
	return m.src.Patch(ctx, hc, client.RawPatch(types.MergePatchType, patch))
}

func (m *migration) fence(ctx context.Context) error {
	hc := &hypershiftv1alpha1.HostedCluster{}
	if err := m.src.Get(ctx, m.nn, hc); err != nil {
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
	err := wait.PollUntilContextTimeout(ctx, pollInterval, m.o.timeout, true, func(ctx context.Context) (bool, error) {
		if err := m.src.Get(ctx, m.nn, hc); err != nil {
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
		return fmt.Errorf("hosted cluster %s not fenced after %s (%s)", m.nn, m.o.timeout, msg)
	}
	return err
}

// finalBackup asks the source's operator for a backup of the fenced
// cluster and waits for it.
func (m *migration) finalBackup(ctx context.Context) (*hypershiftv1alpha1.BackupRecord, error) {
	hc := &hypershiftv1alpha1.HostedCluster{}
	if err := m.src.Get(ctx, m.nn, hc); err != nil {
		return nil, fmt.Errorf("read hosted cluster %s: %w", m.nn, err)
	}
	req, raw, err := newBackupRequest(ctx, m.src, hc, m.o.via, m.key)
	if err != nil {
		return nil, err
	}
	if err := m.patchSource(ctx, map[string]any{hypershiftv1alpha1.BackupRequestAnnotation: raw}); err != nil {
		return nil, fmt.Errorf("request the final backup of %s: %w", m.nn, err)
	}
	return waitBackup(ctx, m.src, m.nn, req.ID, m.o.timeout)
}

// restore recreates the cluster on the target from the final archive,
// through `restore cluster`'s path (the archive is read and checked first).
func (m *migration) restore(ctx context.Context) error {
	adjust := func(hc *hypershiftv1alpha1.HostedCluster) {
		for _, c := range m.o.adaptSpec(hc) {
			m.say("on the target: %s", c)
		}
	}
	r := &restoreOptions{from: m.o.via, keyFile: m.o.keyFile, name: m.nn.Name, namespace: m.nn.Namespace, timeout: m.o.timeout, adjust: adjust}
	cmd := &cobra.Command{}
	cmd.SetContext(ctx)
	cmd.SetOut(m.cmd.OutOrStdout())
	cmd.SetErr(m.cmd.ErrOrStderr())
	if err := r.run(cmd, &globalOptions{kubeconfig: m.o.toKubeconfig}); err != nil {
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
	if err := m.src.Delete(ctx, hc, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
		return err
	}
	if err := waitUIDGone(ctx, m.src, m.nn, m.srcUID, m.o.timeout); err != nil {
		return err
	}
	m.say("removed hosted cluster %s from the source management plane", m.nn)
	return nil
}

// waitUIDGone waits until no HostedCluster with that UID is at nn.
func waitUIDGone(ctx context.Context, c client.Client, nn types.NamespacedName, uid types.UID, timeout time.Duration) error {
	err := wait.PollUntilContextTimeout(ctx, pollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		hc := &hypershiftv1alpha1.HostedCluster{}
		err := c.Get(ctx, nn, hc)
		return apierrors.IsNotFound(err) || (err == nil && hc.UID != uid), nil
	})
	if err != nil {
		return fmt.Errorf("hosted cluster %s still there after %s: see `hypershift describe cluster %s -n %s`", nn, timeout, nn.Name, nn.Namespace)
	}
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
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.o.timeout)
	defer cancel()
	m.say("failed: %v; rolling back", cause)
	var undo []string
	var errs []error
	dst := &hypershiftv1alpha1.HostedCluster{}
	err := m.dst.Get(ctx, m.nn, dst)
	switch {
	case err == nil && restoredFrom(dst, m.o.via):
		uid := dst.UID
		if err := m.dst.Delete(ctx, dst, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("delete the restored copy on the target: %w", err))
		} else if err := waitUIDGone(ctx, m.dst, m.nn, uid, m.o.timeout); err != nil {
			errs = append(errs, fmt.Errorf("the restored copy on the target: %w", err))
		} else {
			undo = append(undo, "deleted the restored copy on the target")
		}
	case err != nil && !apierrors.IsNotFound(err):
		errs = append(errs, fmt.Errorf("read hosted cluster %s on the target: %w", m.nn, err))
	}
	if m.dstNamespaceCreated && len(errs) == 0 {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: m.nn.Namespace}}
		if err := m.dst.Delete(ctx, ns); client.IgnoreNotFound(err) != nil {
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
