package backup

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"hypershift.dev/internal/backup/blobtest"
)

// blobStores are the gs and azblob stores the tests write to: real
// protocol servers on loopback (fake-gcs-server in process, Azurite),
// each with a bucket "backups", and the credentials each takes.
type blobStore struct {
	url   func(bucket, key string) string
	creds *Credentials
}

func blobStores(t *testing.T) map[string]blobStore {
	t.Helper()
	gcs := blobtest.StartGCS(t, "backups")
	az := blobtest.StartAzurite(t, "backups")
	return map[string]blobStore{
		"gs":     {url: gcs.URL, creds: nil}, // anonymous: the emulator takes any caller
		"azblob": {url: az.URL, creds: &Credentials{AzureAccount: blobtest.AzureAccount, AzureKey: blobtest.AzureKey}},
	}
}

// TestBlobSchemesRoundTrip writes, reads and prunes archives on gs:// and
// azblob:// buckets, and a wrong key, a missing bucket and a missing
// object give errors that say which.
func TestBlobSchemesRoundTrip(t *testing.T) {
	stores := blobStores(t)
	key := testKey(t, 3)
	a := &Archive{Manifest: Manifest{Cluster: "clusters/a"}, Files: map[string][]byte{EtcdSnapshotEntry: bytes.Repeat([]byte("etcd"), 1<<18)}}
	sealed, err := a.Encode(key)
	if err != nil {
		t.Fatal(err)
	}
	for scheme, st := range stores {
		t.Run(scheme, func(t *testing.T) {
			ctx := t.Context()
			u := st.url("backups", "clusters/a.bak")
			if _, err := Read(ctx, u, st.creds); !errors.Is(err, ErrNotFound) || strings.Contains(err.Error(), "does not exist") {
				t.Fatalf("read before write: got %v, want ErrNotFound of the object", err)
			}
			if err := Write(ctx, u, sealed, st.creds); err != nil {
				t.Fatal(err)
			}
			got, err := Fetch(ctx, u, key, st.creds)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Files[EtcdSnapshotEntry], a.Files[EtcdSnapshotEntry]) {
				t.Fatal("the archive read back differs from the one written")
			}
			if _, err := Fetch(ctx, u, testKey(t, 4), st.creds); !errors.Is(err, ErrWrongKey) {
				t.Fatalf("wrong key: got %v, want ErrWrongKey", err)
			}
			missing := st.url("no-such-bucket", "a.bak")
			err = Write(ctx, missing, sealed, st.creds)
			if err == nil || !strings.Contains(err.Error(), "bucket does not exist") {
				t.Fatalf("write to a missing bucket: got %v, want it to say the bucket does not exist", err)
			}
			if _, err := Read(ctx, missing, st.creds); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "no-such-bucket does not exist") {
				t.Fatalf("read from a missing bucket: got %v, want it to name the missing bucket", err)
			}
			if _, err := Prune(ctx, st.url("no-such-bucket", "nightly"), "uid-a", 2, st.creds); err == nil || !strings.Contains(err.Error(), "bucket does not exist") {
				t.Fatalf("prune of a missing bucket: got %v, want it to say the bucket does not exist", err)
			}
		})
	}
}

// TestBlobCredentialErrors: credentials that do not fit the bucket give
// errors naming the keys to set, before or at the first request.
func TestBlobCredentialErrors(t *testing.T) {
	stores := blobStores(t)
	ctx := t.Context()
	gsURL := stores["gs"].url("backups", "a.bak")
	azURL := stores["azblob"].url("backups", "a.bak")
	awsOnly := &Credentials{AccessKeyID: "id", SecretAccessKey: "secret"}
	for _, tc := range []struct {
		name, url string
		creds     *Credentials
		want      string
	}{
		{"aws keys for gs", gsURL, awsOnly, "AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, which are not for gs:// URLs: gs:// expects GOOGLE_APPLICATION_CREDENTIALS_JSON"},
		{"aws keys for azblob", azURL, awsOnly, "azblob:// expects AZURE_STORAGE_ACCOUNT with AZURE_STORAGE_KEY (shared key) or AZURE_STORAGE_SAS_TOKEN"},
		{"gcs key for s3", "s3://backups/a.bak?region=us-east-1", &Credentials{GCSServiceAccountJSON: "{}"}, "s3:// expects AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"},
		{"no credentials for azblob", azURL, nil, "azblob:// needs credentials: AZURE_STORAGE_ACCOUNT with AZURE_STORAGE_KEY"},
		{"not a key file", gsURL, &Credentials{GCSServiceAccountJSON: "not json"}, "GOOGLE_APPLICATION_CREDENTIALS_JSON must hold a service-account key"},
		{"not a service account", gsURL, &Credentials{GCSServiceAccountJSON: `{"type":"external_account","audience":"x","subject_token_type":"y","token_url":"http://127.0.0.1:1","credential_source":{"executable":{"command":"/bin/true"}}}`}, "GOOGLE_APPLICATION_CREDENTIALS_JSON must hold a service-account key"},
		{"wrong azure key", azURL, &Credentials{AzureAccount: blobtest.AzureAccount, AzureKey: "d3Jvbmcga2V5"}, "the bucket refused the credentials (azblob:// takes AZURE_STORAGE_ACCOUNT with AZURE_STORAGE_KEY"},
		// Azurite has one account: another is a bucket that does not exist.
		{"azure account that does not exist", azURL, &Credentials{AzureAccount: "otheraccount", AzureKey: blobtest.AzureKey}, "the bucket does not exist"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Write(ctx, tc.url, []byte("archive"), tc.creds)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
	for _, bad := range []map[string]string{
		{AzureKeyKey: "k"},
		{AzureAccountKey: "a"},
		{SessionTokenKey: "t"},
		{AccessKeyIDKey: "id"},
	} {
		if _, err := CredentialsFrom(func(k string) string { return bad[k] }); err == nil {
			t.Errorf("CredentialsFrom(%v) accepted", bad)
		}
	}
}

// TestCredentialsFromEnv reads only the URL scheme's keys, so a user's AWS
// variables never land in the Secret of a gs:// or azblob:// backup.
func TestCredentialsFromEnv(t *testing.T) {
	env := map[string]string{
		AccessKeyIDKey: "id", SecretAccessKeyKey: "secret",
		AzureAccountKey: "acct", AzureSASTokenKey: "sv=1&sig=x",
	}
	getenv := func(k string) string { return env[k] }
	for scheme, want := range map[string][]string{
		"s3":     {AccessKeyIDKey, SecretAccessKeyKey},
		"azblob": {AzureAccountKey, AzureSASTokenKey},
		"gs":     nil,
		"file":   nil,
	} {
		c, err := CredentialsFromEnv(scheme, getenv)
		if err != nil {
			t.Fatalf("%s: %v", scheme, err)
		}
		var got []string
		for k := range c.Data() {
			got = append(got, k)
		}
		sort.Strings(got)
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%s: keys %v, want %v", scheme, got, want)
		}
	}
	keyFile := t.TempDir() + "/sa.json"
	if err := os.WriteFile(keyFile, []byte(`{"type":"service_account"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := CredentialsFromEnv("gs", func(k string) string { return map[string]string{"GOOGLE_APPLICATION_CREDENTIALS": keyFile}[k] })
	if err != nil || c == nil || c.GCSServiceAccountJSON != `{"type":"service_account"}` {
		t.Fatalf("GOOGLE_APPLICATION_CREDENTIALS file: got %+v, %v", c, err)
	}
}

// TestAzureSASToken: a SAS token instead of the account key, the account
// named by AZURE_STORAGE_ACCOUNT or the URL's storage_account option; a
// read-only token cannot write and the error says the credentials were
// refused.
func TestAzureSASToken(t *testing.T) {
	az := blobtest.StartAzurite(t, "backups")
	ctx := t.Context()
	full, err := az.SASToken("rwdlc")
	if err != nil {
		t.Fatal(err)
	}
	readOnly, err := az.SASToken("rl")
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		url   string
		creds *Credentials
	}{
		"AZURE_STORAGE_ACCOUNT":  {az.URL("backups", "sas/a.bak"), &Credentials{AzureAccount: blobtest.AzureAccount, AzureSASToken: full}},
		"storage_account option": {az.URL("backups", "sas/b.bak") + "&storage_account=" + blobtest.AzureAccount, &Credentials{AzureSASToken: full}},
	} {
		t.Run(name, func(t *testing.T) {
			if err := Write(ctx, tc.url, []byte("archive"), tc.creds); err != nil {
				t.Fatal(err)
			}
			if got, err := Read(ctx, tc.url, tc.creds); err != nil || string(got) != "archive" {
				t.Fatalf("read back %q, %v", got, err)
			}
		})
	}
	prefix := az.URL("backups", "nightly")
	creds := &Credentials{AzureAccount: blobtest.AzureAccount, AzureSASToken: full}
	for i := range 3 {
		u, err := ScheduledURL(prefix, "uid-a", time.Date(2026, 11, 24, i, 0, 0, 0, time.UTC))
		if err != nil {
			t.Fatal(err)
		}
		if err := Write(ctx, u, []byte("archive"), creds); err != nil {
			t.Fatal(err)
		}
	}
	if deleted, err := Prune(ctx, prefix, "uid-a", 1, creds); err != nil || len(deleted) != 2 {
		t.Fatalf("prune with a SAS token deleted %v (%v), want the 2 oldest", deleted, err)
	}
	err = Write(ctx, az.URL("backups", "sas/c.bak"), []byte("archive"), &Credentials{AzureAccount: blobtest.AzureAccount, AzureSASToken: readOnly})
	if err == nil || !strings.Contains(err.Error(), "the bucket refused the credentials") {
		t.Fatalf("write with a read-only SAS token: %v, want the credentials refused", err)
	}
}

// TestS3NeverUsesTheProcessIdentity: an s3:// bucket is opened with the
// credentials given or anonymously, never with the AWS identity of the
// process (the operator's environment, profile or role), and the URL
// options that would reach for it are refused.
func TestS3NeverUsesTheProcessIdentity(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDPROCESS")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "process-secret")
	backend := s3mem.New()
	if err := backend.CreateBucket("backups"); err != nil {
		t.Fatal(err)
	}
	s3 := gofakes3.New(backend).Server()
	var mu sync.Mutex
	var auth []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
		s3.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	archive := "s3://backups/a.bak?region=us-east-1&use_path_style=true&disable_https=true&endpoint=" + url.QueryEscape(srv.URL)
	for _, tc := range []struct {
		name   string
		creds  *Credentials
		wantID string // in the Authorization header; "" for none
	}{
		{"no credentials: anonymous", nil, ""},
		{"the request's credentials", &Credentials{AccessKeyID: "AKIDREQUEST", SecretAccessKey: "s"}, "AKIDREQUEST"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			auth = nil
			mu.Unlock()
			if err := Write(t.Context(), archive, []byte("archive"), tc.creds); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(auth) == 0 {
				t.Fatal("no request reached the server")
			}
			for _, a := range auth {
				if strings.Contains(a, "AKIDPROCESS") || (tc.wantID == "") != (a == "") || !strings.Contains(a, tc.wantID) {
					t.Fatalf("Authorization %q, want %q", a, tc.wantID)
				}
			}
		})
	}
	for _, option := range []string{"profile=default", "role=arn:aws:iam::1:role/r", "anonymous=false", "awssdk=v1"} {
		raw := "s3://backups/a.bak?region=us-east-1&" + option
		if _, err := ParseURL(raw); err == nil || !strings.Contains(err.Error(), "is not accepted for s3://") {
			t.Errorf("ParseURL(%s): %v, want the option refused", raw, err)
		}
	}
}
