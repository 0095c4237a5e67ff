package oidcissuer

import (
	"bytes"
	"crypto"
	"crypto/elliptic"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"hypershift.dev/internal/backup"
	"hypershift.dev/internal/backup/blobtest"
	"hypershift.dev/internal/testenv"
)

// s3Server is an S3 server (gofakes3, in memory) with a bucket
// "issuers" that records the requests it serves.
type s3Server struct {
	URL string
	mu  sync.Mutex
	// requests are METHOD /path?query, in order.
	requests []string
	// headers are the Content-Type and Cache-Control of each PUT.
	headers []string
}

func startS3(t *testing.T) *s3Server {
	t.Helper()
	backend := s3mem.New()
	if err := backend.CreateBucket("issuers"); err != nil {
		t.Fatal(err)
	}
	s3 := gofakes3.New(backend).Server()
	s := &s3Server{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests = append(s.requests, r.Method+" "+r.URL.RequestURI())
		if r.Method == http.MethodPut {
			s.headers = append(s.headers, r.Header.Get("Content-Type")+"; "+r.Header.Get("Cache-Control"))
		}
		s.mu.Unlock()
		s3.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// storageURL is the storage URL of prefix in bucket issuers, formed as
// a backup archive's (test/e2e/backup_test.go).
func (s *s3Server) storageURL(prefix string) string {
	return "s3://issuers/" + prefix + "?region=us-east-1&use_path_style=true&disable_https=true&endpoint=" + url.QueryEscape(s.URL)
}

// take returns the requests of the given methods served since the last
// take, and forgets all.
func (s *s3Server) take(methods ...string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, r := range s.requests {
		if slices.Contains(methods, strings.Fields(r)[0]) {
			out = append(out, strings.SplitN(r, "?", 2)[0])
		}
	}
	s.requests = nil
	return out
}

// TestPublishReadUnpublish publishes, rotates, reads back and
// unpublishes an issuer's documents on file://, s3:// and gs://: the
// objects are where the issuer's paths are, typed application/json with
// a short Cache-Control, and unpublishing leaves the objects beside them.
func TestPublishReadUnpublish(t *testing.T) {
	s3 := startS3(t)
	gcs := blobtest.StartGCS(t, "issuers")
	dir := t.TempDir()
	s3Creds := &backup.Credentials{AccessKeyID: "test", SecretAccessKey: "test"}
	stores := []struct {
		name, url string
		creds     *backup.Credentials
		prefix    string // of the keys in the bucket
		bucket    string // the bucket URL, to look at the objects
	}{
		{"file", "file://" + dir, nil, "", "file://" + dir},
		{"s3", s3.storageURL("clusters/a"), s3Creds, "clusters/a/", "s3://issuers?region=us-east-1&use_path_style=true&disable_https=true&endpoint=" + url.QueryEscape(s3.URL)},
		{"s3 bucket root", s3.storageURL(""), s3Creds, "", "s3://issuers?region=us-east-1&use_path_style=true&disable_https=true&endpoint=" + url.QueryEscape(s3.URL)},
		{"gs", gcs.URL("issuers", "clusters/b"), nil, "clusters/b/", "gs://issuers?endpoint=" + url.QueryEscape(gcs.Endpoint)},
	}
	p256, p384, rsa2048 := newEC(t, elliptic.P256()), newEC(t, elliptic.P384()), newRSA(t, 2048)
	const issuer = "https://oidc.example.com/clusters/a"
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			ctx := t.Context()
			b, err := backup.OpenBucket(ctx, st.bucket, st.creds)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = b.Close() })
			discoveryKey, jwksKey := st.prefix+".well-known/openid-configuration", st.prefix+"openid/v1/jwks"
			// Objects that are not ours, beside ours and in their folders.
			foreign := []string{st.prefix + "index.html", st.prefix + ".well-known/security.txt", st.prefix + "openid/v1/jwks.old"}
			for _, key := range foreign {
				if err := b.WriteAll(ctx, key, []byte("not ours"), nil); err != nil {
					t.Fatal(err)
				}
			}

			if _, _, err := Read(ctx, st.url, st.creds); !errors.Is(err, ErrNotPublished) {
				t.Fatalf("read before publishing: %v, want ErrNotPublished", err)
			}
			if err := Unpublish(ctx, st.url, st.creds); err != nil {
				t.Fatalf("unpublish before publishing: %v, want nothing to do", err)
			}
			if err := Publish(ctx, st.url, st.creds, "http://oidc.example.com", []crypto.PublicKey{p256}); err == nil || !strings.Contains(err.Error(), "want https://") {
				t.Fatalf("publish with an http issuer: %v, want it refused", err)
			}
			if _, _, err := Read(ctx, st.url, st.creds); !errors.Is(err, ErrNotPublished) {
				t.Fatalf("a refused publish wrote something: %v", err)
			}

			for _, keys := range [][]crypto.PublicKey{{p256}, {p256, p384, rsa2048}, {rsa2048}} {
				if err := Publish(ctx, st.url, st.creds, issuer, keys); err != nil {
					t.Fatal(err)
				}
				discovery, jwks, err := Read(ctx, st.url, st.creds)
				if err != nil {
					t.Fatal(err)
				}
				wantDiscovery, _ := Discovery(issuer, keys)
				wantJWKS, _ := JWKS(keys)
				if !bytes.Equal(discovery, wantDiscovery) || !bytes.Equal(jwks, wantJWKS) {
					t.Fatalf("read back\n%s\n%s\nwant\n%s\n%s", discovery, jwks, wantDiscovery, wantJWKS)
				}
			}
			for _, key := range []string{discoveryKey, jwksKey} {
				attrs, err := b.Attributes(ctx, key)
				if err != nil {
					t.Fatalf("%s: %v", key, err)
				}
				if attrs.ContentType != "application/json" {
					t.Errorf("%s: Content-Type %q, want application/json", key, attrs.ContentType)
				}
				// gofakes3 does not keep Cache-Control: TestPublishOrder
				// checks it is sent.
				if !strings.HasPrefix(st.name, "s3") && attrs.CacheControl != cacheControl {
					t.Errorf("%s: Cache-Control %q, want %q", key, attrs.CacheControl, cacheControl)
				}
			}

			if err := Unpublish(ctx, st.url, st.creds); err != nil {
				t.Fatal(err)
			}
			for _, key := range []string{discoveryKey, jwksKey} {
				if ok, err := b.Exists(ctx, key); err != nil || ok {
					t.Errorf("%s still there after unpublishing (%v)", key, err)
				}
			}
			for _, key := range foreign {
				if ok, err := b.Exists(ctx, key); err != nil || !ok {
					t.Errorf("unpublishing removed %s, which is not ours (%v)", key, err)
				}
			}
			if _, _, err := Read(ctx, st.url, st.creds); !errors.Is(err, ErrNotPublished) {
				t.Errorf("read after unpublishing: %v, want ErrNotPublished", err)
			}
			if err := Unpublish(ctx, st.url, st.creds); err != nil {
				t.Errorf("unpublish twice: %v", err)
			}
		})
	}
}

// TestPublishOrder: the key set is written before the discovery document
// that names it and deleted after it, both sent with their Content-Type
// and Cache-Control, and unpublishing deletes by name: it never lists
// the prefix.
func TestPublishOrder(t *testing.T) {
	s3 := startS3(t)
	u := s3.storageURL("clusters/a")
	creds := &backup.Credentials{AccessKeyID: "test", SecretAccessKey: "test"}
	if err := Publish(t.Context(), u, creds, "https://oidc.example.com", []crypto.PublicKey{newEC(t, elliptic.P256())}); err != nil {
		t.Fatal(err)
	}
	want := []string{"PUT /issuers/clusters/a/openid/v1/jwks", "PUT /issuers/clusters/a/.well-known/openid-configuration"}
	if got := s3.take("PUT", "POST"); !slices.Equal(got, want) {
		t.Errorf("publish wrote %v, want %v", got, want)
	}
	s3.mu.Lock()
	headers := slices.Clone(s3.headers)
	s3.mu.Unlock()
	if want := "application/json; public, max-age=300"; len(headers) != 2 || headers[0] != want || headers[1] != want {
		t.Errorf("Content-Type; Cache-Control of the writes: %q, want %q each", headers, want)
	}
	if err := Unpublish(t.Context(), u, creds); err != nil {
		t.Fatal(err)
	}
	want = []string{"DELETE /issuers/clusters/a/.well-known/openid-configuration", "DELETE /issuers/clusters/a/openid/v1/jwks"}
	s3.mu.Lock()
	all := slices.Clone(s3.requests)
	s3.mu.Unlock()
	if got := s3.take("DELETE", "POST"); !slices.Equal(got, want) {
		t.Errorf("unpublish deleted %v, want %v", got, want)
	}
	for _, r := range all {
		if strings.HasPrefix(r, "GET /issuers?") || strings.HasPrefix(r, "GET /issuers/?") {
			t.Errorf("unpublish listed the bucket: %s", r)
		}
	}
}

// TestReadRefuses: Read stops at maxDocumentBytes and does not open a
// named pipe (which would block it until someone writes).
func TestReadRefuses(t *testing.T) {
	dir := t.TempDir()
	u := "file://" + dir
	if err := Publish(t.Context(), u, nil, "https://oidc.example.com", []crypto.PublicKey{newEC(t, elliptic.P256())}); err != nil {
		t.Fatal(err)
	}
	jwks := filepath.Join(dir, "openid", "v1", "jwks")
	if err := os.WriteFile(jwks, bytes.Repeat([]byte(" "), maxDocumentBytes+1), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err := Read(t.Context(), u, nil)
	testenv.ExpectError(t, err, "larger than 1048576 bytes")

	discovery := filepath.Join(dir, ".well-known", "openid-configuration")
	if err := os.Remove(discovery); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(discovery, 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err = Read(t.Context(), u, nil)
	testenv.ExpectError(t, err, "is not a regular file (p---------): not read")
}

// TestParseStorageURL: a storage URL is a bucket and a prefix; the
// options a backup's bucket refuses are refused here too.
func TestParseStorageURL(t *testing.T) {
	for _, c := range []struct {
		raw            string
		bucket, prefix string
		want           string // part of the error; "" for valid
	}{
		{raw: "s3://issuers/clusters/a?region=us-east-1", bucket: "s3://issuers?region=us-east-1", prefix: "clusters/a"},
		{raw: "s3://issuers/clusters/a/", bucket: "s3://issuers", prefix: "clusters/a"},
		{raw: "s3://issuers", bucket: "s3://issuers"},
		{raw: "s3://issuers/", bucket: "s3://issuers"},
		{raw: "gs://issuers/a?endpoint=http%3A%2F%2F127.0.0.1%3A4443", bucket: "gs://issuers?endpoint=http%3A%2F%2F127.0.0.1%3A4443", prefix: "a"},
		{raw: "azblob://issuers/a", bucket: "azblob://issuers", prefix: "a"},
		{raw: "file:///srv/www/issuer/", bucket: "file:///srv/www/issuer"},
		{raw: "issuers/a", want: "has no scheme: use s3://BUCKET[/PREFIX][?options]"},
		{raw: "s3:///a", want: "want s3://BUCKET[/PREFIX]"},
		{raw: "s3://issuers/a?profile=default", want: `option "profile" is not accepted for s3://`},
		{raw: "s3://issuers/a//b", want: `the prefix "a//b" has an empty, . or .. segment`},
		{raw: "s3://issuers/a/../b", want: "has an empty, . or .. segment"},
		{raw: "s3://key:secret@issuers/a", want: "carries user info"},
		{raw: "s3://issuers/a#b", want: "has a fragment"},
		{raw: "file://host/srv", want: "want file:///absolute/directory"},
		{raw: "file:///srv?create_dir=1", want: "want file:///absolute/directory"},
		{raw: "file:srv", want: "want file:///absolute/directory"},
	} {
		t.Run(c.raw, func(t *testing.T) {
			l, err := parseStorageURL(c.raw)
			testenv.ExpectError(t, err, c.want)
			if err != nil && strings.Contains(err.Error(), "secret") {
				t.Errorf("the error repeats the secret: %v", err)
			}
			if c.want == "" && (l.bucket != c.bucket || l.prefix != c.prefix) {
				t.Errorf("bucket %q prefix %q, want %q %q", l.bucket, l.prefix, c.bucket, c.prefix)
			}
		})
	}
}
