package backup

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"cloud.google.com/go/storage"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	gcaws "gocloud.dev/aws"
	"gocloud.dev/blob"
	"gocloud.dev/blob/azureblob"
	"gocloud.dev/blob/gcsblob"
	"gocloud.dev/blob/s3blob"
	"gocloud.dev/gcp"
	"golang.org/x/oauth2/google"
	"google.golang.org/api/option"
)

// OpenBucket opens a bucket URL with creds (nil: none given) as backups
// open theirs, for other packages that store objects in a user's bucket
// (the OpenID issuer documents of internal/oidcissuer): the same schemes,
// options and credentials, never the operator's own identity. bucketURL
// is a bucket, not an archive URL: callers check its options first (see
// ParseURL, which refuses the s3 options that would reach the operator's
// AWS profile or role).
func OpenBucket(ctx context.Context, bucketURL string, creds *Credentials) (*blob.Bucket, error) {
	return openBucket(ctx, bucketURL, creds)
}

// openBucket opens a bucket URL with creds (nil: none given). s3, gs and
// azblob buckets always get a client of their own built from creds and the
// URL, never from the process environment: without creds, they are opened
// anonymously, not with the identity of the process (the operator's).
func openBucket(ctx context.Context, bucketURL string, creds *Credentials) (*blob.Bucket, error) {
	u, err := url.Parse(bucketURL)
	if err != nil {
		return nil, fmt.Errorf("bucket URL %q: %w", bucketURL, err)
	}
	creds, err = creds.forScheme(u.Scheme)
	if err != nil {
		return nil, fmt.Errorf("open bucket %s: %w", bucketURL, err)
	}
	var b *blob.Bucket
	switch u.Scheme {
	case s3blob.Scheme:
		b, err = openS3(ctx, u, creds)
	case gcsblob.Scheme:
		b, err = openGCS(ctx, u, creds)
	case azureblob.Scheme:
		b, err = openAzure(ctx, u, creds)
	default:
		b, err = blob.OpenBucket(ctx, bucketURL)
	}
	if err != nil {
		return nil, fmt.Errorf("open bucket %s: %w", bucketURL, err)
	}
	return b, nil
}

// openS3 opens an s3 bucket with a client of its own that uses creds, or
// none (the URL's query options as gocloud's s3blob reads them; ParseURL,
// which every bucket is opened through, took only those of s3Options).
func openS3(ctx context.Context, u *url.URL, creds *Credentials) (*blob.Bucket, error) {
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
				return nil, fmt.Errorf("%s: %w", key, err)
			}
			opts = append(opts, func(o *s3.Options) { set(o, v) })
		}
	}
	cfg, err := gcaws.V2ConfigFromURLParams(ctx, q)
	if err != nil {
		return nil, err
	}
	cfg.Credentials = aws.AnonymousCredentials{}
	if creds != nil {
		cfg.Credentials = credentials.NewStaticCredentialsProvider(creds.AccessKeyID, creds.SecretAccessKey, creds.SessionToken)
	}
	return s3blob.OpenBucket(ctx, s3.NewFromConfig(cfg, opts...), u.Host,
		&s3blob.Options{RequestChecksumCalculation: cfg.RequestChecksumCalculation})
}

// gcsEndpointOption is the gs:// URL option naming the storage server's
// base URL (an emulator's, e.g. http://127.0.0.1:4443); gocloud's own
// opener only reads STORAGE_EMULATOR_HOST from the process environment.
const gcsEndpointOption = "endpoint"

// openGCS opens a gs bucket: with the service-account key of creds, or
// anonymously when there is none. Only keys of type service_account are
// accepted: other credential types (external accounts) can make the
// client run programs or read files of the operator's host.
func openGCS(ctx context.Context, u *url.URL, creds *Credentials) (*blob.Bucket, error) {
	opts := &gcsblob.Options{}
	for k, v := range u.Query() {
		if k != gcsEndpointOption {
			return nil, fmt.Errorf("unknown option %q: gs:// URLs take %s=URL (e.g. %s=http://127.0.0.1:4443 for an emulator)", k, gcsEndpointOption, gcsEndpointOption)
		}
		ep, err := url.Parse(v[0])
		if err != nil || (ep.Scheme != "http" && ep.Scheme != "https") || ep.Host == "" {
			return nil, fmt.Errorf("option %s=%q: want http(s)://HOST[:PORT]", gcsEndpointOption, v[0])
		}
		opts.ClientOptions = append(opts.ClientOptions, option.WithEndpoint(strings.TrimSuffix(v[0], "/")+"/storage/v1/"))
	}
	if creds == nil {
		return gcsblob.OpenBucket(ctx, gcp.NewAnonymousHTTPClient(gcp.DefaultTransport()), u.Host, opts)
	}
	gc, err := google.CredentialsFromJSONWithTypeAndParams(ctx, []byte(creds.GCSServiceAccountJSON), google.ServiceAccount,
		google.CredentialsParams{Scopes: []string{storage.ScopeReadWrite}})
	if err != nil {
		return nil, fmt.Errorf("%s must hold a service-account key (JSON of type service_account): %w", GCSCredentialsJSONKey, err)
	}
	client, err := gcp.NewHTTPClient(gcp.DefaultTransport(), gc.TokenSource)
	if err != nil {
		return nil, err
	}
	return gcsblob.OpenBucket(ctx, client, u.Host, opts)
}

// openAzure opens an azblob container with the account's shared key or a
// SAS token of creds. The URL's options are gocloud's (domain, protocol,
// localemu, cdn, storage_account), e.g.
// ?protocol=http&domain=127.0.0.1:10000 for Azurite.
func openAzure(ctx context.Context, u *url.URL, creds *Credentials) (*blob.Bucket, error) {
	if creds == nil {
		return nil, fmt.Errorf("azblob:// needs credentials: %s", expectedKeys[azureblob.Scheme])
	}
	opener := &azureblob.URLOpener{
		ServiceURLOptions: azureblob.ServiceURLOptions{AccountName: creds.AzureAccount, SASToken: creds.AzureSASToken},
		MakeClient: func(svcURL azureblob.ServiceURL, name azureblob.ContainerName) (*container.Client, error) {
			containerURL, err := url.JoinPath(string(svcURL), string(name))
			if err != nil {
				return nil, err
			}
			opts := &container.ClientOptions{}
			if creds.AzureKey == "" {
				return container.NewClientWithNoCredential(containerURL, opts)
			}
			key, err := azblob.NewSharedKeyCredential(creds.AzureAccount, creds.AzureKey)
			if err != nil {
				return nil, fmt.Errorf("%s/%s: %w", AzureAccountKey, AzureKeyKey, err)
			}
			return container.NewClientWithSharedKeyCredential(containerURL, key, opts)
		},
	}
	return opener.OpenBucketURL(ctx, u)
}
