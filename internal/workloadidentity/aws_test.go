package workloadidentity

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

const (
	testRoleARN  = "arn:aws:iam::111122223333:role/s3-reader"
	awsTokenPath = "/var/run/secrets/eks.amazonaws.com/serviceaccount/token"
	awsMountPath = "/var/run/secrets/eks.amazonaws.com/serviceaccount"
)

func TestMutateAWS(t *testing.T) {
	role := map[string]string{"eks.amazonaws.com/role-arn": testRoleARN}
	with := func(kv ...string) map[string]string {
		m := merge(role)
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	for _, tc := range []struct {
		name  string
		pod   *corev1.Pod
		sa    map[string]string
		cfg   Config
		check func(t *testing.T, p *corev1.Pod, res Result)
	}{
		{
			name: "AWS_ROLE_ARN and AWS_WEB_IDENTITY_TOKEN_FILE in containers and init containers",
			pod:  testPod(), sa: role,
			check: func(t *testing.T, p *corev1.Pod, _ Result) {
				wantEnvEverywhere(t, p, awsRoleARNEnv, testRoleARN)
				wantEnvEverywhere(t, p, awsWebIdentityTokenFileEnv, awsTokenPath)
			},
		},
		{
			name: "projected volume: name, path, default audience and expiration",
			pod:  testPod(), sa: role,
			check: func(t *testing.T, p *corev1.Pod, _ Result) {
				wantToken(t, p, "aws-iam-token", "token", "sts.amazonaws.com", 86400)
			},
		},
		{
			name: "read-only mount in every container",
			pod:  testPod(), sa: role,
			check: func(t *testing.T, p *corev1.Pod, _ Result) { wantMountEverywhere(t, p, "aws-iam-token", awsMountPath) },
		},
		{
			name: "mount path from the webhook's configuration",
			pod:  testPod(), sa: role, cfg: Config{AWS: AWSConfig{TokenMountPath: "/var/run/aws"}},
			check: func(t *testing.T, p *corev1.Pod, _ Result) {
				wantMountEverywhere(t, p, "aws-iam-token", "/var/run/aws")
				wantEnvEverywhere(t, p, awsWebIdentityTokenFileEnv, "/var/run/aws/token")
			},
		},
		{
			name: "audience from the ServiceAccount",
			pod:  testPod(), sa: with("eks.amazonaws.com/audience", "sts.example"),
			check: func(t *testing.T, p *corev1.Pod, _ Result) {
				wantToken(t, p, "aws-iam-token", "token", "sts.example", 86400)
			},
		},
		{
			name: "audience from the webhook's configuration",
			pod:  testPod(), sa: role, cfg: Config{AWS: AWSConfig{Audience: "sts.cn"}},
			check: func(t *testing.T, p *corev1.Pod, _ Result) {
				wantToken(t, p, "aws-iam-token", "token", "sts.cn", 86400)
			},
		},
		{
			name: "empty audience annotation: the default, warned",
			pod:  testPod(), sa: with("eks.amazonaws.com/audience", ""),
			check: func(t *testing.T, p *corev1.Pod, res Result) {
				wantToken(t, p, "aws-iam-token", "token", "sts.amazonaws.com", 86400)
				wantWarning(t, res, "eks.amazonaws.com/audience is empty")
			},
		},
		{
			name: "region configured: AWS_REGION and AWS_DEFAULT_REGION",
			pod:  testPod(), sa: role, cfg: Config{AWS: AWSConfig{Region: "eu-west-1"}},
			check: func(t *testing.T, p *corev1.Pod, _ Result) {
				wantEnvEverywhere(t, p, awsRegionEnv, "eu-west-1")
				wantEnvEverywhere(t, p, awsDefaultRegionEnv, "eu-west-1")
			},
		},
		{
			name: "no region configured: neither",
			pod:  testPod(), sa: role,
			check: func(t *testing.T, p *corev1.Pod, _ Result) {
				wantEnvEverywhere(t, p, awsRegionEnv, "")
				wantEnvEverywhere(t, p, awsDefaultRegionEnv, "")
			},
		},
		{
			name: "regional STS from the webhook's configuration",
			pod:  testPod(), sa: role, cfg: Config{AWS: AWSConfig{RegionalSTS: true}},
			check: func(t *testing.T, p *corev1.Pod, _ Result) {
				wantEnvEverywhere(t, p, awsSTSRegionalEndpointsEnv, "regional")
			},
		},
		{
			name: "regional STS from the ServiceAccount",
			pod:  testPod(), sa: with("eks.amazonaws.com/sts-regional-endpoints", "true"),
			check: func(t *testing.T, p *corev1.Pod, _ Result) {
				wantEnvEverywhere(t, p, awsSTSRegionalEndpointsEnv, "regional")
			},
		},
		{
			name: "ServiceAccount's \"false\" overrides the webhook's regional STS",
			pod:  testPod(), sa: with("eks.amazonaws.com/sts-regional-endpoints", "false"), cfg: Config{AWS: AWSConfig{RegionalSTS: true}},
			check: func(t *testing.T, p *corev1.Pod, _ Result) { wantEnvEverywhere(t, p, awsSTSRegionalEndpointsEnv, "") },
		},
		{
			name: "unreadable regional STS annotation: ignored, warned",
			pod:  testPod(), sa: with("eks.amazonaws.com/sts-regional-endpoints", "yes"), cfg: Config{AWS: AWSConfig{RegionalSTS: true}},
			check: func(t *testing.T, p *corev1.Pod, res Result) {
				wantEnvEverywhere(t, p, awsSTSRegionalEndpointsEnv, "regional")
				wantWarning(t, res, `sts-regional-endpoints is "yes"`)
			},
		},
		{
			name: "expiration from the webhook's configuration",
			pod:  testPod(), sa: role, cfg: Config{AWS: AWSConfig{TokenExpiration: 43200}},
			check: func(t *testing.T, p *corev1.Pod, _ Result) {
				wantToken(t, p, "aws-iam-token", "token", "sts.amazonaws.com", 43200)
			},
		},
		{
			name: "expiration from the ServiceAccount",
			pod:  testPod(), sa: with("eks.amazonaws.com/token-expiration", "3600"),
			check: func(t *testing.T, p *corev1.Pod, _ Result) {
				wantToken(t, p, "aws-iam-token", "token", "sts.amazonaws.com", 3600)
			},
		},
		{
			name: "pod's expiration takes precedence over the ServiceAccount's",
			pod:  testPod(annotate("eks.amazonaws.com/token-expiration", "7200")), sa: with("eks.amazonaws.com/token-expiration", "3600"),
			check: func(t *testing.T, p *corev1.Pod, _ Result) {
				wantToken(t, p, "aws-iam-token", "token", "sts.amazonaws.com", 7200)
			},
		},
		{
			name: "expiration under the floor is raised to 600, warned",
			pod:  testPod(annotate("eks.amazonaws.com/token-expiration", "0")), sa: role,
			check: func(t *testing.T, p *corev1.Pod, res Result) {
				wantToken(t, p, "aws-iam-token", "token", "sts.amazonaws.com", 600)
				wantWarning(t, res, "raised to the minimum, 600 seconds")
			},
		},
		{
			name: "unreadable ServiceAccount expiration falls back to the webhook's",
			pod:  testPod(), sa: with("eks.amazonaws.com/token-expiration", "1d"), cfg: Config{AWS: AWSConfig{TokenExpiration: 43200}},
			check: func(t *testing.T, p *corev1.Pod, res Result) {
				wantToken(t, p, "aws-iam-token", "token", "sts.amazonaws.com", 43200)
				wantWarning(t, res, `token-expiration is "1d", not whole seconds: using 43200`)
			},
		},
		{
			name: "unreadable pod expiration falls back to the ServiceAccount's",
			pod:  testPod(annotate("eks.amazonaws.com/token-expiration", "soon")), sa: with("eks.amazonaws.com/token-expiration", "3600"),
			check: func(t *testing.T, p *corev1.Pod, _ Result) {
				wantToken(t, p, "aws-iam-token", "token", "sts.amazonaws.com", 3600)
			},
		},
		{
			name: "skip-containers: comma-separated, init containers too",
			pod:  testPod(annotate("eks.amazonaws.com/skip-containers", "init,other")), sa: role,
			check: func(t *testing.T, p *corev1.Pod, _ Result) {
				if len(p.Spec.InitContainers[0].Env) != 0 || len(p.Spec.InitContainers[0].VolumeMounts) != 0 {
					t.Errorf("skipped init container mutated: %+v", p.Spec.InitContainers[0])
				}
				if env(p.Spec.Containers[0])[awsRoleARNEnv] != testRoleARN {
					t.Errorf("container not in the list not mutated: %+v", p.Spec.Containers[0])
				}
			},
		},
		{
			name: "skip-containers: a list that does not parse skips nothing, warned",
			pod:  testPod(annotate("eks.amazonaws.com/skip-containers", `"init,app`)), sa: role,
			check: func(t *testing.T, p *corev1.Pod, res Result) {
				wantEnvEverywhere(t, p, awsRoleARNEnv, testRoleARN)
				wantWarning(t, res, "no container is skipped")
			},
		},
		{
			name: "pod sets AWS_ROLE_ARN: neither of its group injected, the rest is",
			pod: testPod(func(p *corev1.Pod) {
				p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: awsRoleARNEnv, Value: "arn:aws:iam::999999999999:role/mine"}}
			}),
			sa: role, cfg: Config{AWS: AWSConfig{Region: "eu-west-1"}},
			check: func(t *testing.T, p *corev1.Pod, _ Result) {
				e := env(p.Spec.Containers[0])
				if e[awsRoleARNEnv] != "arn:aws:iam::999999999999:role/mine" || countEnv(p.Spec.Containers[0], awsRoleARNEnv) != 1 {
					t.Errorf("env %v: want the pod's AWS_ROLE_ARN kept alone", e)
				}
				if _, ok := e[awsWebIdentityTokenFileEnv]; ok {
					t.Errorf("env %v: AWS_WEB_IDENTITY_TOKEN_FILE injected beside the pod's AWS_ROLE_ARN", e)
				}
				if e[awsRegionEnv] != "eu-west-1" || !hasMount(&p.Spec.Containers[0], AWSTokenVolume) {
					t.Errorf("container %+v: want region and mount injected", p.Spec.Containers[0])
				}
				if e := env(p.Spec.InitContainers[0]); e[awsRoleARNEnv] != testRoleARN || e[awsWebIdentityTokenFileEnv] != awsTokenPath {
					t.Errorf("init container env %v: want both injected, it sets neither", e)
				}
			},
		},
		{
			name: "pod sets AWS_WEB_IDENTITY_TOKEN_FILE: AWS_ROLE_ARN not injected",
			pod: testPod(func(p *corev1.Pod) {
				p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: awsWebIdentityTokenFileEnv, Value: "/mine/token"}}
			}),
			sa: role,
			check: func(t *testing.T, p *corev1.Pod, _ Result) {
				if e := env(p.Spec.Containers[0]); len(e) != 1 || e[awsWebIdentityTokenFileEnv] != "/mine/token" {
					t.Errorf("env %v: want the pod's token file alone", e)
				}
			},
		},
		{
			name: "pod sets AWS_DEFAULT_REGION: AWS_REGION not injected",
			pod: testPod(func(p *corev1.Pod) {
				p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: awsDefaultRegionEnv, Value: "us-east-2"}}
			}),
			sa: role, cfg: Config{AWS: AWSConfig{Region: "eu-west-1"}},
			check: func(t *testing.T, p *corev1.Pod, _ Result) {
				e := env(p.Spec.Containers[0])
				if _, ok := e[awsRegionEnv]; ok || e[awsDefaultRegionEnv] != "us-east-2" {
					t.Errorf("env %v: want the pod's AWS_DEFAULT_REGION alone", e)
				}
			},
		},
		{
			name: "pod sets AWS_REGION: AWS_DEFAULT_REGION not injected",
			pod: testPod(func(p *corev1.Pod) {
				p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: awsRegionEnv, Value: "us-east-2"}}
			}),
			sa: role, cfg: Config{AWS: AWSConfig{Region: "eu-west-1"}},
			check: func(t *testing.T, p *corev1.Pod, _ Result) {
				e := env(p.Spec.Containers[0])
				if _, ok := e[awsDefaultRegionEnv]; ok || e[awsRegionEnv] != "us-east-2" {
					t.Errorf("env %v: want the pod's AWS_REGION alone", e)
				}
			},
		},
		{
			name: "pod sets AWS_STS_REGIONAL_ENDPOINTS: kept",
			pod: testPod(func(p *corev1.Pod) {
				p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: awsSTSRegionalEndpointsEnv, Value: "legacy"}}
			}),
			sa: role, cfg: Config{AWS: AWSConfig{RegionalSTS: true}},
			check: func(t *testing.T, p *corev1.Pod, _ Result) {
				if e := env(p.Spec.Containers[0]); e[awsSTSRegionalEndpointsEnv] != "legacy" || countEnv(p.Spec.Containers[0], awsSTSRegionalEndpointsEnv) != 1 {
					t.Errorf("env %v: want the pod's value kept alone", e)
				}
			},
		},
		{
			name: "container that sets one of each group gets nothing, not even the mount",
			pod: testPod(func(p *corev1.Pod) {
				p.Spec.Containers[0].Env = []corev1.EnvVar{
					{Name: awsWebIdentityTokenFileEnv, Value: "/mine"},
					{Name: awsDefaultRegionEnv, Value: "us-east-2"},
					{Name: awsSTSRegionalEndpointsEnv, Value: "regional"},
				}
			}),
			sa: role,
			check: func(t *testing.T, p *corev1.Pod, _ Result) {
				if c := p.Spec.Containers[0]; len(c.Env) != 3 || len(c.VolumeMounts) != 0 {
					t.Errorf("container %+v: want it left alone", c)
				}
				if !hasMount(&p.Spec.InitContainers[0], AWSTokenVolume) {
					t.Errorf("init container not mutated")
				}
			},
		},
		{
			name: "a volume and a mount named aws-iam-token are kept whatever they hold",
			pod: testPod(func(p *corev1.Pod) {
				p.Spec.Volumes = []corev1.Volume{{Name: AWSTokenVolume, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/token"}}}}
				p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: AWSTokenVolume, MountPath: "/elsewhere"}}
			}),
			sa: role,
			check: func(t *testing.T, p *corev1.Pod, _ Result) {
				if len(p.Spec.Volumes) != 1 || p.Spec.Volumes[0].HostPath == nil {
					t.Errorf("volumes %+v: want the pod's own alone", p.Spec.Volumes)
				}
				if m := p.Spec.Containers[0].VolumeMounts; len(m) != 1 || m[0].MountPath != "/elsewhere" {
					t.Errorf("mounts %+v: want the pod's own alone", m)
				}
				wantEnvEverywhere(t, p, awsRoleARNEnv, testRoleARN)
			},
		},
		{
			name: "role that is not an ARN: injected as upstream does, warned",
			pod:  testPod(), sa: map[string]string{"eks.amazonaws.com/role-arn": "s3-reader"},
			check: func(t *testing.T, p *corev1.Pod, res Result) {
				wantEnvEverywhere(t, p, awsRoleARNEnv, "s3-reader")
				wantWarning(t, res, `role-arn is "s3-reader", not an IAM role ARN`)
			},
		},
		{
			name: "ARN of another partition with a path: no warning",
			pod:  testPod(), sa: map[string]string{"eks.amazonaws.com/role-arn": "arn:aws-cn:iam::111122223333:role/team/s3-reader"},
			check: func(t *testing.T, _ *corev1.Pod, res Result) {
				if len(res.Warnings) > 0 {
					t.Errorf("warnings %q", res.Warnings)
				}
			},
		},
		{
			name: "pod selecting Windows nodes gets a Windows token path",
			pod: testPod(func(p *corev1.Pod) {
				p.Spec.NodeSelector = map[string]string{"kubernetes.io/os": "windows"}
			}),
			sa: role,
			check: func(t *testing.T, p *corev1.Pod, _ Result) {
				wantEnvEverywhere(t, p, awsWebIdentityTokenFileEnv, `C:\var\run\secrets\eks.amazonaws.com\serviceaccount\token`)
				wantMountEverywhere(t, p, "aws-iam-token", awsMountPath)
			},
		},
		{
			name: "annotation prefix from the webhook's configuration",
			pod:  testPod(), sa: map[string]string{"iam.example.com/role-arn": testRoleARN}, cfg: Config{AWS: AWSConfig{AnnotationPrefix: "iam.example.com"}},
			check: func(t *testing.T, p *corev1.Pod, _ Result) { wantEnvEverywhere(t, p, awsRoleARNEnv, testRoleARN) },
		},
		{
			name: "the default prefix is not read under another",
			pod:  testPod(), sa: role, cfg: Config{AWS: AWSConfig{AnnotationPrefix: "iam.example.com"}},
			check: wantUnchanged,
		},
		{
			name: "pod labelled to skip: nothing",
			pod:  testPod(func(p *corev1.Pod) { p.Labels = map[string]string{AWSSkipLabel: ""} }), sa: role,
			check: wantUnchanged,
		},
		{
			name: "empty role: nothing",
			pod:  testPod(), sa: map[string]string{"eks.amazonaws.com/role-arn": ""},
			check: wantUnchanged,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := tc.pod.DeepCopy()
			res, err := Mutate(pod, testSA(tc.sa), tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, pod, res)
		})
	}
}
