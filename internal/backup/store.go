package backup

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path"
	"strings"

	"gocloud.dev/blob"
	// The drivers of the URL schemes an archive can be written to.
	_ "gocloud.dev/blob/fileblob"
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
		return Location{}, fmt.Errorf("archive URL %q has no scheme: use file:///path/to/archive or s3://bucket/key", raw)
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
// S3 credentials of that bucket (otherwise the driver's usual sources).
func Write(ctx context.Context, raw string, data []byte, creds *Credentials) error {
	loc, err := ParseURL(raw)
	if err != nil {
		return err
	}
	b, err := openBucket(ctx, loc.Bucket, creds)
	if err != nil {
		return err
	}
	defer b.Close()
	if err := b.WriteAll(ctx, loc.Key, data, &blob.WriterOptions{ContentType: "application/octet-stream"}); err != nil {
		return fmt.Errorf("write %s to %s: %w", loc.Key, loc.Bucket, err)
	}
	return nil
}

// ErrNotFound says there is no archive at the URL.
var ErrNotFound = errors.New("no archive at this URL")

// Read loads the archive at the URL raw; creds as for Write.
func Read(ctx context.Context, raw string, creds *Credentials) ([]byte, error) {
	loc, err := ParseURL(raw)
	if err != nil {
		return nil, err
	}
	b, err := openBucket(ctx, loc.Bucket, creds)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	data, err := b.ReadAll(ctx, loc.Key)
	if gcerrors.Code(err) == gcerrors.NotFound {
		return nil, fmt.Errorf("%s: %w", raw, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s from %s: %w", loc.Key, loc.Bucket, err)
	}
	return data, nil
}
