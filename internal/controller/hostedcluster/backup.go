package hostedcluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/backup"
	"hypershift.dev/internal/components"
	"hypershift.dev/internal/controller/conditions"
	"hypershift.dev/internal/controller/lifecycle"
	"hypershift.dev/internal/pki"
	"hypershift.dev/internal/runtime"
	"hypershift.dev/internal/version"
)

// backupTimeout bounds one backup (snapshot, encryption, upload).
const backupTimeout = 10 * time.Minute

// backupPoll is how often a reconcile looks at a running backup.
const backupPoll = time.Second

// backupJobs are the backups running, one per cluster at most. A backup runs
// off the reconcile, so a slow bucket holds up no other cluster; the
// reconcile that finds it done writes the status.
type backupJobs struct {
	mu   sync.Mutex
	jobs map[types.UID]*backupJob
	// answered is the last job reported per cluster: a reconcile that
	// reads the cluster from a cache behind the status patch must not run
	// it again.
	answered map[types.UID]string
}

// forget drops what is kept of a deleted cluster (a running job finishes
// and is dropped with it).
func (j *backupJobs) forget(uid types.UID) {
	j.mu.Lock()
	defer j.mu.Unlock()
	delete(j.jobs, uid)
	delete(j.answered, uid)
}

func (r *Reconciler) backupJobs() *backupJobs {
	r.backupsOnce.Do(func() { r.backups = &backupJobs{jobs: map[types.UID]*backupJob{}, answered: map[types.UID]string{}} })
	return r.backups
}

// reasonedError is an error with the reason of the condition it sets
// (BackupSucceeded, Restored, ValidOIDCConfiguration).
type reasonedError struct {
	reason hypershiftv1alpha1.ConditionReason
	err    error
}

func (f *reasonedError) Error() string { return f.err.Error() }
func (f *reasonedError) Unwrap() error { return f.err }

func fail(reason hypershiftv1alpha1.ConditionReason, format string, args ...any) error {
	return &reasonedError{reason: reason, err: fmt.Errorf(format, args...)}
}

// parseBackupRequest reads the cluster's backup request; nil when none.
func parseBackupRequest(hc *hypershiftv1alpha1.HostedCluster) (*hypershiftv1alpha1.BackupRequest, error) {
	raw, ok := hc.Annotations[hypershiftv1alpha1.BackupRequestAnnotation]
	if !ok {
		return nil, nil //nolint:nilnil // no request
	}
	req := &hypershiftv1alpha1.BackupRequest{}
	if err := json.Unmarshal([]byte(raw), req); err != nil {
		return nil, fmt.Errorf("annotation %s: %w", hypershiftv1alpha1.BackupRequestAnnotation, err)
	}
	switch {
	case req.ID == "":
		return nil, fmt.Errorf("annotation %s: id is empty", hypershiftv1alpha1.BackupRequestAnnotation)
	case req.Secret == "":
		return req, fmt.Errorf("annotation %s: secret is empty (the Secret holding the archive key)", hypershiftv1alpha1.BackupRequestAnnotation)
	}
	if err := backup.CheckScheme(req.URL); err != nil {
		return req, err
	}
	return req, nil
}

// reconcileBackup runs the backups asked for — the annotation's request,
// once per request ID, and spec.backup's schedule — one at a time per
// cluster, off the reconcile, and reports them in status.backup and
// BackupSucceeded.
func (r *Reconciler) reconcileBackup(ctx context.Context, s *scope) (ctrl.Result, error) {
	hc := s.hc
	jobs := r.backupJobs()
	jobs.mu.Lock()
	job := jobs.jobs[hc.UID]
	jobs.mu.Unlock()
	if job != nil {
		select {
		case <-job.done:
		default:
			s.requeue = lifecycle.Soonest(s.requeue, ctrl.Result{RequeueAfter: backupPoll})
			return ctrl.Result{}, nil
		}
		jobs.mu.Lock()
		delete(jobs.jobs, hc.UID)
		jobs.answered[hc.UID] = job.id
		jobs.mu.Unlock()
		r.reportBackup(s, job)
	}
	want, err := r.wantedBackup(ctx, s)
	if err != nil || want == nil {
		return ctrl.Result{}, err
	}
	jobs.mu.Lock()
	answered := jobs.answered[hc.UID] == want.id
	jobs.mu.Unlock()
	if answered {
		return ctrl.Result{}, nil // the cache has not seen the report yet
	}
	in, err := r.backupInputs(ctx, s, want)
	if err != nil {
		r.reportBackup(s, &backupJob{id: want.id, scheduled: want.scheduled, err: err})
		return ctrl.Result{}, nil
	}
	job = &backupJob{id: want.id, scheduled: want.scheduled, done: make(chan struct{})}
	jobs.mu.Lock()
	jobs.jobs[hc.UID] = job
	jobs.mu.Unlock()
	log := ctrl.LoggerFrom(ctx).WithValues("request", want.id, "url", want.url)
	log.Info("backup started")
	go func() {
		defer close(job.done)
		// Off the reconcile, but bounded: a bucket that trickles fails
		// the backup rather than holding the cluster's next ones.
		jobCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), backup.FetchTimeout)
		defer cancel()
		job.record, job.err = in.run(jobCtx)
		if job.err != nil {
			log.Error(job.err, "backup failed")
		} else {
			log.Info("backup done", "bytes", job.record.SizeBytes, "duration", job.record.Duration.Duration)
		}
	}()
	s.requeue = lifecycle.Soonest(s.requeue, ctrl.Result{RequeueAfter: backupPoll})
	return ctrl.Result{}, nil
}

// backupWanted is one backup to run now.
type backupWanted struct {
	id, url string
	// secret holds the key (and credentials) of a request; keySecret and
	// credsSecret those of a schedule.
	secret, keySecret, credsSecret string
	// scheduled is the schedule time a scheduled backup is for; zero for a
	// request. keep and prefix drive its retention.
	scheduled time.Time
	keep      int
	prefix    string
}

// wantedBackup is the backup to start now, if any: an unanswered request
// first, then a schedule time that has come.
func (r *Reconciler) wantedBackup(_ context.Context, s *scope) (*backupWanted, error) {
	hc := s.hc
	st := hc.Status.Backup
	if st == nil {
		st = &hypershiftv1alpha1.BackupStatus{}
	}
	req, err := parseBackupRequest(hc)
	if err == nil && req != nil {
		err = backup.CheckArchiveURL(req.URL, r.BackupFileRoot, !r.capabilities().HostFiles)
	}
	answered := req != nil && (st.FailedRequestID == req.ID || (st.LastBackup != nil && st.LastBackup.RequestID == req.ID))
	switch {
	case answered:
	case err != nil:
		id := ""
		if req != nil {
			id = req.ID
		}
		r.reportBackup(s, &backupJob{id: id, err: &reasonedError{reason: hypershiftv1alpha1.InvalidBackupRequestReason, err: err}})
	case req != nil:
		return &backupWanted{id: req.ID, url: req.URL, secret: req.Secret}, nil
	}
	return r.scheduledBackup(s)
}

// backupJob is one backup and its outcome.
type backupJob struct {
	id        string
	scheduled time.Time
	done      chan struct{}
	// Set before done is closed.
	record *hypershiftv1alpha1.BackupRecord
	err    error
}

// reportBackup writes a backup's outcome into the status.
func (r *Reconciler) reportBackup(s *scope, job *backupJob) {
	hc := s.hc
	if hc.Status.Backup == nil {
		hc.Status.Backup = &hypershiftv1alpha1.BackupStatus{}
	}
	st := hc.Status.Backup
	if !job.scheduled.IsZero() {
		st.LastScheduleTime = &metav1.Time{Time: job.scheduled}
	}
	if job.record != nil {
		st.LastBackup = job.record
	}
	if job.err == nil {
		rec := job.record
		conditions.Set(&hc.Status.Conditions, hc.Generation, hypershiftv1alpha1.BackupSucceeded, true,
			hypershiftv1alpha1.BackupCompletedReason, fmt.Sprintf("Backup %s written to %s (%d bytes in %s)",
				rec.RequestID, rec.URL, rec.SizeBytes, rec.Duration.Round(time.Millisecond)))
		return
	}
	reason := hypershiftv1alpha1.SnapshotFailedReason
	if f := (*reasonedError)(nil); errors.As(job.err, &f) {
		reason = f.reason
	}
	st.FailedRequestID = job.id
	conditions.Set(&hc.Status.Conditions, hc.Generation, hypershiftv1alpha1.BackupSucceeded, false,
		reason, fmt.Sprintf("Backup %s failed: %v", job.id, job.err))
}

// backupInputs is what a backup reads from the management plane, gathered
// on the reconcile (from the cache) so the job itself only talks to etcd
// and the bucket.
type backupInputs struct {
	want      *backupWanted
	uid       string
	key       []byte
	creds     *backup.Credentials
	endpoints []string
	etcdTLS   backup.EtcdTLS
	archive   backup.Archive
}

func (r *Reconciler) backupInputs(ctx context.Context, s *scope, want *backupWanted) (*backupInputs, error) {
	hc := s.hc
	in := &backupInputs{want: want, uid: string(hc.UID), archive: backup.Archive{Files: map[string][]byte{}}}
	var err error
	if want.secret != "" {
		in.key, in.creds, err = requestSecret(ctx, r.Client, hc.Namespace, want.secret)
	} else {
		in.key, in.creds, err = scheduleSecrets(ctx, r.Client, hc.Namespace, want.keySecret, want.credsSecret)
	}
	if err != nil {
		return nil, err
	}
	if s.pki == nil || s.hcp == nil {
		return nil, fail(hypershiftv1alpha1.SnapshotFailedReason, "the control plane has no PKI or HostedControlPlane yet")
	}
	in.endpoints, err = r.etcdEndpoints(ctx, s)
	if err != nil {
		return nil, fail(hypershiftv1alpha1.SnapshotFailedReason, "etcd endpoints: %w", err)
	}
	in.etcdTLS = backup.EtcdTLS{CAPEM: s.pki.EtcdCA.CertPEM, CertPEM: s.pki.EtcdClient.CertPEM, KeyPEM: s.pki.EtcdClient.KeyPEM}
	if err := r.collectState(ctx, s, &in.archive); err != nil {
		return nil, fail(hypershiftv1alpha1.SnapshotFailedReason, "%w", err)
	}
	return in, nil
}

// run takes the snapshot, seals the archive and writes it.
func (in *backupInputs) run(ctx context.Context) (*hypershiftv1alpha1.BackupRecord, error) {
	ctx, cancel := context.WithTimeout(ctx, backupTimeout)
	defer cancel()
	start := time.Now()
	snap, etcdVersion, err := backup.Snapshot(ctx, in.endpoints, in.etcdTLS)
	if err != nil {
		return nil, fail(hypershiftv1alpha1.SnapshotFailedReason, "%w", err)
	}
	in.archive.Files[backup.EtcdSnapshotEntry] = snap
	in.archive.Manifest.Created = start.UTC()
	in.archive.Manifest.EtcdVersion = etcdVersion
	sealed, err := in.archive.Encode(in.key)
	if err != nil {
		return nil, fail(hypershiftv1alpha1.SnapshotFailedReason, "%w", err)
	}
	if err := backup.Write(ctx, in.want.url, sealed, in.creds); err != nil {
		return nil, fail(hypershiftv1alpha1.BucketUnavailableReason, "%w", err)
	}
	rec := &hypershiftv1alpha1.BackupRecord{
		URL: in.want.url, Time: metav1.NewTime(start), SizeBytes: int64(len(sealed)),
		Duration: metav1.Duration{Duration: time.Since(start)}, RequestID: in.want.id,
	}
	if in.want.scheduled.IsZero() {
		return rec, nil
	}
	// Retention after a success only: a failing bucket never costs an
	// archive that was good.
	if _, err := backup.Prune(ctx, in.want.prefix, in.uid, in.want.keep, in.creds); err != nil {
		return rec, fail(hypershiftv1alpha1.BucketUnavailableReason, "archive written, deleting archives beyond spec.backup.keep failed: %w", err)
	}
	return rec, nil
}

// requestSecret reads a request's archive key and optional S3 credentials.
func requestSecret(ctx context.Context, c client.Client, namespace, name string) ([]byte, *backup.Credentials, error) {
	secret := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil, fail(hypershiftv1alpha1.EncryptionKeyMissingReason, "Secret %s/%s with the archive key does not exist", namespace, name)
		}
		return nil, nil, fmt.Errorf("read Secret %s/%s: %w", namespace, name, err)
	}
	key, creds, err := backup.FromSecretData(secret.Data)
	if err != nil {
		return nil, nil, fail(hypershiftv1alpha1.EncryptionKeyMissingReason, "Secret %s/%s: %w", namespace, name, err)
	}
	return key, creds, nil
}

// etcdEndpoints are the client URLs of the cluster's etcd members, as the
// runtime allocated them.
func (r *Reconciler) etcdEndpoints(ctx context.Context, s *scope) ([]string, error) {
	if r.Runtime == nil {
		return nil, errors.New("the operator runs no runtime")
	}
	replicas := components.SingleReplica
	if s.hc.Spec.ControllerAvailabilityPolicy == hypershiftv1alpha1.HighlyAvailable {
		replicas = components.HighlyAvailable
	}
	ref := runtime.ControlPlaneRef{Namespace: s.ns, Name: s.hc.Name, Owner: string(s.hcp.UID)}
	names := make([]string, replicas.Etcd)
	for i := range names {
		names[i] = components.EtcdClientPort(i)
	}
	ports, err := r.Runtime.Ports(ctx, ref, components.PortRequest(names))
	if err != nil {
		return nil, err
	}
	return components.EtcdClientURLs(replicas, r.Runtime.Layout(ref), ports), nil
}

// collectState puts the PKI Secrets, the encryption key, the specs and the
// manifest's identity into a.
func (r *Reconciler) collectState(ctx context.Context, s *scope, a *backup.Archive) error {
	hc := s.hc
	secrets := &corev1.SecretList{}
	if err := r.Client.List(ctx, secrets, client.InNamespace(s.ns), client.MatchingLabels{ClusterUIDLabel: string(hc.UID)}); err != nil {
		return fmt.Errorf("list Secrets of %s: %w", s.ns, err)
	}
	for i := range secrets.Items {
		sec := &secrets.Items[i]
		switch {
		case sec.Name == pki.EncryptionKeyName:
			a.Files[backup.EncryptionKeyEntry] = sec.Data["key"]
		case sec.Type == corev1.SecretTypeTLS:
			data, err := json.Marshal(archivedSecret{Type: sec.Type, Data: sec.Data})
			if err != nil {
				return err
			}
			a.Files[backup.SecretPrefix+sec.Name+".json"] = data
		}
	}
	if a.Files[backup.EncryptionKeyEntry] == nil {
		return fmt.Errorf("the encryption key Secret %s/%s is missing", s.ns, pki.EncryptionKeyName)
	}
	spec, err := json.Marshal(archivedObject(hc))
	if err != nil {
		return err
	}
	a.Files[backup.HostedClusterEntry] = spec
	pools := &hypershiftv1alpha1.NodePoolList{}
	if err := r.Client.List(ctx, pools, client.InNamespace(hc.Namespace)); err != nil {
		return fmt.Errorf("list NodePools: %w", err)
	}
	var mine []hypershiftv1alpha1.NodePool
	for _, np := range pools.Items {
		if np.Spec.ClusterName == hc.Name {
			mine = append(mine, hypershiftv1alpha1.NodePool{
				TypeMeta:   metav1.TypeMeta{APIVersion: hypershiftv1alpha1.GroupVersion.String(), Kind: "NodePool"},
				ObjectMeta: metav1.ObjectMeta{Name: np.Name, Namespace: np.Namespace, Labels: np.Labels},
				Spec:       np.Spec,
			})
		}
	}
	if a.Files[backup.NodePoolsEntry], err = json.Marshal(mine); err != nil {
		return err
	}
	a.Manifest.Cluster = hc.Namespace + "/" + hc.Name
	a.Manifest.UID = string(hc.UID)
	a.Manifest.HypershiftVersion = version.Version
	a.Manifest.KubernetesVersion = s.hcp.Spec.KubernetesVersion
	if ep := s.hcp.Status.ControlPlaneEndpoint; ep.Port != 0 {
		a.Manifest.Endpoint = net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port)))
	}
	return nil
}

// archivedSecret is a PKI Secret as an archive holds it: type and data.
type archivedSecret struct {
	Type corev1.SecretType `json:"type"`
	Data map[string][]byte `json:"data"`
}

// archivedObject is the HostedCluster as an archive holds it: its spec,
// name, labels and annotations other than requests, and of its status the
// CA rotation.
func archivedObject(hc *hypershiftv1alpha1.HostedCluster) *hypershiftv1alpha1.HostedCluster {
	annotations := map[string]string{}
	for k, v := range hc.Annotations {
		if k != hypershiftv1alpha1.BackupRequestAnnotation && k != hypershiftv1alpha1.RestoreFromAnnotation &&
			k != "kubectl.kubernetes.io/last-applied-configuration" {
			annotations[k] = v
		}
	}
	obj := &hypershiftv1alpha1.HostedCluster{
		TypeMeta:   metav1.TypeMeta{APIVersion: hypershiftv1alpha1.GroupVersion.String(), Kind: "HostedCluster"},
		ObjectMeta: metav1.ObjectMeta{Name: hc.Name, Namespace: hc.Namespace, Labels: hc.Labels, Annotations: annotations},
		Spec:       hc.Spec,
	}
	// The CA rotation the archived PKI is in: a restore carries on from it
	// instead of starting spec.certificates.rotateCA anew
	// (restoredCARotation).
	if st := caRotationOf(hc); st != nil {
		obj.Status.Certificates = &hypershiftv1alpha1.CertificatesStatus{CARotation: st.DeepCopy()}
	}
	return obj
}
