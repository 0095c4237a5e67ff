// Package aws is the AWS platform: a pool's machines are EC2 instances,
// made by cluster-api-provider-aws (CAPA, which the user installs) from
// the AWSMachineTemplate rendered here, in the VPC the HostedCluster
// names, with the credentials of a Secret the user names. Cluster API's
// part is platform/clusterapi's.
package aws

import (
	"context"
	"errors"
	"regexp"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/controller/nodepool/platform"
	"hypershift.dev/internal/controller/nodepool/platform/clusterapi"
)

// Group and Version of CAPA's kinds (v1beta2, the version its CRDs
// store).
const (
	Group   = "infrastructure.cluster.x-k8s.io"
	Version = "v1beta2"
)

// DefaultProviderNamespace is where CAPA's controller runs, as its release
// manifests install it: an AWSClusterStaticIdentity's Secret must be
// there.
const DefaultProviderNamespace = "capa-system"

// Credential keys of CAPA's static identity Secret, which the user's
// Secret holds under the same names.
const (
	AccessKeyIDKey     = "AccessKeyID"
	SecretAccessKeyKey = "SecretAccessKey"
	SessionTokenKey    = "SessionToken"
)

var identityGVK = schema.GroupVersionKind{Group: Group, Version: Version, Kind: "AWSClusterStaticIdentity"}

// New is the AWS platform of the management cluster c; start runs Cluster
// API's controllers; providerNamespace is CAPA's ("":
// DefaultProviderNamespace).
func New(c client.Client, start func(context.Context) error, providerNamespace string) *clusterapi.Platform {
	return &clusterapi.Platform{Type: hypershiftv1alpha1.AWSPlatform, Client: c, Infra: Infrastructure(providerNamespace), Start: start}
}

// Infrastructure is CAPA's part of a pool, with CAPA running in
// providerNamespace ("": DefaultProviderNamespace).
func Infrastructure(providerNamespace string) clusterapi.Infrastructure {
	if providerNamespace == "" {
		providerNamespace = DefaultProviderNamespace
	}
	r := renderer{providerNamespace: providerNamespace}
	return clusterapi.Infrastructure{
		Group:               Group,
		Version:             Version,
		ClusterKind:         "AWSCluster",
		MachineKind:         "AWSMachine",
		MachineTemplateKind: "AWSMachineTemplate",
		ExternallyManaged:   true,
		ClusterSpec:         r.clusterSpec,
		ClusterObjects:      r.clusterObjects,
		Outside:             r.outside,
		MachineSpec:         machineSpec,
		Validate:            validate,
		NodeName:            nodeName,
	}
}

type renderer struct{ providerNamespace string }

// IdentityName is the AWSClusterStaticIdentity of the cluster of that
// control-plane namespace (cluster-scoped, as CAPA's identities are), and
// the name of its Secret in CAPA's namespace.
func IdentityName(controlPlaneNamespace string) string { return "hypershift-" + controlPlaneNamespace }

func validate(p *platform.Pool) error {
	switch {
	case p.HostedCluster.Spec.Platform.AWS == nil:
		return errors.New("HostedCluster has no spec.platform.aws")
	case p.NodePool.Spec.Platform.AWS == nil:
		return errors.New("spec.platform.aws is missing")
	}
	return nil
}

func tags(cluster, pool []hypershiftv1alpha1.AWSResourceTag) map[string]any {
	out := map[string]any{}
	for _, t := range cluster {
		out[t.Key] = t.Value
	}
	for _, t := range pool {
		out[t.Key] = t.Value
	}
	return out
}

func (r renderer) clusterSpec(p *platform.Pool) map[string]any {
	aws := p.HostedCluster.Spec.Platform.AWS
	if aws == nil {
		return map[string]any{}
	}
	s := map[string]any{
		"region":      aws.Region,
		"network":     map[string]any{"vpc": map[string]any{"id": aws.VPC}},
		"identityRef": map[string]any{"kind": identityGVK.Kind, "name": IdentityName(clusterapi.ControlPlaneNamespace(p))},
	}
	if len(aws.ResourceTags) > 0 {
		s["additionalTags"] = tags(aws.ResourceTags, nil)
	}
	return s
}

// clusterObjects are the cluster's identity: the user's keys copied to
// CAPA's namespace, and an AWSClusterStaticIdentity of them that only the
// control-plane namespace may use.
func (r renderer) clusterObjects(ctx context.Context, c client.Reader, p *platform.Pool) ([]*unstructured.Unstructured, error) {
	aws := p.HostedCluster.Spec.Platform.AWS
	if aws == nil {
		return nil, nil
	}
	const field = "spec.platform.aws.credentialsSecret"
	s, err := clusterapi.UserSecret(ctx, c, p.HostedCluster, aws.CredentialsSecret.Name, field)
	if err != nil {
		return nil, err
	}
	data := map[string][]byte{}
	for _, k := range []string{AccessKeyIDKey, SecretAccessKeyKey, SessionTokenKey} {
		v, ok := s.Data[k]
		if !ok && k != SessionTokenKey {
			return nil, clusterapi.Problem("Secret %s/%s, named by %s, has no key %s", s.Namespace, s.Name, field, k)
		}
		if ok {
			if len(v) > 4096 || !credentialValue.Match(v) {
				return nil, clusterapi.Problem("Secret %s/%s, named by %s: %s is not an AWS credential (printable, at most 4096 bytes)", s.Namespace, s.Name, field, k)
			}
			data[k] = v
		}
	}
	if err := c.Get(ctx, client.ObjectKey{Name: r.providerNamespace}, &corev1.Namespace{}); apierrors.IsNotFound(err) {
		return nil, clusterapi.Problem("namespace %s, where cluster-api-provider-aws runs and its identities' Secrets must be, does not exist: install the provider (docs/platforms.md)", r.providerNamespace)
	} else if err != nil {
		return nil, err
	}
	ns := clusterapi.ControlPlaneNamespace(p)
	name := IdentityName(ns)
	identity := clusterapi.Object(identityGVK, "", name, p.HostedCluster.Name, map[string]any{"spec": map[string]any{
		"secretRef":         name,
		"allowedNamespaces": map[string]any{"list": []any{ns}},
	}})
	return []*unstructured.Unstructured{clusterapi.SecretObject(r.providerNamespace, name, p.HostedCluster.Name, data), identity}, nil
}

// credentialValue is a key ID, secret key or session token: printable
// ASCII, bounded.
var credentialValue = regexp.MustCompile(`^[!-~]+$`)

func (r renderer) outside(p *platform.Pool) []clusterapi.ObjectRef {
	name := IdentityName(clusterapi.ControlPlaneNamespace(p))
	return []clusterapi.ObjectRef{
		{GVK: identityGVK, Name: name},
		{GVK: schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, Namespace: r.providerNamespace, Name: name},
	}
}

// machineSpec is the AWSMachineTemplate's machine. The userdata is put in
// the instance's own user data (cloudInit.insecureSkipSecretsManager): a
// node image needs no AWS CLI to fetch it from Secrets Manager. It holds
// a single-use bootstrap token that expires (docs/platforms.md).
func machineSpec(p *platform.Pool) map[string]any {
	aws := p.NodePool.Spec.Platform.AWS
	if aws == nil {
		return map[string]any{}
	}
	s := map[string]any{
		"instanceType": aws.InstanceType,
		"ami":          map[string]any{"id": aws.AMI},
		"subnet":       map[string]any{"id": aws.Subnet.ID},
		"cloudInit":    map[string]any{"insecureSkipSecretsManager": true},
		// IMDSv2 only, one hop: the node reads its metadata (join
		// --provider-id-from aws), its pods cannot, nor the userdata's
		// token.
		"instanceMetadataOptions": map[string]any{
			"httpEndpoint": "enabled", "httpTokens": "required", "httpPutResponseHopLimit": int64(1), "instanceMetadataTags": "disabled",
		},
	}
	if len(aws.SecurityGroups) > 0 {
		var groups []any
		for _, g := range aws.SecurityGroups {
			groups = append(groups, map[string]any{"id": g.ID})
		}
		s["additionalSecurityGroups"] = groups
	}
	if aws.InstanceProfile != "" {
		s["iamInstanceProfile"] = aws.InstanceProfile
	}
	root := map[string]any{"size": int64(120), "type": "gp3"}
	if v := aws.RootVolume.Size; v > 0 {
		root["size"] = v
	}
	if v := aws.RootVolume.Type; v != "" {
		root["type"] = v
	}
	if v := aws.RootVolume.IOPS; v > 0 {
		root["iops"] = v
	}
	if v := aws.RootVolume.Encrypted; v != nil {
		root["encrypted"] = *v
	}
	s["rootVolume"] = root
	var clusterTags []hypershiftv1alpha1.AWSResourceTag
	if hc := p.HostedCluster.Spec.Platform.AWS; hc != nil {
		clusterTags = hc.ResourceTags
	}
	if t := tags(clusterTags, aws.ResourceTags); len(t) > 0 {
		s["additionalTags"] = t
	}
	return s
}

// nodeName is the instance's private DNS name, which CAPA reports among
// the AWSMachine's addresses (InternalDNS) and which is the Node's name.
func nodeName(m *unstructured.Unstructured) string {
	addrs, _, _ := unstructured.NestedSlice(m.Object, "status", "addresses")
	for _, a := range addrs {
		am, ok := a.(map[string]any)
		if !ok || am["type"] != "InternalDNS" {
			continue
		}
		if s, ok := am["address"].(string); ok {
			return s
		}
	}
	return ""
}
