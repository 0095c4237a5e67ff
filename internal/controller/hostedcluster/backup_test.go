package hostedcluster_test

import (
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/operator"
	"hypershift.dev/internal/operator/operatortest"
	"hypershift.dev/internal/testenv"
)

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// scheduleTick moves the clock past hc's next 5-minute schedule time and
// waits until hc (read into it) reports the run for it; the i-th touch of
// an annotation makes the reconcile that sees the new time (the real
// requeue would come after the real minutes).
func scheduleTick(t *testing.T, c client.Client, clock *fakeClock, hc *hypershiftv1alpha1.HostedCluster, i int) {
	t.Helper()
	clock.Add(5 * time.Minute)
	want := clock.Now().Truncate(5 * time.Minute)
	patch := client.MergeFrom(hc.DeepCopy())
	metav1.SetMetaDataAnnotation(&hc.ObjectMeta, "test/tick", strings.Repeat("x", i+1))
	if err := c.Patch(t.Context(), hc, patch); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(hc)
	testenv.Eventually(t, time.Minute, "the backup scheduled at "+want.Format(time.TimeOnly), func() (bool, error) {
		err := c.Get(t.Context(), key, hc)
		st := hc.Status.Backup
		return st != nil && st.LastScheduleTime != nil && st.LastScheduleTime.Equal(&metav1.Time{Time: want}), err
	})
}

// waitObserved waits until the operator has reconciled hc's current
// generation. A reconcile that read the cluster before a spec patch may
// still be running; the test's clock moves only once one has seen the new
// spec, or that reconcile would rightly back up with the old one.
func waitObserved(t *testing.T, c client.Client, hc *hypershiftv1alpha1.HostedCluster) {
	t.Helper()
	gen := hc.Generation
	testenv.Eventually(t, time.Minute, "the operator to observe generation "+strconv.FormatInt(gen, 10), func() (bool, error) {
		err := c.Get(t.Context(), client.ObjectKeyFromObject(hc), hc)
		return hc.Status.ObservedGeneration >= gen, err
	})
}

// TestScheduledBackups runs a real control plane with spec.backup on a
// 5-minute schedule, the operator's clock moved by the test: each schedule
// time gives one archive, retention keeps the newest `keep` of this
// cluster's archives and leaves other files alone, and a bucket that fails
// is BackupSucceeded=False with its reason while the schedule goes on.
func TestScheduledBackups(t *testing.T) {
	env := testenv.Start(t)
	root := filepath.Join(env.DataDir, "clusters")
	clock := &fakeClock{now: time.Now()}
	dir := t.TempDir()
	operatortest.Start(t, env, root, func(o *operator.Options) { o.Clock, o.BackupFileRoot = clock.Now, dir })
	c, ctx := env.Client, t.Context()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "clusters"}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "clusters", Name: "backup-key"},
		Data:       map[string][]byte{"key": []byte(strings.Repeat("k", 32))},
	}); err != nil {
		t.Fatal(err)
	}
	foreign := filepath.Join(dir, "notes.bak")
	if err := os.WriteFile(foreign, []byte("someone else's"), 0o600); err != nil {
		t.Fatal(err)
	}
	hc := &hypershiftv1alpha1.HostedCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: "clusters", Name: "sched"},
		Spec: hypershiftv1alpha1.HostedClusterSpec{Backup: &hypershiftv1alpha1.BackupSpec{
			Schedule: "*/5 * * * *", URL: "file://" + dir, Keep: 2,
			EncryptionKeySecret: hypershiftv1alpha1.SecretReference{Name: "backup-key"},
		}},
	}
	if err := c.Create(ctx, hc); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(hc)
	testenv.Eventually(t, 3*time.Minute, "Available", func() (bool, error) {
		err := c.Get(ctx, key, hc)
		return meta.IsStatusConditionTrue(hc.Status.Conditions, hypershiftv1alpha1.Available.String()), err
	})

	ours := func() []string {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), string(hc.UID)+"-") && strings.HasSuffix(e.Name(), ".bak") {
				names = append(names, e.Name())
			}
		}
		sort.Strings(names)
		return names
	}

	var written []string
	for i := range 4 {
		scheduleTick(t, c, clock, hc, i)
		if !meta.IsStatusConditionTrue(hc.Status.Conditions, hypershiftv1alpha1.BackupSucceeded.String()) {
			t.Fatalf("run %d: BackupSucceeded %+v", i, meta.FindStatusCondition(hc.Status.Conditions, hypershiftv1alpha1.BackupSucceeded.String()))
		}
		written = append(written, filepath.Base(hc.Status.Backup.LastBackup.URL))
		if got, want := len(ours()), min(i+1, 2); got != want {
			t.Fatalf("run %d: %d archives of this cluster %v, want %d (keep 2)", i, got, ours(), want)
		}
		if next := hc.Status.Backup.NextScheduleTime; next == nil || !next.After(clock.Now()) {
			t.Errorf("run %d: nextScheduleTime %v, want after %s", i, next, clock.Now())
		}
	}
	if got := ours(); strings.Join(got, ",") != strings.Join(written[2:], ",") {
		t.Errorf("archives kept %v, want the newest two %v", got, written[2:])
	}
	if _, err := os.Stat(foreign); err != nil {
		t.Errorf("a file retention did not write is gone: %v", err)
	}

	// A bucket that fails is a condition with its reason; the schedule
	// and the reconcile go on.
	patch := client.MergeFrom(hc.DeepCopy())
	hc.Spec.Backup.URL = "file://" + filepath.Join(dir, "missing")
	if err := c.Patch(ctx, hc, patch); err != nil {
		t.Fatal(err)
	}
	waitObserved(t, c, hc)
	for i := 4; i < 6; i++ {
		scheduleTick(t, c, clock, hc, i)
		cond := meta.FindStatusCondition(hc.Status.Conditions, hypershiftv1alpha1.BackupSucceeded.String())
		if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != hypershiftv1alpha1.BucketUnavailableReason.String() || !strings.Contains(cond.Message, "missing") {
			t.Errorf("run %d to a missing directory: BackupSucceeded %+v, want False BucketUnavailable naming the bucket", i, cond)
		}
		if !meta.IsStatusConditionTrue(hc.Status.Conditions, hypershiftv1alpha1.Available.String()) {
			t.Errorf("run %d: the cluster is no longer Available after a failed backup", i)
		}
	}
	if got := ours(); len(got) != 2 {
		t.Errorf("failed runs changed the kept archives: %v", got)
	}
}
