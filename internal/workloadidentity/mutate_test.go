package workloadidentity

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// testPod is a pod of ServiceAccount app with init container "init" and
// container "app", neither with variables or mounts.
func testPod(mods ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "tenant"},
		Spec: corev1.PodSpec{
			ServiceAccountName: "app",
			InitContainers:     []corev1.Container{{Name: "init", Image: "busybox"}},
			Containers:         []corev1.Container{{Name: "app", Image: "nginx"}},
		},
	}
	for _, m := range mods {
		m(p)
	}
	return p
}

func testSA(annotations map[string]string) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "tenant", Annotations: annotations}}
}

func annotate(key, value string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[key] = value
	}
}

func merge(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

func env(c corev1.Container) map[string]string {
	out := map[string]string{}
	for _, e := range c.Env {
		out[e.Name] = e.Value
	}
	return out
}

func countEnv(c corev1.Container, name string) int {
	n := 0
	for _, e := range c.Env {
		if e.Name == name {
			n++
		}
	}
	return n
}

func allContainers(p *corev1.Pod) []corev1.Container {
	return append(append([]corev1.Container{}, p.Spec.InitContainers...), p.Spec.Containers...)
}

// wantEnvEverywhere: every container sets name to value once; value ""
// means no container sets it.
func wantEnvEverywhere(t *testing.T, p *corev1.Pod, name, value string) {
	t.Helper()
	for _, c := range allContainers(p) {
		got, ok := env(c)[name]
		switch {
		case value == "" && ok:
			t.Errorf("container %s: %s=%q, want it unset", c.Name, name, got)
		case value != "" && (got != value || countEnv(c, name) != 1):
			t.Errorf("container %s: %s=%q (set %d times), want %q once", c.Name, name, got, countEnv(c, name), value)
		}
	}
}

func wantMountEverywhere(t *testing.T, p *corev1.Pod, volume, path string) {
	t.Helper()
	for _, c := range allContainers(p) {
		var found []corev1.VolumeMount
		for _, m := range c.VolumeMounts {
			if m.Name == volume {
				found = append(found, m)
			}
		}
		if len(found) != 1 || found[0].MountPath != path || !found[0].ReadOnly {
			t.Errorf("container %s mounts %s as %+v, want once, read-only at %s", c.Name, volume, found, path)
		}
	}
}

// wantToken: the pod has one volume called volume, projecting one token to
// path with audience and expiration.
func wantToken(t *testing.T, p *corev1.Pod, volume, path, audience string, expiration int64) {
	t.Helper()
	var found []corev1.Volume
	for _, v := range p.Spec.Volumes {
		if v.Name == volume {
			found = append(found, v)
		}
	}
	if len(found) != 1 || found[0].Projected == nil || len(found[0].Projected.Sources) != 1 || found[0].Projected.Sources[0].ServiceAccountToken == nil {
		t.Fatalf("volumes %+v: want one projected token volume %s", p.Spec.Volumes, volume)
	}
	tok := found[0].Projected.Sources[0].ServiceAccountToken
	if tok.Path != path || tok.Audience != audience || tok.ExpirationSeconds == nil || *tok.ExpirationSeconds != expiration {
		exp := int64(-1)
		if tok.ExpirationSeconds != nil {
			exp = *tok.ExpirationSeconds
		}
		t.Errorf("token path %q audience %q expiration %d, want %q %q %d", tok.Path, tok.Audience, exp, path, audience, expiration)
	}
}

func wantWarning(t *testing.T, res Result, part string) {
	t.Helper()
	for _, w := range res.Warnings {
		if strings.Contains(w, part) {
			return
		}
	}
	t.Errorf("warnings %q: want one containing %q", res.Warnings, part)
}

// wantUnchanged: Mutate reported nothing done and p has nothing a
// provider adds (testPod has no variables, mounts or volumes).
func wantUnchanged(t *testing.T, p *corev1.Pod, res Result) {
	t.Helper()
	if res.Changed || len(res.Providers) > 0 {
		t.Errorf("result %+v, want nothing done", res)
	}
	for _, c := range allContainers(p) {
		if len(c.Env) > 0 || len(c.VolumeMounts) > 0 {
			t.Errorf("container %s mutated: %+v", c.Name, c)
		}
	}
	if len(p.Spec.Volumes) > 0 {
		t.Errorf("volumes added: %+v", p.Spec.Volumes)
	}
}

func TestMutateBothNeitherAndNever(t *testing.T) {
	azureSA := map[string]string{AzureClientIDAnnotation: "11111111-1111-1111-1111-111111111111"}
	awsSA := map[string]string{"eks.amazonaws.com/role-arn": "arn:aws:iam::111122223333:role/s3-reader"}
	cfg := Config{Azure: AzureConfig{TenantID: "t"}}
	for _, tc := range []struct {
		name  string
		pod   *corev1.Pod
		sa    map[string]string
		check func(t *testing.T, p *corev1.Pod, res Result)
	}{
		{
			name: "both providers at once",
			pod:  azurePod(), sa: merge(azureSA, awsSA),
			check: func(t *testing.T, p *corev1.Pod, res Result) {
				if len(res.Providers) != 2 || res.Providers[0] != Azure || res.Providers[1] != AWS || !res.Changed {
					t.Errorf("result %+v, want both providers, changed", res)
				}
				wantEnvEverywhere(t, p, azureClientIDEnv, "11111111-1111-1111-1111-111111111111")
				wantEnvEverywhere(t, p, awsRoleARNEnv, "arn:aws:iam::111122223333:role/s3-reader")
				wantToken(t, p, "azure-identity-token", "azure-identity-token", "api://AzureADTokenExchange", 3600)
				wantToken(t, p, "aws-iam-token", "token", "sts.amazonaws.com", 86400)
				wantMountEverywhere(t, p, "azure-identity-token", "/var/run/secrets/azure/tokens")
				wantMountEverywhere(t, p, "aws-iam-token", "/var/run/secrets/eks.amazonaws.com/serviceaccount")
			},
		},
		{
			name: "unannotated ServiceAccount, unlabelled pod: nothing",
			pod:  testPod(), sa: nil,
			check: wantUnchanged,
		},
		{
			name: "Azure ServiceAccount without the pod's label: nothing",
			pod:  testPod(), sa: azureSA,
			check: wantUnchanged,
		},
		{
			name:  "mirror pod: nothing, whatever asks",
			pod:   azurePod(annotate("kubernetes.io/config.mirror", "hash")),
			sa:    merge(azureSA, awsSA),
			check: wantUnchanged,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := tc.pod.DeepCopy()
			res, err := Mutate(pod, testSA(tc.sa), cfg)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, pod, res)
		})
	}
}

// TestMutateIsIdempotent: a reinvoked webhook changes nothing the second
// time, for each provider and both.
func TestMutateIsIdempotent(t *testing.T) {
	sa := testSA(map[string]string{
		AzureClientIDAnnotation:                    "11111111-1111-1111-1111-111111111111",
		"eks.amazonaws.com/role-arn":               "arn:aws:iam::111122223333:role/s3-reader",
		"eks.amazonaws.com/sts-regional-endpoints": "true",
	})
	cfg := Config{Azure: AzureConfig{TenantID: "t"}, AWS: AWSConfig{Region: "eu-west-1"}}
	for _, pod := range []*corev1.Pod{azurePod(), testPod()} {
		first, err := Mutate(pod, sa, cfg)
		if err != nil || !first.Changed {
			t.Fatalf("first: %+v %v, want changed", first, err)
		}
		once := pod.DeepCopy()
		second, err := Mutate(pod, sa, cfg)
		if err != nil || second.Changed || !apiequality.Semantic.DeepEqual(once, pod) {
			t.Errorf("second: %+v %v, want nothing changed; diff of pods: %v", second, err, !apiequality.Semantic.DeepEqual(once, pod))
		}
	}
}

func TestMutateRefusesNil(t *testing.T) {
	if _, err := Mutate(nil, testSA(nil), Config{}); err == nil {
		t.Error("nil pod: no error")
	}
	if _, err := Mutate(testPod(), nil, Config{}); err == nil {
		t.Error("nil ServiceAccount: no error")
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{name: "zero config takes the defaults"},
		{name: "authority host not https", cfg: Config{Azure: AzureConfig{AuthorityHost: "http://login.microsoftonline.com/"}}, wantErr: "azure authority host"},
		{name: "annotation prefix not a domain", cfg: Config{AWS: AWSConfig{AnnotationPrefix: "Not/A/Domain"}}, wantErr: "aws annotation prefix"},
		{name: "token expiration under the API server's floor", cfg: Config{AWS: AWSConfig{TokenExpiration: 599}}, wantErr: "aws token expiration 599"},
		{name: "relative mount path", cfg: Config{AWS: AWSConfig{TokenMountPath: "var/run"}}, wantErr: "aws token mount path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("Validate() = %v, want error containing %q", err, tc.wantErr)
			}
		})
	}
}
