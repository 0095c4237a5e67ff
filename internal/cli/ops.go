package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/clusterclient"
	"hypershift.dev/internal/install"
)

// The changes to hosted clusters that both the command line and the
// dashboard make (this file and changes.go). Each is the API request of one
// command, made with the caller's client: neither has an authority of its
// own, and what the management kubeconfig may not do is refused by the
// management API server. They take no cobra command, and print nothing.

// ClusterSpec is what `hypershift create cluster` makes: a HostedCluster and,
// with NodePoolReplicas or on platform none, a NodePool named like it.
type ClusterSpec struct {
	Namespace, Name    string
	Platform           hypershiftv1alpha1.PlatformType
	KubernetesVersion  string
	ServiceCIDR        string
	ClusterCIDR        string
	AvailabilityPolicy string
	SingleProcess      bool
	IdleAfter          time.Duration
	// How the API server (and the Konnectivity server with it) is
	// published, and etcd's volumes (kube runtime).
	Publishing        string
	APIServerAddress  string
	APIServerNodePort int32
	EtcdStorageClass  string
	EtcdStorageSize   string
	// StorageClassMappings are GUEST=INFRA pairs: the hosted cluster's
	// StorageClass GUEST is made of the management cluster's INFRA
	// (platform Host on the kube runtime, docs/volumes.md).
	StorageClassMappings []string
	// NodePoolReplicas, when set, adds a NodePool of this many nodes; a
	// none cluster without it gets a pool that takes as many as join.
	NodePoolReplicas *int32
	// The service-account issuer (docs/workload-identity.md): its URL,
	// where its documents are published and with which credentials'
	// Secret, whether they outlive the cluster, and the Secret of a
	// signing key brought.
	OIDCIssuerURL, OIDCStorage, OIDCCredentialsSecret string
	OIDCKeepOnDelete                                  bool
	SigningKeySecret                                  string
	// WorkloadIdentityWebhook runs the workload-identity webhook, with
	// AzureTenantID and AWSRegion as its defaults.
	WorkloadIdentityWebhook  bool
	AzureTenantID, AWSRegion string
	// Infra is the infrastructure of a cluster of platform KubeVirt, AWS
	// (whose region is AWSRegion) or Azure; Machine, each node's machine
	// of its pool.
	Infra   PlatformInfra
	Machine PlatformMachine
}

// Validate checks the options before anything is made. Its messages name
// the command's flags, which the dashboard's fields are named after.
func (o *ClusterSpec) Validate() error {
	if o.Name == "" {
		return fmt.Errorf("--name is required: `hypershift create cluster %s --name NAME`", strings.ToLower(string(o.Platform)))
	}
	if err := o.validateIdleHibernation(); err != nil {
		return err
	}
	if o.SingleProcess && o.AvailabilityPolicy != string(hypershiftv1alpha1.SingleReplica) {
		return fmt.Errorf("--single-process-control-plane needs --availability-policy SingleReplica: replicated control planes run each component apart")
	}
	switch hypershiftv1alpha1.PublishingStrategyType(o.Publishing) {
	case hypershiftv1alpha1.HostPort:
		if o.APIServerAddress != "" || o.APIServerNodePort != 0 {
			return fmt.Errorf("--api-server-address and --api-server-node-port are for --api-server-publishing NodePort or LoadBalancer; HostPort publishes at the operator's endpoint host")
		}
	case hypershiftv1alpha1.NodePort:
		if o.APIServerAddress == "" {
			return fmt.Errorf("--api-server-publishing NodePort needs --api-server-address: the address of the management cluster's nodes that clients use")
		}
		if o.APIServerNodePort < 0 || o.APIServerNodePort > 65535 {
			return fmt.Errorf("--api-server-node-port %d is not a port", o.APIServerNodePort)
		}
	case hypershiftv1alpha1.LoadBalancer:
		if o.APIServerAddress == "" {
			return fmt.Errorf("--api-server-publishing LoadBalancer needs --api-server-address: the DNS name clients use, pointed at the load balancer")
		}
		if o.APIServerNodePort != 0 {
			return fmt.Errorf("--api-server-node-port is for --api-server-publishing NodePort")
		}
	default:
		return fmt.Errorf("--api-server-publishing %q: use HostPort, NodePort or LoadBalancer", o.Publishing)
	}
	if o.EtcdStorageSize != "" {
		q, err := resource.ParseQuantity(o.EtcdStorageSize)
		if err != nil || q.Sign() <= 0 {
			return fmt.Errorf("--etcd-storage-size %q is not a size such as 8Gi", o.EtcdStorageSize)
		}
	}
	if err := o.validatePlatform(); err != nil {
		return err
	}
	if _, err := o.storageDriver(); err != nil {
		return err
	}
	return o.validateIssuer()
}

// validateIssuer checks how the issuer's flags go together; the URLs'
// shape is the API's to judge (its admission rules name the field, in
// CreateCluster's dry run).
func (o *ClusterSpec) validateIssuer() error {
	switch {
	case o.OIDCStorage != "" && o.OIDCIssuerURL == "":
		return fmt.Errorf("--oidc-storage needs --oidc-issuer-url: the URL the storage is served at, which the documents name")
	case o.OIDCCredentialsSecret != "" && o.OIDCStorage == "":
		return fmt.Errorf("--oidc-credentials-secret is for --oidc-storage")
	case o.OIDCKeepOnDelete && o.OIDCStorage == "":
		return fmt.Errorf("--oidc-keep-on-delete is for --oidc-storage")
	case (o.AzureTenantID != "" || (o.AWSRegion != "" && o.Platform != hypershiftv1alpha1.AWSPlatform)) && !o.WorkloadIdentityWebhook:
		return fmt.Errorf("--azure-tenant-id and --aws-region are settings of --workload-identity-webhook (--aws-region also of platform aws)")
	}
	if o.OIDCStorage != "" {
		if scheme, _, ok := strings.Cut(o.OIDCStorage, "://"); !ok || !slices.Contains([]string{"s3", "gs", "azblob", "file"}, scheme) {
			return fmt.Errorf("--oidc-storage %q: use s3://BUCKET/PREFIX?region=…, gs://BUCKET/PREFIX, azblob://CONTAINER/PREFIX or file:///DIRECTORY", o.OIDCStorage)
		}
	}
	for flag, name := range map[string]string{"--oidc-credentials-secret": o.OIDCCredentialsSecret, "--service-account-signing-key-secret": o.SigningKeySecret} {
		if name == "" {
			continue
		}
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			return fmt.Errorf("%s %q is not a Secret name: %s", flag, name, strings.Join(errs, "; "))
		}
	}
	return nil
}

// checkSecrets says which Secrets the spec names are missing, with how
// to make them: before anything is created, as a cluster would otherwise
// wait for them.
func (o *ClusterSpec) checkSecrets(ctx context.Context, c client.Reader) error {
	secrets := append([]namedSecret{
		{"--service-account-signing-key-secret", o.SigningKeySecret, fmt.Sprintf("create it with `kubectl -n %s create secret generic %s --from-file=key=KEY.pem`", o.Namespace, o.SigningKeySecret)},
		{"--oidc-credentials-secret", o.OIDCCredentialsSecret, "create it with the bucket's credentials, as for backups (docs/workload-identity.md)"},
	}, o.Infra.secrets(o.Namespace)...)
	for _, s := range secrets {
		if s.name == "" {
			continue
		}
		if err := c.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: s.name}, &corev1.Secret{}); apierrors.IsNotFound(err) {
			return fmt.Errorf("%s: Secret %s/%s does not exist: %s", s.flag, o.Namespace, s.name, s.fix)
		} else if err != nil {
			return err
		}
	}
	return nil
}

// namedSecret is a Secret a flag names, and how to make it.
type namedSecret struct{ flag, name, fix string }

// DefaultPublishing sets the publishing to what the management plane
// implies (install.DefaultPublishing) and returns that choice, or nil when
// HostPort stays; fix is the error's advice when it cannot choose.
func (o *ClusterSpec) DefaultPublishing(ctx context.Context, c client.Reader, fix string) (*install.NodePortChoice, error) {
	choice, err := install.DefaultPublishing(ctx, c, fix)
	if err != nil || choice == nil {
		return nil, err
	}
	o.Publishing, o.APIServerAddress = string(choice.Publishing), choice.Address
	return choice, nil
}

// Objects are what Create makes: the namespace, the HostedCluster and the
// NodePool (nil when there is none).
func (o *ClusterSpec) Objects() (*corev1.Namespace, *hypershiftv1alpha1.HostedCluster, *hypershiftv1alpha1.NodePool) {
	ns := &corev1.Namespace{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: o.Namespace},
	}
	hc := hypershiftv1alpha1.NewHostedCluster(o.Namespace, o.Name, o.Platform, o.KubernetesVersion)
	hc.Spec.Networking.ClusterNetwork[0].CIDR = o.ClusterCIDR
	hc.Spec.Networking.ServiceNetwork[0].CIDR = o.ServiceCIDR
	hc.Spec.ControllerAvailabilityPolicy = hypershiftv1alpha1.AvailabilityPolicy(o.AvailabilityPolicy)
	hc.Spec.Platform, _ = o.Infra.Spec(o.Platform, o.AWSRegion) // checked in Validate
	if driver, _ := o.storageDriver(); driver != nil {          // checked in Validate
		hc.Spec.Platform.Host = &hypershiftv1alpha1.HostPlatformSpec{StorageDriver: driver}
	}
	if o.SingleProcess {
		hc.Annotations = map[string]string{hypershiftv1alpha1.SingleProcessControlPlaneAnnotation: "true"}
	}
	if o.IdleAfter > 0 {
		hc.Spec.Hibernation = &hypershiftv1alpha1.HibernationSpec{IdleAfter: &metav1.Duration{Duration: o.IdleAfter}}
	}
	hc.Spec.Services = hypershiftv1alpha1.APIServerPublishing(hypershiftv1alpha1.PublishingStrategyType(o.Publishing), o.APIServerAddress, o.APIServerNodePort)
	if o.EtcdStorageClass != "" || o.EtcdStorageSize != "" {
		hc.Spec.Etcd.Managed = hypershiftv1alpha1.EtcdVolume(o.EtcdStorageClass, o.EtcdStorageSize) // the size is checked in Validate
	}
	hc.Spec.IssuerURL = o.OIDCIssuerURL
	if o.SigningKeySecret != "" {
		hc.Spec.ServiceAccountSigningKey = &corev1.LocalObjectReference{Name: o.SigningKeySecret}
	}
	if o.WorkloadIdentityWebhook {
		hc.Spec.WorkloadIdentityWebhook = &hypershiftv1alpha1.WorkloadIdentityWebhookSpec{AzureTenantID: o.AzureTenantID, AWSRegion: o.AWSRegion}
	}
	if o.OIDCStorage != "" {
		hc.Spec.OIDCPublishing = &hypershiftv1alpha1.OIDCPublishingSpec{StorageURL: o.OIDCStorage, KeepOnDelete: o.OIDCKeepOnDelete}
		if o.OIDCCredentialsSecret != "" {
			hc.Spec.OIDCPublishing.CredentialsSecret = &corev1.LocalObjectReference{Name: o.OIDCCredentialsSecret}
		}
	}
	var np *hypershiftv1alpha1.NodePool
	switch {
	case o.NodePoolReplicas != nil:
		np = NewNodePool(o.Namespace, o.Name, o.Name, o.Platform, *o.NodePoolReplicas)
		np.Spec.Platform, _ = o.Machine.NodePoolPlatform(o.Platform) // checked in Validate
	case o.Platform == hypershiftv1alpha1.NonePlatform:
		// Hosts join a None cluster's pool with `hypershift join`; without a
		// count it takes as many as join.
		np = NewNodePool(o.Namespace, o.Name, o.Name, o.Platform, 0)
		np.Spec.Replicas = nil
	}
	return ns, hc, np
}

// CreateCluster makes the objects of o after the API server has checked them all
// in a dry run (clusterclient.ValidateAll), and calls created after each
// one it made. o must be valid (Validate).
func CreateCluster(ctx context.Context, c client.Client, o *ClusterSpec, created func(client.Object)) (*hypershiftv1alpha1.HostedCluster, *hypershiftv1alpha1.NodePool, error) {
	ns, hc, np := o.Objects()
	objs := []client.Object{hc}
	if np != nil {
		objs = append(objs, np)
	}
	if err := clusterclient.ValidateAll(ctx, c, ns, objs...); err != nil {
		return nil, nil, err
	}
	if err := o.checkSecrets(ctx, c); err != nil {
		return nil, nil, err
	}
	if err := c.Create(ctx, hc); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil, nil, fmt.Errorf("hosted cluster %s/%s already exists: choose another --name, or remove it with `hypershift destroy cluster --name %s`", o.Namespace, o.Name, o.Name)
		}
		return nil, nil, err
	}
	created(hc)
	if np != nil {
		if err := CreateNodePool(ctx, c, np); err != nil {
			return hc, nil, err
		}
		created(np)
	}
	return hc, np, nil
}

// NewNodePool is a NodePool of replicas nodes for a cluster.
func NewNodePool(namespace, name, cluster string, platform hypershiftv1alpha1.PlatformType, replicas int32) *hypershiftv1alpha1.NodePool {
	return &hypershiftv1alpha1.NodePool{
		TypeMeta:   metav1.TypeMeta{APIVersion: hypershiftv1alpha1.GroupVersion.String(), Kind: "NodePool"},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: hypershiftv1alpha1.NodePoolSpec{
			ClusterName: cluster,
			Replicas:    &replicas,
			Platform:    hypershiftv1alpha1.NodePoolPlatform{Type: platform},
			Management:  hypershiftv1alpha1.NodePoolManagement{UpgradeType: hypershiftv1alpha1.UpgradeTypeReplace},
		},
	}
}

// CreateNodePool creates np, saying how to scale it when it exists.
func CreateNodePool(ctx context.Context, c client.Client, np *hypershiftv1alpha1.NodePool) error {
	if err := c.Create(ctx, np); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("nodepool %s/%s already exists: scale it with `kubectl -n %s scale nodepool %s --replicas N`", np.Namespace, np.Name, np.Namespace, np.Name)
		}
		return err
	}
	return nil
}
