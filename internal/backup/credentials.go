package backup

import (
	"fmt"
	"os"
	"sort"
	"strings"
)

// Credentials are the credentials of one bucket, read from a Secret (or
// the CLI's environment). They are handed to that bucket's client only,
// never put into the process environment, so one cluster's credentials
// cannot reach another's bucket. Only the fields of the archive URL's
// scheme are used.
type Credentials struct {
	// s3://: static keys.
	AccessKeyID, SecretAccessKey, SessionToken string
	// gs://: a service-account key file's JSON.
	GCSServiceAccountJSON string
	// azblob://: the storage account, with its shared key or a SAS token.
	AzureAccount, AzureKey, AzureSASToken string
}

// Keys of a Secret (or environment) holding Credentials.
const (
	AccessKeyIDKey     = "AWS_ACCESS_KEY_ID"
	SecretAccessKeyKey = "AWS_SECRET_ACCESS_KEY" //nolint:gosec // a key's name, not a credential
	SessionTokenKey    = "AWS_SESSION_TOKEN"     //nolint:gosec // a key's name, not a credential
	// GCSCredentialsJSONKey holds a service-account key (JSON, type
	// service_account).
	GCSCredentialsJSONKey = "GOOGLE_APPLICATION_CREDENTIALS_JSON" //nolint:gosec // a key's name, not a credential
	AzureAccountKey       = "AZURE_STORAGE_ACCOUNT"
	AzureKeyKey           = "AZURE_STORAGE_KEY"
	AzureSASTokenKey      = "AZURE_STORAGE_SAS_TOKEN"
	// gcsCredentialsFileEnv is the usual environment variable naming a
	// key file; only the CLI reads it, into GCSCredentialsJSONKey.
	gcsCredentialsFileEnv = "GOOGLE_APPLICATION_CREDENTIALS" //nolint:gosec // a variable's name, not a credential
)

// schemeKeys are the credential keys each scheme reads.
var schemeKeys = map[string][]string{
	"s3":     {AccessKeyIDKey, SecretAccessKeyKey, SessionTokenKey},
	"gs":     {GCSCredentialsJSONKey},
	"azblob": {AzureAccountKey, AzureKeyKey, AzureSASTokenKey},
}

// expectedKeys says, for a scheme, which keys its credentials take.
var expectedKeys = map[string]string{
	"s3":     AccessKeyIDKey + " and " + SecretAccessKeyKey + " (optional " + SessionTokenKey + "), or none for the AWS SDK's default sources",
	"gs":     GCSCredentialsJSONKey + " (a service-account key JSON), or none for anonymous access (emulators, public buckets)",
	"azblob": AzureAccountKey + " with " + AzureKeyKey + " (shared key) or " + AzureSASTokenKey,
	"file":   "none",
}

// CredentialsFrom reads Credentials from a map of the keys above (a
// Secret's data); nil when it holds none. Keys of several schemes may sit
// in one Secret; each bucket uses its own scheme's.
func CredentialsFrom(get func(string) string) (*Credentials, error) {
	c := &Credentials{
		AccessKeyID: get(AccessKeyIDKey), SecretAccessKey: get(SecretAccessKeyKey), SessionToken: get(SessionTokenKey),
		GCSServiceAccountJSON: get(GCSCredentialsJSONKey),
		AzureAccount:          get(AzureAccountKey), AzureKey: get(AzureKeyKey), AzureSASToken: get(AzureSASTokenKey),
	}
	if len(c.schemes()) == 0 {
		return nil, nil //nolint:nilnil // none given
	}
	if (c.AccessKeyID == "") != (c.SecretAccessKey == "") {
		return nil, fmt.Errorf("S3 credentials need both %s and %s", AccessKeyIDKey, SecretAccessKeyKey)
	}
	if c.SessionToken != "" && c.AccessKeyID == "" {
		return nil, fmt.Errorf("S3 credentials: %s needs %s and %s", SessionTokenKey, AccessKeyIDKey, SecretAccessKeyKey)
	}
	if c.AzureKey != "" && c.AzureAccount == "" {
		return nil, fmt.Errorf("azure credentials: %s needs %s (the storage account it belongs to)", AzureKeyKey, AzureAccountKey)
	}
	if c.AzureAccount != "" && c.AzureKey == "" && c.AzureSASToken == "" {
		return nil, fmt.Errorf("azure credentials: %s needs %s or %s", AzureAccountKey, AzureKeyKey, AzureSASTokenKey)
	}
	return c, nil
}

// CredentialsFromEnv reads the credentials of scheme only from the
// environment getenv (the CLI's): a user's AWS variables do not go into
// the Secret of a gs:// backup. For gs, GOOGLE_APPLICATION_CREDENTIALS (a
// key file's path) is read when GOOGLE_APPLICATION_CREDENTIALS_JSON is not
// set.
func CredentialsFromEnv(scheme string, getenv func(string) string) (*Credentials, error) {
	keys := schemeKeys[scheme]
	get := func(k string) string {
		for _, want := range keys {
			if k == want {
				return getenv(k)
			}
		}
		return ""
	}
	if scheme == "gs" && getenv(GCSCredentialsJSONKey) == "" && getenv(gcsCredentialsFileEnv) != "" {
		path := getenv(gcsCredentialsFileEnv)
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", gcsCredentialsFileEnv, err)
		}
		get = func(k string) string {
			if k == GCSCredentialsJSONKey {
				return string(data)
			}
			return ""
		}
	}
	return CredentialsFrom(get)
}

// Data is the credentials as Secret data (the keys above, empty ones left
// out).
func (c *Credentials) Data() map[string][]byte {
	data := map[string][]byte{}
	if c == nil {
		return data
	}
	for k, v := range c.values() {
		if v != "" {
			data[k] = []byte(v)
		}
	}
	return data
}

func (c *Credentials) values() map[string]string {
	return map[string]string{
		AccessKeyIDKey: c.AccessKeyID, SecretAccessKeyKey: c.SecretAccessKey, SessionTokenKey: c.SessionToken,
		GCSCredentialsJSONKey: c.GCSServiceAccountJSON,
		AzureAccountKey:       c.AzureAccount, AzureKeyKey: c.AzureKey, AzureSASTokenKey: c.AzureSASToken,
	}
}

// schemes are the schemes c holds keys of, sorted.
func (c *Credentials) schemes() []string {
	values := c.values()
	var out []string
	for scheme, keys := range schemeKeys {
		for _, k := range keys {
			if values[k] != "" {
				out = append(out, scheme)
				break
			}
		}
	}
	sort.Strings(out)
	return out
}

// heldKeys are the keys c holds, sorted.
func (c *Credentials) heldKeys() []string {
	var out []string
	for k, v := range c.values() {
		if v != "" {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// forScheme returns the credentials a bucket of scheme uses: nil when c
// holds none of its keys. Credentials made for another scheme only are an
// error naming the keys this one expects: they were meant for another
// bucket. file:// ignores credentials (nothing is sent anywhere).
func (c *Credentials) forScheme(scheme string) (*Credentials, error) {
	if c == nil || scheme == "file" {
		return nil, nil //nolint:nilnil // none for this scheme
	}
	for _, s := range c.schemes() {
		if s == scheme {
			return c, nil
		}
	}
	expected, ok := expectedKeys[scheme]
	if !ok {
		expected = "none (this build has no credentials for " + scheme + "://)"
	}
	return nil, fmt.Errorf("the credentials hold %s, which are not for %s:// URLs: %s:// expects %s",
		strings.Join(c.heldKeys(), ", "), scheme, scheme, expected)
}
