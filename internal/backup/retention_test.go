package backup

import (
	"net/http/httptest"
	"net/url"
	"path"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// TestPrune keeps the newest archives of one cluster and never touches
// another cluster's archives or objects it did not name.
func TestPrune(t *testing.T) {
	backend := s3mem.New()
	if err := backend.CreateBucket("backups"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(backend).Server())
	t.Cleanup(srv.Close)
	stores := blobStores(t)
	type store struct {
		prefix string
		creds  *Credentials
	}
	for scheme, st := range map[string]store{
		"file": {prefix: "file://" + t.TempDir()},
		"s3": {
			prefix: "s3://backups/nightly?region=us-east-1&use_path_style=true&disable_https=true&endpoint=" + url.QueryEscape(srv.URL),
			creds:  &Credentials{AccessKeyID: "test", SecretAccessKey: "test"},
		},
		"gs":     {prefix: stores["gs"].url("backups", "nightly"), creds: stores["gs"].creds},
		"azblob": {prefix: stores["azblob"].url("backups", "nightly"), creds: stores["azblob"].creds},
	} {
		prefix, creds := st.prefix, st.creds
		t.Run(scheme, func(t *testing.T) {
			ctx := t.Context()
			base := time.Date(2026, 11, 24, 3, 0, 0, 0, time.UTC)
			var ours []string
			for i := range 5 {
				u, err := ScheduledURL(prefix, "uid-a", base.Add(time.Duration(i)*time.Hour))
				if err != nil {
					t.Fatal(err)
				}
				if err := Write(ctx, u, []byte("archive"), creds); err != nil {
					t.Fatal(err)
				}
				ours = append(ours, u)
			}
			other, _ := ScheduledURL(prefix, "uid-b", base)
			// Named like ours, but not UID-TIME.bak: someone else's.
			fu, _ := url.Parse(prefix)
			fu.Path = path.Join("/", fu.Path, "uid-a-20261124-copy.bak")
			foreign := fu.String()
			for _, u := range []string{other, foreign} {
				if err := Write(ctx, u, []byte("not ours"), creds); err != nil {
					t.Fatal(err)
				}
			}
			deleted, err := Prune(ctx, prefix, "uid-a", 2, creds)
			if err != nil {
				t.Fatal(err)
			}
			if len(deleted) != 3 {
				t.Errorf("deleted %v, want the 3 oldest", deleted)
			}
			for i, u := range ours {
				_, err := Read(ctx, u, creds)
				if kept := err == nil; kept != (i >= 3) {
					t.Errorf("archive %d (%s): kept=%v (%v), want the newest 2 kept", i, u, kept, err)
				}
			}
			for _, u := range []string{other, foreign} {
				if _, err := Read(ctx, u, creds); err != nil {
					t.Errorf("%s was not ours and is gone: %v", u, err)
				}
			}
			if again, err := Prune(ctx, prefix, "uid-a", 2, creds); err != nil || len(again) != 0 {
				t.Errorf("second prune deleted %v (%v), want nothing", again, err)
			}
			if _, err := Prune(ctx, prefix, "uid-a", 0, creds); err == nil {
				t.Error("keep 0 accepted")
			}
		})
	}
}
