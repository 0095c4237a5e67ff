package workloadidentity

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// The variables the Azure Identity SDKs and MSAL read.
const (
	azureClientIDEnv           = "AZURE_CLIENT_ID"
	azureTenantIDEnv           = "AZURE_TENANT_ID"
	azureFederatedTokenFileEnv = "AZURE_FEDERATED_TOKEN_FILE"
	azureAuthorityHostEnv      = "AZURE_AUTHORITY_HOST"
)

// azurePlan is what Mutate gives an Azure pod, read from its annotations
// and its ServiceAccount's before anything is written.
type azurePlan struct {
	env        []corev1.EnvVar
	audience   string
	expiration int64
	skip       map[string]bool
}

// planAzure reads the Azure contract for pod, or returns nil when the pod
// does not carry AzureUseLabel="true" (the exact value upstream's
// objectSelector matches). The client-id annotation is optional, as
// upstream documents: without it the pod gets the token and every other
// variable, and sets AZURE_CLIENT_ID itself.
func planAzure(pod *corev1.Pod, sa *corev1.ServiceAccount, cfg AzureConfig) (*azurePlan, []string, error) {
	if pod.Labels[AzureUseLabel] != "true" {
		return nil, nil, nil
	}
	expiration, err := azureTokenExpiration(pod, sa)
	if err != nil {
		return nil, nil, err
	}
	skip := azureSkipContainers(pod)
	var warnings []string
	clientID := sa.Annotations[AzureClientIDAnnotation]
	if clientID == "" && someContainerLacks(pod, skip, azureClientIDEnv) {
		warnings = append(warnings, fmt.Sprintf("%s has no %s annotation: AZURE_CLIENT_ID is not injected; annotate it with the identity's client ID or set AZURE_CLIENT_ID in the pod",
			saRef(sa), AzureClientIDAnnotation))
	}
	// Upstream takes the annotation whenever it is present, even empty.
	tenantID, ok := sa.Annotations[AzureTenantIDAnnotation]
	if !ok {
		tenantID = cfg.TenantID
	}
	if tenantID == "" && someContainerLacks(pod, skip, azureTenantIDEnv) {
		warnings = append(warnings, fmt.Sprintf("neither %s (annotation %s) nor the webhook names an Azure tenant: AZURE_TENANT_ID is not injected",
			saRef(sa), AzureTenantIDAnnotation))
	}
	if _, ok := pod.Annotations[AzureInjectProxySidecarAnnotation]; ok {
		warnings = append(warnings, fmt.Sprintf("annotation %s is not supported here: no proxy sidecar is injected; use AZURE_FEDERATED_TOKEN_FILE with an Azure Identity SDK",
			AzureInjectProxySidecarAnnotation))
	}
	return &azurePlan{
		env: []corev1.EnvVar{
			{Name: azureClientIDEnv, Value: clientID},
			{Name: azureTenantIDEnv, Value: tenantID},
			{Name: azureFederatedTokenFileEnv, Value: path.Join(AzureTokenMountPath, AzureTokenFile)},
			{Name: azureAuthorityHostEnv, Value: cfg.AuthorityHost},
		},
		audience:   cfg.Audience,
		expiration: expiration,
		skip:       skip,
	}, warnings, nil
}

// azureTokenExpiration is the pod's annotation, else the ServiceAccount's,
// else the default. As upstream, a value that is not whole seconds within
// [AzureMinTokenExpiration, AzureMaxTokenExpiration] refuses the pod rather
// than being corrected: the tenant asked for a lifetime it would not get.
func azureTokenExpiration(pod *corev1.Pod, sa *corev1.ServiceAccount) (int64, error) {
	where, v := "pod", pod.Annotations[AzureTokenExpirationAnnotation]
	if v == "" {
		where, v = saRef(sa), sa.Annotations[AzureTokenExpirationAnnotation]
	}
	if v == "" {
		return AzureDefaultTokenExpiration, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < AzureMinTokenExpiration || n > AzureMaxTokenExpiration {
		return 0, fmt.Errorf("%s annotation %s is %s: want whole seconds from %d to %d, or no annotation for %d",
			where, AzureTokenExpirationAnnotation, quote(v), AzureMinTokenExpiration, AzureMaxTokenExpiration, AzureDefaultTokenExpiration)
	}
	return n, nil
}

// azureSkipContainers reads the pod's semicolon-separated list of container
// names, each trimmed of spaces as upstream does.
func azureSkipContainers(pod *corev1.Pod) map[string]bool {
	v := pod.Annotations[AzureSkipContainersAnnotation]
	if v == "" {
		return nil
	}
	skip := map[string]bool{}
	for _, name := range strings.Split(v, ";") {
		skip[strings.TrimSpace(name)] = true
	}
	return skip
}

// apply writes the plan into pod, keeping what the pod already has, as
// upstream v1.5 (the release whose layout its documentation publishes)
// does: a variable the container sets itself (by name, value or valueFrom)
// is kept, and an empty one is not injected; a mount of AzureTokenVolume is
// kept wherever it points; the volume is not added when any volume already
// projects a token to AzureTokenFile.
func (p *azurePlan) apply(pod *corev1.Pod) {
	eachContainer(pod, p.skip, func(c *corev1.Container) {
		for _, e := range p.env {
			if e.Value != "" && !hasEnv(c, e.Name) {
				c.Env = append(c.Env, e)
			}
		}
		if !hasMount(c, AzureTokenVolume) {
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: AzureTokenVolume, MountPath: AzureTokenMountPath, ReadOnly: true})
		}
	})
	if !projectsToken(pod, AzureTokenFile) {
		pod.Spec.Volumes = append(pod.Spec.Volumes, tokenVolume(AzureTokenVolume, AzureTokenFile, p.audience, p.expiration))
	}
}

// projectsToken reports whether a volume of pod projects a service-account
// token to file.
func projectsToken(pod *corev1.Pod, file string) bool {
	for _, v := range pod.Spec.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, s := range v.Projected.Sources {
			if s.ServiceAccountToken != nil && s.ServiceAccountToken.Path == file {
				return true
			}
		}
	}
	return false
}
