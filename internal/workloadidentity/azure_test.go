package workloadidentity

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
)

// azurePod is a pod that opts in to Azure, with an init container and a
// container.
func azurePod(mods ...func(*corev1.Pod)) *corev1.Pod {
	p := testPod(func(p *corev1.Pod) { p.Labels = map[string]string{AzureUseLabel: "true"} })
	for _, m := range mods {
		m(p)
	}
	return p
}

const azureTokenFile = "/var/run/secrets/azure/tokens/azure-identity-token"

func TestMutateAzure(t *testing.T) {
	clientID := map[string]string{AzureClientIDAnnotation: "00000000-0000-0000-0000-000000000001"}
	tenantCfg := Config{Azure: AzureConfig{TenantID: "tenant-of-webhook"}}
	for _, tc := range []struct {
		name    string
		pod     *corev1.Pod
		sa      map[string]string
		cfg     Config
		wantErr string
		check   func(t *testing.T, p *corev1.Pod, res Result)
	}{
		{
			name: "AZURE_CLIENT_ID from the ServiceAccount, in containers and init containers",
			pod:  azurePod(), sa: clientID, cfg: tenantCfg,
			check: func(t *testing.T, p *corev1.Pod, _ Result) {
				wantEnvEverywhere(t, p, azureClientIDEnv, "00000000-0000-0000-0000-000000000001")
			},
		},
		{
			name: "AZURE_TENANT_ID from the webhook's configuration",
			pod:  azurePod(), sa: clientID, cfg: tenantCfg,
			check: func(t *testing.T, p *corev1.Pod, _ Result) {
				wantEnvEverywhere(t, p, azureTenantIDEnv, "tenant-of-webhook")
			},
		},
		{
			name: "AZURE_TENANT_ID annotation overrides the webhook's",
			pod:  azurePod(), sa: merge(clientID, map[string]string{AzureTenantIDAnnotation: "tenant-of-sa"}), cfg: tenantCfg,
			check: func(t *testing.T, p *corev1.Pod, _ Result) { wantEnvEverywhere(t, p, azureTenantIDEnv, "tenant-of-sa") },
		},
		{
			name: "no tenant anywhere: AZURE_TENANT_ID not injected, warned",
			pod:  azurePod(), sa: clientID,
			check: func(t *testing.T, p *corev1.Pod, res Result) {
				wantEnvEverywhere(t, p, azureTenantIDEnv, "")
				wantWarning(t, res, "AZURE_TENANT_ID is not injected")
			},
		},
		{
			name: "AZURE_FEDERATED_TOKEN_FILE at the documented path",
			pod:  azurePod(), sa: clientID, cfg: tenantCfg,
			check: func(t *testing.T, p *corev1.Pod, _ Result) {
				wantEnvEverywhere(t, p, azureFederatedTokenFileEnv, azureTokenFile)
			},
		},
		{
			name: "AZURE_AUTHORITY_HOST defaults to the public cloud",
			pod:  azurePod(), sa: clientID, cfg: tenantCfg,
			check: func(t *testing.T, p *corev1.Pod, _ Result) {
				wantEnvEverywhere(t, p, azureAuthorityHostEnv, "https://login.microsoftonline.com/")
			},
		},
		{
			name: "AZURE_AUTHORITY_HOST from the webhook's configuration",
			pod:  azurePod(), sa: clientID, cfg: Config{Azure: AzureConfig{AuthorityHost: "https://login.microsoftonline.us/"}},
			check: func(t *testing.T, p *corev1.Pod, _ Result) {
				wantEnvEverywhere(t, p, azureAuthorityHostEnv, "https://login.microsoftonline.us/")
			},
		},
		{
			name: "projected volume: name, path, audience, default expiration",
			pod:  azurePod(), sa: clientID, cfg: tenantCfg,
			check: func(t *testing.T, p *corev1.Pod, _ Result) {
				wantToken(t, p, "azure-identity-token", "azure-identity-token", "api://AzureADTokenExchange", 3600)
			},
		},
		{
			name: "audience from the webhook's configuration",
			pod:  azurePod(), sa: clientID, cfg: Config{Azure: AzureConfig{Audience: "api://custom"}},
			check: func(t *testing.T, p *corev1.Pod, _ Result) {
				wantToken(t, p, "azure-identity-token", "azure-identity-token", "api://custom", 3600)
			},
		},
		{
			name: "read-only mount in every container",
			pod:  azurePod(), sa: clientID, cfg: tenantCfg,
			check: func(t *testing.T, p *corev1.Pod, _ Result) {
				wantMountEverywhere(t, p, "azure-identity-token", "/var/run/secrets/azure/tokens")
			},
		},
		{
			name: "expiration from the ServiceAccount",
			pod:  azurePod(), sa: merge(clientID, map[string]string{AzureTokenExpirationAnnotation: "7200"}),
			check: func(t *testing.T, p *corev1.Pod, _ Result) {
				wantToken(t, p, "azure-identity-token", "azure-identity-token", AzureDefaultAudience, 7200)
			},
		},
		{
			name: "pod's expiration takes precedence over the ServiceAccount's",
			pod:  azurePod(annotate(AzureTokenExpirationAnnotation, "86400")),
			sa:   merge(clientID, map[string]string{AzureTokenExpirationAnnotation: "7200"}),
			check: func(t *testing.T, p *corev1.Pod, _ Result) {
				wantToken(t, p, "azure-identity-token", "azure-identity-token", AzureDefaultAudience, 86400)
			},
		},
		{
			name:    "ServiceAccount's expiration under the range refuses the pod",
			pod:     azurePod(),
			sa:      merge(clientID, map[string]string{AzureTokenExpirationAnnotation: "3599"}),
			wantErr: `ServiceAccount tenant/app annotation azure.workload.identity/service-account-token-expiration is "3599": want whole seconds from 3600 to 86400`,
		},
		{
			name:    "pod's expiration over the range refuses the pod",
			pod:     azurePod(annotate(AzureTokenExpirationAnnotation, "86401")),
			sa:      clientID,
			wantErr: `pod annotation azure.workload.identity/service-account-token-expiration is "86401"`,
		},
		{
			name:    "expiration that is not a number refuses the pod",
			pod:     azurePod(annotate(AzureTokenExpirationAnnotation, "1h")),
			sa:      clientID,
			wantErr: `is "1h": want whole seconds`,
		},
		{
			name: "skip-containers: semicolon-separated, trimmed",
			pod:  azurePod(annotate(AzureSkipContainersAnnotation, " init ; other")), sa: clientID, cfg: tenantCfg,
			check: func(t *testing.T, p *corev1.Pod, _ Result) {
				if len(p.Spec.InitContainers[0].Env) != 0 || len(p.Spec.InitContainers[0].VolumeMounts) != 0 {
					t.Errorf("skipped init container mutated: %+v", p.Spec.InitContainers[0])
				}
				if env(p.Spec.Containers[0])[azureClientIDEnv] == "" || !hasMount(&p.Spec.Containers[0], AzureTokenVolume) {
					t.Errorf("container not in the list not mutated: %+v", p.Spec.Containers[0])
				}
			},
		},
		{
			name: "a variable the container sets is kept, the others injected",
			pod: azurePod(func(p *corev1.Pod) {
				p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: azureClientIDEnv, Value: "mine"}}
			}),
			sa: clientID, cfg: tenantCfg,
			check: func(t *testing.T, p *corev1.Pod, _ Result) {
				e := env(p.Spec.Containers[0])
				if e[azureClientIDEnv] != "mine" || e[azureTenantIDEnv] != "tenant-of-webhook" {
					t.Errorf("env %v: want the pod's AZURE_CLIENT_ID kept and AZURE_TENANT_ID injected", e)
				}
				if n := countEnv(p.Spec.Containers[0], azureClientIDEnv); n != 1 {
					t.Errorf("AZURE_CLIENT_ID set %d times", n)
				}
			},
		},
		{
			name: "a variable set from valueFrom is kept",
			pod: azurePod(func(p *corev1.Pod) {
				p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: azureClientIDEnv, ValueFrom: &corev1.EnvVarSource{
					SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "k"},
				}}}
			}),
			sa: clientID, cfg: tenantCfg,
			check: func(t *testing.T, p *corev1.Pod, _ Result) {
				if n := countEnv(p.Spec.Containers[0], azureClientIDEnv); n != 1 || p.Spec.Containers[0].Env[0].ValueFrom == nil {
					t.Errorf("env %+v: want the pod's valueFrom kept alone", p.Spec.Containers[0].Env)
				}
			},
		},
		{
			name: "a mount of the volume the container has is kept",
			pod: azurePod(func(p *corev1.Pod) {
				p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: AzureTokenVolume, MountPath: "/elsewhere"}}
			}),
			sa: clientID, cfg: tenantCfg,
			check: func(t *testing.T, p *corev1.Pod, _ Result) {
				m := p.Spec.Containers[0].VolumeMounts
				if len(m) != 1 || m[0].MountPath != "/elsewhere" {
					t.Errorf("mounts %+v: want the pod's own kept alone", m)
				}
			},
		},
		{
			name: "a volume that already projects the token is kept, none added",
			pod: azurePod(func(p *corev1.Pod) {
				p.Spec.Volumes = []corev1.Volume{tokenVolume("own", AzureTokenFile, "api://own", 5000)}
			}),
			sa: clientID, cfg: tenantCfg,
			check: func(t *testing.T, p *corev1.Pod, _ Result) {
				if len(p.Spec.Volumes) != 1 || p.Spec.Volumes[0].Name != "own" {
					t.Errorf("volumes %+v: want only the pod's own", p.Spec.Volumes)
				}
			},
		},
		{
			name: "no client-id annotation: AZURE_CLIENT_ID left to the pod, warned",
			pod:  azurePod(), cfg: tenantCfg,
			check: func(t *testing.T, p *corev1.Pod, res Result) {
				wantEnvEverywhere(t, p, azureClientIDEnv, "")
				wantEnvEverywhere(t, p, azureFederatedTokenFileEnv, azureTokenFile)
				wantWarning(t, res, "no azure.workload.identity/client-id annotation")
			},
		},
		{
			name: "proxy sidecar asked for: admitted with a warning, no sidecar",
			pod:  azurePod(annotate(AzureInjectProxySidecarAnnotation, "true")), sa: clientID, cfg: tenantCfg,
			check: func(t *testing.T, p *corev1.Pod, res Result) {
				wantWarning(t, res, "no proxy sidecar is injected")
				if len(p.Spec.Containers) != 1 || len(p.Spec.InitContainers) != 1 {
					t.Errorf("containers added: %+v", p.Spec)
				}
			},
		},
		{
			name: "label other than \"true\": nothing",
			pod:  azurePod(func(p *corev1.Pod) { p.Labels[AzureUseLabel] = "True" }), sa: clientID, cfg: tenantCfg,
			check: func(t *testing.T, p *corev1.Pod, res Result) { wantUnchanged(t, p, res) },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := tc.pod.DeepCopy()
			res, err := Mutate(pod, testSA(tc.sa), tc.cfg)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				if !apiequality.Semantic.DeepEqual(pod, tc.pod) {
					t.Errorf("a refused pod was changed")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, pod, res)
		})
	}
}
