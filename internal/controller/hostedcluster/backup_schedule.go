package hostedcluster

import (
	"context"
	"fmt"
	"time"

	"github.com/robfig/cron/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/backup"
	"hypershift.dev/internal/controller/conditions"
	"hypershift.dev/internal/controller/lifecycle"
)

// defaultKeep is spec.backup.keep when unset (objects stored before the
// default existed).
const defaultKeep = 7

// parseBackupSchedule reads spec.backup.schedule in its time zone. The API
// checks the form; this catches what CEL cannot (a field out of range, an
// unknown zone).
func parseBackupSchedule(spec *hypershiftv1alpha1.BackupSpec) (cron.Schedule, error) {
	loc := time.UTC
	if spec.TimeZone != "" {
		l, err := time.LoadLocation(spec.TimeZone)
		if err != nil {
			return nil, fmt.Errorf("spec.backup.timeZone %q: %w", spec.TimeZone, err)
		}
		loc = l
	}
	sched, err := cron.ParseStandard(spec.Schedule)
	if err != nil {
		return nil, fmt.Errorf("spec.backup.schedule %q: %w", spec.Schedule, err)
	}
	if spec, ok := sched.(*cron.SpecSchedule); ok {
		spec.Location = loc
	}
	return sched, nil
}

// dueTime is the latest schedule time in (last, now] — zero when none —
// and the first one after now. Missed times (an operator that was down)
// give one backup, not one each.
func dueTime(sched cron.Schedule, last, now time.Time) (due, next time.Time) {
	t := sched.Next(last)
	if t.IsZero() || t.After(now) {
		return time.Time{}, t
	}
	for {
		n := sched.Next(t)
		if n.IsZero() || n.After(now) {
			return t, n
		}
		t = n
	}
}

// now is the reconciler's clock.
func (r *Reconciler) now() time.Time {
	if r.Clock != nil {
		return r.Clock()
	}
	return time.Now()
}

// scheduledBackup is the scheduled backup that is due, if any; it records
// the next schedule time and requeues for it.
func (r *Reconciler) scheduledBackup(s *scope) (*backupWanted, error) {
	hc := s.hc
	spec := hc.Spec.Backup
	if spec == nil {
		if hc.Status.Backup != nil {
			hc.Status.Backup.NextScheduleTime = nil
		}
		return nil, nil //nolint:nilnil // no schedule
	}
	if hc.Status.Backup == nil {
		hc.Status.Backup = &hypershiftv1alpha1.BackupStatus{}
	}
	st := hc.Status.Backup
	sched, err := parseBackupSchedule(spec)
	if err == nil {
		var sample string
		if sample, err = backup.ScheduledURL(spec.URL, string(hc.UID), time.Time{}); err == nil {
			err = backup.CheckScheme(sample)
		}
		if err == nil {
			err = backup.CheckArchiveURL(sample, r.BackupFileRoot, !r.capabilities().HostFiles)
		}
		if err != nil {
			err = fmt.Errorf("spec.backup.url: %w", err)
		}
	}
	if err != nil {
		conditions.Set(&hc.Status.Conditions, hc.Generation, hypershiftv1alpha1.BackupSucceeded, false,
			hypershiftv1alpha1.InvalidBackupScheduleReason, err.Error())
		st.NextScheduleTime = nil
		return nil, nil //nolint:nilnil,nilerr // reported; a spec change brings the next reconcile
	}
	last := hc.CreationTimestamp.Time
	if st.LastScheduleTime != nil {
		last = st.LastScheduleTime.Time
	}
	now := r.now()
	due, next := dueTime(sched, last, now)
	if !next.IsZero() {
		st.NextScheduleTime = &metav1.Time{Time: next}
		s.requeue = lifecycle.Soonest(s.requeue, ctrl.Result{RequeueAfter: max(next.Sub(now), time.Second)})
	}
	if due.IsZero() {
		return nil, nil //nolint:nilnil // not due
	}
	url, err := backup.ScheduledURL(spec.URL, string(hc.UID), due)
	if err != nil {
		return nil, err
	}
	keep := int(spec.Keep)
	if keep == 0 {
		keep = defaultKeep
	}
	w := &backupWanted{
		id: "scheduled-" + due.UTC().Format("20060102T150405Z"), url: url, keySecret: spec.EncryptionKeySecret.Name,
		scheduled: due, keep: keep, prefix: spec.URL,
	}
	if spec.CredentialsSecret != nil {
		w.credsSecret = spec.CredentialsSecret.Name
	}
	return w, nil
}

// scheduleSecrets reads spec.backup's key Secret and optional credentials
// Secret.
func scheduleSecrets(ctx context.Context, c client.Client, namespace, keyName, credsName string) ([]byte, *backup.Credentials, error) {
	read := func(name, field string) (*corev1.Secret, error) {
		secret := &corev1.Secret{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, secret); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, fail(hypershiftv1alpha1.EncryptionKeyMissingReason, "%s: Secret %s/%s does not exist", field, namespace, name)
			}
			return nil, fmt.Errorf("%s: Secret %s/%s: %w", field, namespace, name, err)
		}
		return secret, nil
	}
	keySecret, err := read(keyName, "spec.backup.encryptionKeySecret")
	if err != nil {
		return nil, nil, err
	}
	key, _, err := backup.FromSecretData(map[string][]byte{backup.KeySecretKey: keySecret.Data[backup.KeySecretKey]})
	if err != nil {
		return nil, nil, fail(hypershiftv1alpha1.EncryptionKeyMissingReason, "spec.backup.encryptionKeySecret %s/%s: %w", namespace, keyName, err)
	}
	if credsName == "" {
		return key, nil, nil
	}
	credsSecret, err := read(credsName, "spec.backup.credentialsSecret")
	if err != nil {
		return nil, nil, fail(hypershiftv1alpha1.BucketUnavailableReason, "%w", err)
	}
	creds, err := backup.CredentialsFrom(func(k string) string { return string(credsSecret.Data[k]) })
	if err != nil {
		return nil, nil, fail(hypershiftv1alpha1.BucketUnavailableReason, "spec.backup.credentialsSecret %s/%s: %w", namespace, credsName, err)
	}
	return key, creds, nil
}
