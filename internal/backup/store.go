package backup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path"
	"slices"
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
		if u.RawQuery != "" || u.Host != "" {
			return Location{}, fmt.Errorf("archive URL %q: want file:///absolute/path/to/archive, without a host or ?options (the file driver's options would change where and how files are written)", raw)
		}
		if u.Path == "" || strings.HasSuffix(u.Path, "/") || !path.IsAbs(u.Path) {
			return Location{}, fmt.Errorf("archive URL %q: want file:///absolute/path/to/archive (a file name, not a directory)", raw)
		}
		bucket := url.URL{Scheme: "file", Path: path.Dir(u.Path), RawQuery: u.RawQuery}
		return Location{Bucket: bucket.String(), Key: path.Base(u.Path)}, nil
	}
	if u.Scheme == "s3" {
		for option := range u.Query() {
			if !s3Options[option] {
				return Location{}, fmt.Errorf("archive URL %q: option %q is not accepted for s3:// (accepted: %s); the bucket's credentials come from the request's Secret, never from the operator's own AWS profile or role", raw, option, strings.Join(slices.Sorted(maps.Keys(s3Options)), ", "))
			}
		}
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
	if file, ok := loc.file(); ok {
		return ownerOnly(raw, file)
	}
	return nil
}

// file is the path of a file:// archive; false for other schemes.
func (l Location) file() (string, bool) {
	u, err := url.Parse(l.Bucket)
	if err != nil || u.Scheme != "file" {
		return "", false
	}
	return path.Join(u.Path, l.Key), true
}

// ownerOnly makes the file:// archive at file, and the attributes file
// beside it, readable by their owner only: the file driver creates them
// 0666 less the umask, world-readable under the usual 022.
func ownerOnly(raw, file string) error {
	for _, p := range []string{file, file + ".attrs"} {
		if err := os.Chmod(p, 0o600); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("archive %s: %w", raw, err)
		}
	}
	return nil
}

// ErrNotFound says there is no archive at the URL.
var ErrNotFound = errors.New("no archive at this URL")

// maxArchiveBytes bounds what Read takes of one archive: its etcd snapshot
// is at most etcd's default quota of 2 GiB (the hosted etcd's), the rest of
// an archive is kilobytes. A URL that names something endless
// (file:///dev/zero, a body that never ends) is cut off there.
var maxArchiveBytes int64 = 2<<30 + 64<<20

// Read loads the archive at the URL raw; creds as for Write. A file://
// archive must be a regular file, not a symbolic link, a device or a pipe
// (which would block the reader until someone writes to it).
func Read(ctx context.Context, raw string, creds *Credentials) ([]byte, error) {
	b, loc, err := openLocation(ctx, raw, creds)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	if file, ok := loc.file(); ok {
		if err := checkRegularFile(raw, file); err != nil {
			return nil, err
		}
	}
	data, err := readBounded(ctx, b, loc.Key)
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

// readBounded reads the object key of b, at most maxArchiveBytes of it.
func readBounded(ctx context.Context, b *blob.Bucket, key string) ([]byte, error) {
	r, err := b.NewReader(ctx, key, nil)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	data, err := io.ReadAll(io.LimitReader(r, maxArchiveBytes+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > maxArchiveBytes {
		return nil, fmt.Errorf("the archive is larger than %d bytes, more than any archive hypershift writes: not read", maxArchiveBytes)
	}
	return data, nil
}

// checkRegularFile refuses the file:// archive at file when it is not a
// regular file. A missing file passes, to be reported as ErrNotFound.
func checkRegularFile(raw, file string) error {
	fi, err := os.Lstat(file)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("archive %s: %w", raw, err)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("archive %s is a %s, not a regular file: not read", raw, fileKind(fi.Mode()))
	}
	return nil
}

func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeDevice != 0 || m&fs.ModeCharDevice != 0:
		return "device"
	case m.IsDir():
		return "directory"
	case m.IsRegular():
		return "regular file"
	}
	return "special file"
}

// s3Options are the options an s3:// URL may carry: where the bucket is
// and how to speak to it. profile, role and anonymous are not: the first
// two would use the AWS identity of whoever opens the bucket (the
// operator), and a bucket without credentials is always opened
// anonymously.
var s3Options = map[string]bool{
	"region": true, "endpoint": true, "hostname_immutable": true, "dualstack": true, "fips": true,
	"use_path_style": true, "disable_https": true, "rate_limiter_capacity": true,
	"request_checksum_calculation": true, "response_checksum_validation": true,
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
