package oidcissuer

import (
	"bytes"
	"context"
	"crypto"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path"
	"strings"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"hypershift.dev/internal/backup"
)

// cacheControl is the documents' Cache-Control. kube-apiserver serves
// them with max-age=3600; a published copy is kept shorter because it
// is what a key rotation replaces: a CDN in front of the bucket, or a
// relying party, picks up a key set with a new key (or without a
// retired one) within five minutes.
const cacheControl = "public, max-age=300"

// maxDocumentBytes bounds what Read takes of one document: a key set of
// a few keys is a few kilobytes. An object that never ends is cut off.
const maxDocumentBytes = 1 << 20

// ErrNotPublished says a document is not at the storage URL.
var ErrNotPublished = errors.New("not published")

// location is where an issuer's documents are stored: a bucket (a
// gocloud.dev/blob URL, opened as backups open theirs) and the prefix
// their paths go under.
type location struct {
	bucket string
	// prefix is "" or a/b: no leading or trailing slash.
	prefix string
}

// key is the object key of the document at docPath (DiscoveryPath or
// JWKSPath) under the issuer.
func (l location) key(docPath string) string {
	if l.prefix == "" {
		return strings.TrimPrefix(docPath, "/")
	}
	return l.prefix + docPath
}

// parseStorageURL splits a storage URL into its bucket and prefix:
// SCHEME://BUCKET[/PREFIX][?options] stores the documents under PREFIX in
// BUCKET (at the bucket's root without one), the options going to the
// bucket as a backup archive URL's do; file:///DIRECTORY stores them
// under DIRECTORY. backup.ParseURL does not parse it: it wants an object
// key, never an empty prefix, and splits a file:// path into a directory
// and a file name. It checks the options, though, on the URL of one
// document, so an issuer's bucket takes exactly the options a backup's
// takes.
func parseStorageURL(raw string) (location, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return location{}, fmt.Errorf("storage URL %q: %w", raw, err)
	}
	switch {
	case u.Scheme == "":
		return location{}, fmt.Errorf("storage URL %q has no scheme: use s3://BUCKET[/PREFIX][?options], gs://BUCKET[/PREFIX], azblob://CONTAINER[/PREFIX] or file:///DIRECTORY", raw)
	case u.User != nil:
		return location{}, fmt.Errorf("storage URL %q carries user info: remove it (the bucket's credentials come from its Secret)", u.Redacted())
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return location{}, fmt.Errorf("storage URL %q has a fragment: remove it", raw)
	case u.Scheme == "file":
		if u.Host != "" || u.RawQuery != "" || !path.IsAbs(u.Path) {
			return location{}, fmt.Errorf("storage URL %q: want file:///absolute/directory, without a host or ?options (the file driver's options would change where and how files are written)", raw)
		}
		return location{bucket: (&url.URL{Scheme: "file", Path: path.Clean(u.Path)}).String()}, nil
	case u.Host == "":
		return location{}, fmt.Errorf("storage URL %q: want %s://BUCKET[/PREFIX]", raw, u.Scheme)
	}
	l := location{prefix: strings.Trim(u.Path, "/")}
	if l.prefix != "" {
		for seg := range strings.SplitSeq(l.prefix, "/") {
			if seg == "" || seg == "." || seg == ".." {
				// A key is stored verbatim, but the issuer URL's path is
				// normalized by HTTP clients: the documents would not be
				// where relying parties look.
				return location{}, fmt.Errorf("storage URL %q: the prefix %q has an empty, . or .. segment: name the path the issuer URL's path is served from, e.g. %s://%s/clusters/a", raw, l.prefix, u.Scheme, u.Host)
			}
		}
	}
	doc := *u
	doc.Path, doc.RawPath = "/"+l.key(JWKSPath), ""
	loc, err := backup.ParseURL(doc.String())
	if err != nil {
		return location{}, fmt.Errorf("storage URL %q: %w", raw, err)
	}
	l.bucket = loc.Bucket
	return l, nil
}

// open opens the bucket of the storage URL raw.
func open(ctx context.Context, raw string, creds *backup.Credentials) (*blob.Bucket, location, error) {
	l, err := parseStorageURL(raw)
	if err != nil {
		return nil, location{}, err
	}
	b, err := backup.OpenBucket(ctx, l.bucket, creds)
	if err != nil {
		return nil, location{}, err
	}
	return b, l, nil
}

// makeFileBucket makes the directory of a file:// storage URL, as a
// bucket of an object store needs no making for a new prefix: the file
// driver refuses a directory that does not exist. It is readable by all
// (0755): the documents are public, and the web server that serves them
// may run as another user. Other schemes are left alone.
func makeFileBucket(storageURL string) error {
	l, err := parseStorageURL(storageURL)
	if err != nil {
		return err
	}
	u, err := url.Parse(l.bucket)
	if err != nil || u.Scheme != "file" {
		return nil //nolint:nilerr // not a file:// bucket: open judges it
	}
	if err := os.MkdirAll(u.Path, 0o755); err != nil {
		return fmt.Errorf("storage URL %s: %w", storageURL, err)
	}
	return nil
}

// Publish writes the documents of issuer, whose tokens are signed with
// one of pubs, to the storage URL (see parseStorageURL) with creds (nil:
// none), as PREFIX/openid/v1/jwks and PREFIX/.well-known/openid-configuration.
// The key set is written first: a relying party that reads the new
// discovery document finds the key set it names. Publish does not make
// the objects public: the bucket's policy (or a CDN in front of it)
// serves them at the issuer URL.
func Publish(ctx context.Context, storageURL string, creds *backup.Credentials, issuer string, pubs []crypto.PublicKey) error {
	jwks, err := JWKS(pubs)
	if err != nil {
		return err
	}
	discovery, err := Discovery(issuer, pubs)
	if err != nil {
		return err
	}
	if err := makeFileBucket(storageURL); err != nil {
		return err
	}
	b, l, err := open(ctx, storageURL, creds)
	if err != nil {
		return err
	}
	defer b.Close()
	for _, doc := range []struct {
		path string
		data []byte
	}{{JWKSPath, jwks}, {DiscoveryPath, discovery}} {
		key := l.key(doc.path)
		// Upload, not WriteAll: gocloud's azureblob writer panics in
		// Close when a streamed write fails (see backup.Write).
		err := b.Upload(ctx, key, bytes.NewReader(doc.data), &blob.WriterOptions{ContentType: "application/json", CacheControl: cacheControl})
		if err != nil {
			return fmt.Errorf("publish %s to %s: %w", key, l.bucket, err)
		}
	}
	return nil
}

// Unpublish deletes the two documents Publish writes at the storage URL,
// the discovery document first (it names the key set), and nothing
// else: other objects under the prefix are not ours. A document already
// gone is not an error.
func Unpublish(ctx context.Context, storageURL string, creds *backup.Credentials) error {
	b, l, err := open(ctx, storageURL, creds)
	if err != nil {
		return err
	}
	defer b.Close()
	for _, p := range []string{DiscoveryPath, JWKSPath} {
		key := l.key(p)
		if err := b.Delete(ctx, key); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
			return fmt.Errorf("unpublish %s from %s: %w", key, l.bucket, err)
		}
	}
	return nil
}

// Read reads back the documents Publish writes at the storage URL, at
// most maxDocumentBytes of each. A missing one is ErrNotPublished.
func Read(ctx context.Context, storageURL string, creds *backup.Credentials) (discovery, jwks []byte, err error) {
	b, l, err := open(ctx, storageURL, creds)
	if err != nil {
		return nil, nil, err
	}
	defer b.Close()
	if discovery, err = readDocument(ctx, b, l, DiscoveryPath); err != nil {
		return nil, nil, err
	}
	if jwks, err = readDocument(ctx, b, l, JWKSPath); err != nil {
		return nil, nil, err
	}
	return discovery, jwks, nil
}

// readDocument reads the document at docPath, bounded.
func readDocument(ctx context.Context, b *blob.Bucket, l location, docPath string) ([]byte, error) {
	key := l.key(docPath)
	if err := checkRegularFile(l, key); err != nil {
		return nil, err
	}
	r, err := b.NewReader(ctx, key, nil)
	if gcerrors.Code(err) == gcerrors.NotFound {
		return nil, fmt.Errorf("%s in %s: %w", key, l.bucket, ErrNotPublished)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s from %s: %w", key, l.bucket, err)
	}
	defer r.Close()
	data, err := io.ReadAll(io.LimitReader(r, maxDocumentBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s from %s: %w", key, l.bucket, err)
	}
	if len(data) > maxDocumentBytes {
		return nil, fmt.Errorf("%s in %s is larger than %d bytes, more than any issuer document: not read", key, l.bucket, maxDocumentBytes)
	}
	return data, nil
}

// checkRegularFile refuses a file:// document that is not a regular
// file: opening a named pipe would block until someone writes to it. A
// missing file passes, to be reported as ErrNotPublished.
func checkRegularFile(l location, key string) error {
	u, err := url.Parse(l.bucket)
	if err != nil || u.Scheme != "file" {
		return nil //nolint:nilerr // not a file:// bucket: nothing to check
	}
	file := path.Join(u.Path, key)
	fi, err := os.Lstat(file)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("read %s: %w", file, err)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file (%s): not read", file, fi.Mode().Type())
	}
	return nil
}
