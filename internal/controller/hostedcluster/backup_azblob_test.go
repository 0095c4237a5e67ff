package hostedcluster_test

import (
	"context"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/backup/blobtest"
	"hypershift.dev/internal/operator"
	"hypershift.dev/internal/operator/operatortest"
	"hypershift.dev/internal/testenv"
)

// TestScheduledBackupsToAzureBlob: spec.backup to an azblob:// container
// (Azurite) with the account's key in spec.backup.credentialsSecret only.
// Each schedule time writes one archive, retention keeps the newest two of
// this cluster's and leaves another blob alone, and a credentials Secret
// of another scheme is BackupSucceeded=False naming the keys expected.
func TestScheduledBackupsToAzureBlob(t *testing.T) {
	az := blobtest.StartAzurite(t, "backups")
	azc, err := az.Client()
	if err != nil {
		t.Fatal(err)
	}
	env := testenv.Start(t)
	clock := &fakeClock{now: time.Now()}
	operatortest.Start(t, env, env.DataDir+"/clusters", func(o *operator.Options) { o.Clock = clock.Now })
	c, ctx := env.Client, t.Context()
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "clusters"}},
		&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: "clusters", Name: "backup-key"},
			Data:       map[string][]byte{"key": []byte(strings.Repeat("k", 32))},
		},
		&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: "clusters", Name: "azure"},
			Data:       map[string][]byte{"AZURE_STORAGE_ACCOUNT": []byte(blobtest.AzureAccount), "AZURE_STORAGE_KEY": []byte(blobtest.AzureKey)},
		},
		&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: "clusters", Name: "aws"},
			Data:       map[string][]byte{"AWS_ACCESS_KEY_ID": []byte("id"), "AWS_SECRET_ACCESS_KEY": []byte("secret")},
		},
	} {
		if err := c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := azc.UploadBuffer(ctx, "backups", "nightly/notes.bak", []byte("someone else's"), nil); err != nil {
		t.Fatal(err)
	}
	hc := &hypershiftv1alpha1.HostedCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: "clusters", Name: "azsched"},
		Spec: hypershiftv1alpha1.HostedClusterSpec{Backup: &hypershiftv1alpha1.BackupSpec{
			Schedule: "*/5 * * * *", URL: az.URL("backups", "nightly"), Keep: 2,
			EncryptionKeySecret: hypershiftv1alpha1.SecretReference{Name: "backup-key"},
			CredentialsSecret:   &hypershiftv1alpha1.SecretReference{Name: "azure"},
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
	tick := func(i int) *metav1.Condition {
		t.Helper()
		scheduleTick(t, c, clock, hc, i)
		return meta.FindStatusCondition(hc.Status.Conditions, hypershiftv1alpha1.BackupSucceeded.String())
	}

	var written []string
	for i := range 3 {
		if cond := tick(i); cond == nil || cond.Status != metav1.ConditionTrue {
			t.Fatalf("run %d: BackupSucceeded %+v", i, cond)
		}
		u, err := url.Parse(hc.Status.Backup.LastBackup.URL)
		if err != nil {
			t.Fatal(err)
		}
		written = append(written, strings.TrimPrefix(u.Path, "/"))
		if got, want := blobs(ctx, t, azc, "nightly/"+string(hc.UID)+"-"), written[max(0, i-1):]; strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("run %d: archives of this cluster %v, want %v (keep 2)", i, got, want)
		}
	}
	if got := blobs(ctx, t, azc, "nightly/notes"); len(got) != 1 {
		t.Errorf("a blob retention did not write is gone: %v", got)
	}

	// Credentials of another scheme: refused naming what azblob expects;
	// the schedule and the cluster go on.
	patch := client.MergeFrom(hc.DeepCopy())
	hc.Spec.Backup.CredentialsSecret.Name = "aws"
	if err := c.Patch(ctx, hc, patch); err != nil {
		t.Fatal(err)
	}
	waitObserved(t, c, hc)
	cond := tick(3)
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != hypershiftv1alpha1.BucketUnavailableReason.String() ||
		!strings.Contains(cond.Message, "azblob:// expects AZURE_STORAGE_ACCOUNT with AZURE_STORAGE_KEY") {
		t.Errorf("AWS keys for an azblob URL: BackupSucceeded %+v, want False BucketUnavailable naming the Azure keys", cond)
	}
	if !meta.IsStatusConditionTrue(hc.Status.Conditions, hypershiftv1alpha1.Available.String()) {
		t.Error("the cluster is no longer Available after a failed backup")
	}
	if got := blobs(ctx, t, azc, "nightly/"+string(hc.UID)+"-"); len(got) != 2 {
		t.Errorf("a failed run changed the kept archives: %v", got)
	}
}

// blobs lists the container backups' blob names under prefix, sorted.
func blobs(ctx context.Context, t *testing.T, azc *azblob.Client, prefix string) []string {
	t.Helper()
	var names []string
	pager := azc.NewListBlobsFlatPager("backups", &azblob.ListBlobsFlatOptions{Prefix: &prefix})
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range page.Segment.BlobItems {
			names = append(names, *b.Name)
		}
	}
	sort.Strings(names)
	return names
}
