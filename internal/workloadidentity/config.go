package workloadidentity

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// The Azure Workload Identity contract: the label and annotations a tenant
// writes, and where the token lands. See doc.go for what each one does.
const (
	// AzureUseLabel, set to "true" on a pod, opts the pod in. Upstream
	// enforces it with the webhook registration's objectSelector; one
	// registration serves both clouds here, so Mutate checks it.
	AzureUseLabel = "azure.workload.identity/use"

	AzureClientIDAnnotation        = "azure.workload.identity/client-id"
	AzureTenantIDAnnotation        = "azure.workload.identity/tenant-id"
	AzureTokenExpirationAnnotation = "azure.workload.identity/service-account-token-expiration"
	AzureSkipContainersAnnotation  = "azure.workload.identity/skip-containers"
	// AzureInjectProxySidecarAnnotation asks upstream for its IMDS proxy
	// sidecar; not injected here (a warning says so).
	AzureInjectProxySidecarAnnotation = "azure.workload.identity/inject-proxy-sidecar"

	// AzureTokenVolume is the projected volume's name, AzureTokenMountPath
	// where every container mounts it and AzureTokenFile the token's name
	// inside it: the layout the upstream documentation publishes.
	AzureTokenVolume    = "azure-identity-token"
	AzureTokenMountPath = "/var/run/secrets/azure/tokens" //nolint:gosec // G101: a path, not a credential
	AzureTokenFile      = "azure-identity-token"

	AzureDefaultAudience      = "api://AzureADTokenExchange"
	AzureDefaultAuthorityHost = "https://login.microsoftonline.com/"

	// The Azure token's lifetime in seconds: the default and the range an
	// annotation may ask for. Entra ID tokens live 24 hours whatever the
	// Kubernetes token's lifetime.
	AzureDefaultTokenExpiration = int64(3600)
	AzureMinTokenExpiration     = int64(3600)
	AzureMaxTokenExpiration     = int64(86400)
)

// The AWS pod identity webhook (IAM Roles for Service Accounts) contract.
// Its annotations are AWSConfig.AnnotationPrefix + "/" + a suffix below.
const (
	AWSDefaultAnnotationPrefix = "eks.amazonaws.com"

	AWSRoleARNSuffix         = "role-arn"
	AWSAudienceSuffix        = "audience"
	AWSRegionalSTSSuffix     = "sts-regional-endpoints"
	AWSTokenExpirationSuffix = "token-expiration"
	AWSSkipContainersSuffix  = "skip-containers"

	// AWSSkipLabel on a pod opts it out, whatever its ServiceAccount says.
	// Upstream's registration excludes such pods with an objectSelector;
	// Mutate checks it for the same reason as AzureUseLabel.
	AWSSkipLabel = "eks.amazonaws.com/skip-pod-identity-webhook"

	// AWSTokenVolume is the projected volume's name and AWSTokenFile the
	// token's name inside it; the mount path is AWSConfig.TokenMountPath.
	AWSTokenVolume = "aws-iam-token" //nolint:gosec // G101: a volume's name, not a credential
	AWSTokenFile   = "token"

	AWSDefaultTokenMountPath = "/var/run/secrets/eks.amazonaws.com/serviceaccount" //nolint:gosec // G101: a path, not a credential
	AWSDefaultAudience       = "sts.amazonaws.com"
	// AWSDefaultTokenExpiration is upstream's default token lifetime in
	// seconds; AWSMinTokenExpiration is the API server's floor, which
	// upstream raises shorter annotations to.
	AWSDefaultTokenExpiration = int64(86400)
	AWSMinTokenExpiration     = int64(600)
)

// Config is what the webhook applies to every pod: the defaults that
// annotations override. Each field is one of the upstream webhooks' flags
// or settings; an empty field takes upstream's default, so the zero Config
// is usable.
type Config struct {
	Azure AzureConfig
	AWS   AWSConfig
}

// AzureConfig is the Azure half of Config.
type AzureConfig struct {
	// TenantID is AZURE_TENANT_ID for pods whose ServiceAccount names no
	// tenant (upstream: AZURE_TENANT_ID in the webhook's config, required
	// there). Empty: such pods get no AZURE_TENANT_ID, and a warning says
	// so; a cluster that serves only AWS workloads needs none.
	TenantID string
	// AuthorityHost is AZURE_AUTHORITY_HOST, the Entra ID endpoint of the
	// cloud (upstream derives it from AZURE_ENVIRONMENT); empty: the public
	// cloud's, AzureDefaultAuthorityHost.
	AuthorityHost string
	// Audience is the Azure token's audience (upstream --audience); empty:
	// AzureDefaultAudience.
	Audience string
}

// AWSConfig is the AWS half of Config.
type AWSConfig struct {
	// AnnotationPrefix is the domain of the ServiceAccount and pod
	// annotations (upstream --annotation-prefix); empty: eks.amazonaws.com.
	AnnotationPrefix string
	// Region, when set, is injected as AWS_REGION and AWS_DEFAULT_REGION
	// (upstream --aws-default-region).
	Region string
	// Audience is the token's audience when the ServiceAccount names none
	// (upstream --token-audience); empty: sts.amazonaws.com.
	Audience string
	// TokenExpiration is the token's lifetime in seconds when no annotation
	// sets it (upstream --token-expiration); zero: 86400.
	TokenExpiration int64
	// RegionalSTS injects AWS_STS_REGIONAL_ENDPOINTS=regional unless the
	// ServiceAccount's annotation says otherwise (upstream
	// --sts-regional-endpoint).
	RegionalSTS bool
	// TokenMountPath is where containers mount the token (upstream
	// --token-mount-path); empty: AWSDefaultTokenMountPath.
	TokenMountPath string
}

// DefaultConfig is the zero Config with every default filled in.
func DefaultConfig() Config { return Config{}.withDefaults() }

func (c Config) withDefaults() Config {
	def := func(v *string, d string) {
		if *v == "" {
			*v = d
		}
	}
	def(&c.Azure.AuthorityHost, AzureDefaultAuthorityHost)
	def(&c.Azure.Audience, AzureDefaultAudience)
	def(&c.AWS.AnnotationPrefix, AWSDefaultAnnotationPrefix)
	def(&c.AWS.Audience, AWSDefaultAudience)
	def(&c.AWS.TokenMountPath, AWSDefaultTokenMountPath)
	if c.AWS.TokenExpiration == 0 {
		c.AWS.TokenExpiration = AWSDefaultTokenExpiration
	}
	return c
}

// Validate reports the settings that would inject something a pod cannot
// use, naming each. Upstream checks none of these at start; a mistake here
// would otherwise surface as every pod failing to authenticate.
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	if u, err := url.Parse(c.Azure.AuthorityHost); err != nil || u.Scheme != "https" || u.Host == "" {
		errs = append(errs, fmt.Errorf("azure authority host %q: want an https URL such as %s", c.Azure.AuthorityHost, AzureDefaultAuthorityHost))
	}
	if msgs := validation.IsDNS1123Subdomain(c.AWS.AnnotationPrefix); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("aws annotation prefix %q: want a DNS subdomain such as %s: %s", c.AWS.AnnotationPrefix, AWSDefaultAnnotationPrefix, strings.Join(msgs, "; ")))
	}
	if c.AWS.TokenExpiration < AWSMinTokenExpiration {
		errs = append(errs, fmt.Errorf("aws token expiration %d: the API server issues no token shorter than %d seconds", c.AWS.TokenExpiration, AWSMinTokenExpiration))
	}
	if !path.IsAbs(c.AWS.TokenMountPath) || path.Clean(c.AWS.TokenMountPath) != c.AWS.TokenMountPath {
		errs = append(errs, fmt.Errorf("aws token mount path %q: want a clean absolute path such as %s", c.AWS.TokenMountPath, AWSDefaultTokenMountPath))
	}
	return errors.Join(errs...)
}
