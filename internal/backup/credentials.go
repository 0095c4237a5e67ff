package backup

import (
	"context"
	"fmt"
	"net/url"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	gcaws "gocloud.dev/aws"
	"gocloud.dev/blob"
	"gocloud.dev/blob/s3blob"
)

// Credentials are S3 credentials for one bucket. They are handed to that
// bucket's client only, never put into the process environment, so one
// cluster's credentials cannot reach another's bucket.
type Credentials struct {
	AccessKeyID, SecretAccessKey, SessionToken string
}

// Keys of a Secret (or environment) holding Credentials.
const (
	AccessKeyIDKey     = "AWS_ACCESS_KEY_ID"
	SecretAccessKeyKey = "AWS_SECRET_ACCESS_KEY" //nolint:gosec // a key's name, not a credential
	SessionTokenKey    = "AWS_SESSION_TOKEN"     //nolint:gosec // a key's name, not a credential
)

// CredentialsFrom reads Credentials from a map of the keys above (a
// Secret's data); nil when it holds none.
func CredentialsFrom(get func(string) string) (*Credentials, error) {
	c := &Credentials{AccessKeyID: get(AccessKeyIDKey), SecretAccessKey: get(SecretAccessKeyKey), SessionToken: get(SessionTokenKey)}
	if c.AccessKeyID == "" && c.SecretAccessKey == "" {
		return nil, nil //nolint:nilnil // none given: the driver's defaults
	}
	if c.AccessKeyID == "" || c.SecretAccessKey == "" {
		return nil, fmt.Errorf("S3 credentials need both %s and %s", AccessKeyIDKey, SecretAccessKeyKey)
	}
	return c, nil
}

// openBucket opens a bucket URL; for s3 with creds, a client of its own
// that uses them (the URL's query options as gocloud's s3blob reads them).
func openBucket(ctx context.Context, bucketURL string, creds *Credentials) (*blob.Bucket, error) {
	u, err := url.Parse(bucketURL)
	if err != nil {
		return nil, fmt.Errorf("bucket URL %q: %w", bucketURL, err)
	}
	if creds == nil || u.Scheme != s3blob.Scheme {
		b, err := blob.OpenBucket(ctx, bucketURL)
		if err != nil {
			return nil, fmt.Errorf("open bucket %s: %w", bucketURL, err)
		}
		return b, nil
	}
	q := u.Query()
	var opts []func(*s3.Options)
	for key, set := range map[string]func(*s3.Options, bool){
		"use_path_style": func(o *s3.Options, v bool) { o.UsePathStyle = v },
		"disable_https":  func(o *s3.Options, v bool) { o.EndpointOptions.DisableHTTPS = v },
	} {
		if raw := q.Get(key); raw != "" {
			q.Del(key)
			v, err := strconv.ParseBool(raw)
			if err != nil {
				return nil, fmt.Errorf("bucket URL %s: %s: %w", bucketURL, key, err)
			}
			opts = append(opts, func(o *s3.Options) { set(o, v) })
		}
	}
	cfg, err := gcaws.V2ConfigFromURLParams(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("open bucket %s: %w", bucketURL, err)
	}
	cfg.Credentials = credentials.NewStaticCredentialsProvider(creds.AccessKeyID, creds.SecretAccessKey, creds.SessionToken)
	b, err := s3blob.OpenBucket(ctx, s3.NewFromConfig(cfg, opts...), u.Host,
		&s3blob.Options{RequestChecksumCalculation: cfg.RequestChecksumCalculation})
	if err != nil {
		return nil, fmt.Errorf("open bucket %s: %w", bucketURL, err)
	}
	return b, nil
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
		return fmt.Errorf("archive URL %q: scheme %s is not compiled into this hypershift; use file:// or s3://", raw, u.Scheme)
	}
	return nil
}
