package backup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"gocloud.dev/blob"
	// The drivers of the URL schemes an archive can be written to.
	_ "gocloud.dev/blob/azureblob"
	_ "gocloud.dev/blob/fileblob"
	_ "gocloud.dev/blob/gcsblob"
	_ "gocloud.dev/blob/s3blob"
	"gocloud.dev/gcerrors"
)

// Location is where an archive is stored: a bucket (a gocloud.dev/blob URL)
// and the object's key in it.
type Location struct {
	Bucket string
	Key    string
}

// ParseURL splits an archive URL into its bucket and key. file:///dir/a.bak
// is the file a.bak in dir; SCHEME://bucket/path/a.bak?options is the object
// path/a.bak in the bucket, the options (e.g. endpoint, region,
// use_path_style for s3) going to the bucket.
func ParseURL(raw string) (Location, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return Location{}, fmt.Errorf("archive URL %q: %w", raw, err)
	}
	if u.Scheme == "" {
		return Location{}, fmt.Errorf("archive URL %q has no scheme: use file:///path/to/archive, s3://bucket/key, gs://bucket/key or azblob://container/key", raw)
	}
	if u.Scheme == "file" {
		if u.Path == "" || strings.HasSuffix(u.Path, "/") || !path.IsAbs(u.Path) {
			return Location{}, fmt.Errorf("archive URL %q: want file:///absolute/path/to/archive (a file name, not a directory)", raw)
		}
		bucket := url.URL{Scheme: "file", Path: path.Dir(u.Path), RawQuery: u.RawQuery}
		return Location{Bucket: bucket.String(), Key: path.Base(u.Path)}, nil
	}
	key := strings.TrimPrefix(u.Path, "/")
	if u.Host == "" || key == "" || strings.HasSuffix(key, "/") {
		return Location{}, fmt.Errorf("archive URL %q: want %s://BUCKET/KEY (an object name)", raw, u.Scheme)
	}
	bucket := url.URL{Scheme: u.Scheme, Host: u.Host, RawQuery: u.RawQuery}
	return Location{Bucket: bucket.String(), Key: key}, nil
}

// Write stores data at the archive URL raw; creds, when not nil, are the
// credentials of that bucket (see Credentials).
func Write(ctx context.Context, raw string, data []byte, creds *Credentials) error {
	b, loc, err := openLocation(ctx, raw, creds)
	if err != nil {
		return err
	}
	defer b.Close()
	// Upload, not WriteAll: gocloud's azureblob writer panics in Close
	// when a streamed write fails (it clears its pipe under Close).
	if err := b.Upload(ctx, loc.Key, bytes.NewReader(data), &blob.WriterOptions{ContentType: "application/octet-stream"}); err != nil {
		return fmt.Errorf("write %s to %s: %w", loc.Key, loc.Bucket, bucketError(ctx, b, loc.Bucket, err))
	}
	return nil
}

// ErrNotFound says there is no archive at the URL.
var ErrNotFound = errors.New("no archive at this URL")

// Read loads the archive at the URL raw; creds as for Write.
func Read(ctx context.Context, raw string, creds *Credentials) ([]byte, error) {
	b, loc, err := openLocation(ctx, raw, creds)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	data, err := b.ReadAll(ctx, loc.Key)
	if gcerrors.Code(err) == gcerrors.NotFound {
		// A missing object and a missing bucket both read as NotFound;
		// the fix differs.
		if ok, aerr := b.IsAccessible(ctx); aerr == nil && !ok {
			return nil, fmt.Errorf("%s: the bucket %s does not exist: %w", raw, bucketName(loc.Bucket), ErrNotFound)
		}
		return nil, fmt.Errorf("%s: %w", raw, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s from %s: %w", loc.Key, loc.Bucket, bucketError(ctx, b, loc.Bucket, err))
	}
	return data, nil
}

// openLocation opens the bucket of the archive URL raw and returns it with
// the archive's place in it.
func openLocation(ctx context.Context, raw string, creds *Credentials) (*blob.Bucket, Location, error) {
	loc, err := ParseURL(raw)
	if err != nil {
		return nil, Location{}, err
	}
	b, err := openBucket(ctx, loc.Bucket, creds)
	if err != nil {
		return nil, Location{}, err
	}
	return b, loc, nil
}

// bucketError says what to fix when err came from a bucket that does not
// exist or refused the credentials (the drivers' messages do not all say
// so), else returns err.
func bucketError(ctx context.Context, b *blob.Bucket, bucketURL string, err error) error {
	code := gcerrors.Code(err)
	// gocloud's azureblob reports Azure's 403 AuthorizationFailure (a
	// wrong key's signature) as Unknown.
	var azErr *azcore.ResponseError
	if errors.As(err, &azErr) && (azErr.StatusCode == http.StatusForbidden || azErr.StatusCode == http.StatusUnauthorized) {
		code = gcerrors.PermissionDenied
	}
	scheme, _, _ := strings.Cut(bucketURL, ":")
	switch _, takesCredentials := schemeKeys[scheme]; {
	case code == gcerrors.PermissionDenied && takesCredentials:
		return fmt.Errorf("the bucket refused the credentials (%s:// takes %s): %w", scheme, expectedKeys[scheme], err)
	case code == gcerrors.NotFound || code == gcerrors.Unknown:
		if ok, aerr := b.IsAccessible(ctx); aerr == nil && !ok {
			return fmt.Errorf("the bucket does not exist (create it, or fix the bucket name in the URL): %w", err)
		}
	}
	return err
}

// bucketName is the bucket's name in a bucket URL (its directory for
// file://), for messages.
func bucketName(bucketURL string) string {
	u, err := url.Parse(bucketURL)
	if err != nil {
		return bucketURL
	}
	if u.Host == "" {
		return u.Path
	}
	return u.Host
}

// CheckScheme says whether archives can be written to raw's scheme with
// this build.
func CheckScheme(raw string) error {
	loc, err := ParseURL(raw)
	if err != nil {
		return err
	}
	u, _ := url.Parse(loc.Bucket)
	if !blob.DefaultURLMux().ValidBucketScheme(u.Scheme) {
		return fmt.Errorf("archive URL %q: scheme %s is not compiled into this hypershift; use file://, s3://, gs:// or azblob://", raw, u.Scheme)
	}
	return nil
}
