package workloadidentity

import (
	"encoding/csv"
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// The variables the AWS SDKs read.
const (
	awsRoleARNEnv              = "AWS_ROLE_ARN"
	awsWebIdentityTokenFileEnv = "AWS_WEB_IDENTITY_TOKEN_FILE" //nolint:gosec // G101: a variable's name, not a credential
	awsRegionEnv               = "AWS_REGION"
	awsDefaultRegionEnv        = "AWS_DEFAULT_REGION"
	awsSTSRegionalEndpointsEnv = "AWS_STS_REGIONAL_ENDPOINTS"
)

// awsRoleARN is the shape upstream checks a role ARN against: any AWS
// partition, a 12-digit account, a role name with an optional path.
var awsRoleARN = regexp.MustCompile(`^arn:aws[a-z0-9-]*:iam::[0-9]{12}:role/[\w+=,.@/-]+$`)

// awsPlan is what Mutate gives an AWS pod, read from its annotations and
// its ServiceAccount's before anything is written.
type awsPlan struct {
	roleARN     string
	tokenFile   string
	mountPath   string
	audience    string
	expiration  int64
	region      string
	regionalSTS bool
	skip        map[string]bool
}

// planAWS reads the AWS contract for pod, or returns nil when sa has no
// role (or an empty one) or the pod carries AWSSkipLabel. Upstream refuses
// no pod for a bad annotation: it falls back to a default and logs; here
// the fallback is the same and the log is a warning to the pod's creator.
func planAWS(pod *corev1.Pod, sa *corev1.ServiceAccount, cfg AWSConfig) (*awsPlan, []string) {
	if _, ok := pod.Labels[AWSSkipLabel]; ok {
		return nil, nil
	}
	key := func(suffix string) string { return cfg.AnnotationPrefix + "/" + suffix }
	roleARN := sa.Annotations[key(AWSRoleARNSuffix)]
	if roleARN == "" {
		return nil, nil
	}
	var warnings []string
	warn := func(format string, args ...any) { warnings = append(warnings, fmt.Sprintf(format, args...)) }
	if !awsRoleARN.MatchString(roleARN) {
		// Upstream logs this and injects the value all the same.
		warn("%s annotation %s is %s, not an IAM role ARN (arn:aws:iam::<12-digit account>:role/<name>): injected as is, STS will likely refuse it",
			saRef(sa), key(AWSRoleARNSuffix), quote(roleARN))
	}
	p := &awsPlan{
		roleARN:     roleARN,
		mountPath:   cfg.TokenMountPath,
		tokenFile:   path.Join(cfg.TokenMountPath, AWSTokenFile),
		audience:    cfg.Audience,
		expiration:  cfg.TokenExpiration,
		region:      cfg.Region,
		regionalSTS: cfg.RegionalSTS,
	}
	if v, ok := sa.Annotations[key(AWSAudienceSuffix)]; ok {
		if v == "" {
			// Upstream would project a token with no audience, which the API
			// server issues for itself and STS refuses: never what is meant.
			warn("%s annotation %s is empty: using the default audience %s", saRef(sa), key(AWSAudienceSuffix), quote(cfg.Audience))
		} else {
			p.audience = v
		}
	}
	if v, ok := sa.Annotations[key(AWSRegionalSTSSuffix)]; ok {
		if b, err := strconv.ParseBool(v); err != nil {
			warn("%s annotation %s is %s, not true or false: ignored", saRef(sa), key(AWSRegionalSTSSuffix), quote(v))
		} else {
			p.regionalSTS = b
		}
	}
	// The ServiceAccount's lifetime, then the pod's, each falling back to
	// the one before it when unreadable.
	if v, ok := sa.Annotations[key(AWSTokenExpirationSuffix)]; ok {
		p.expiration = awsTokenExpiration(saRef(sa), key(AWSTokenExpirationSuffix), v, p.expiration, warn)
	}
	if v, ok := pod.Annotations[key(AWSTokenExpirationSuffix)]; ok {
		p.expiration = awsTokenExpiration("pod", key(AWSTokenExpirationSuffix), v, p.expiration, warn)
	}
	p.skip = awsSkipContainers(pod, key(AWSSkipContainersSuffix), warn)
	if windowsPod(pod) {
		p.tokenFile = "C:" + strings.ReplaceAll(p.tokenFile, "/", `\`)
	}
	return p, warnings
}

// awsTokenExpiration reads annotation key's value v of where: a value that
// is not whole seconds keeps fallback, one below the API server's floor is
// raised to it, both as upstream does. Upstream sets no ceiling; the API
// server refuses a lifetime over 2^32 seconds itself and caps the rest to
// its --service-account-max-token-expiration.
func awsTokenExpiration(where, key, v string, fallback int64, warn func(string, ...any)) int64 {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		warn("%s annotation %s is %s, not whole seconds: using %d", where, key, quote(v), fallback)
		return fallback
	}
	if n < AWSMinTokenExpiration {
		warn("%s annotation %s is %d: raised to the minimum, %d seconds", where, key, n, AWSMinTokenExpiration)
		return AWSMinTokenExpiration
	}
	return n
}

// awsSkipContainers reads the pod's comma-separated (CSV, so names may be
// quoted) list of container names; a list that does not parse skips none,
// as upstream.
func awsSkipContainers(pod *corev1.Pod, key string, warn func(string, ...any)) map[string]bool {
	v, ok := pod.Annotations[key]
	if !ok {
		return nil
	}
	names, err := csv.NewReader(strings.NewReader(v)).Read()
	if err != nil {
		warn("pod annotation %s is %s, not a comma-separated list of container names: no container is skipped", key, quote(v))
		return nil
	}
	skip := map[string]bool{}
	for _, n := range names {
		skip[n] = true
	}
	return skip
}

// windowsPod: upstream gives pods that select Windows nodes by
// nodeSelector (not by affinity or spec.os) a Windows token path.
func windowsPod(pod *corev1.Pod) bool {
	return pod.Spec.NodeSelector[corev1.LabelOSStable] == "windows" || pod.Spec.NodeSelector["beta.kubernetes.io/os"] == "windows"
}

// apply writes the plan into pod, keeping what the pod already has, as
// upstream does: the variables come in groups — AWS_ROLE_ARN with
// AWS_WEB_IDENTITY_TOKEN_FILE, AWS_REGION with AWS_DEFAULT_REGION — and a
// container that sets either of a group (by name, value or valueFrom) gets
// neither; AWS_STS_REGIONAL_ENDPOINTS likewise. A mount and a volume named
// AWSTokenVolume are kept whatever they hold. A container that sets one of
// each of the three groups gets nothing, not even the mount: upstream takes
// it as wired by its owner, who may read a token of their own.
func (p *awsPlan) apply(pod *corev1.Pod) {
	eachContainer(pod, p.skip, func(c *corev1.Container) {
		if hasEnv(c, awsRoleARNEnv, awsWebIdentityTokenFileEnv) && hasEnv(c, awsRegionEnv, awsDefaultRegionEnv) && hasEnv(c, awsSTSRegionalEndpointsEnv) {
			return
		}
		if !hasEnv(c, awsRoleARNEnv, awsWebIdentityTokenFileEnv) {
			c.Env = append(c.Env,
				corev1.EnvVar{Name: awsRoleARNEnv, Value: p.roleARN},
				corev1.EnvVar{Name: awsWebIdentityTokenFileEnv, Value: p.tokenFile})
		}
		if p.region != "" && !hasEnv(c, awsRegionEnv, awsDefaultRegionEnv) {
			c.Env = append(c.Env,
				corev1.EnvVar{Name: awsDefaultRegionEnv, Value: p.region},
				corev1.EnvVar{Name: awsRegionEnv, Value: p.region})
		}
		if p.regionalSTS && !hasEnv(c, awsSTSRegionalEndpointsEnv) {
			c.Env = append(c.Env, corev1.EnvVar{Name: awsSTSRegionalEndpointsEnv, Value: "regional"})
		}
		if !hasMount(c, AWSTokenVolume) {
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: AWSTokenVolume, MountPath: p.mountPath, ReadOnly: true})
		}
	})
	for _, v := range pod.Spec.Volumes {
		if v.Name == AWSTokenVolume {
			return
		}
	}
	pod.Spec.Volumes = append(pod.Spec.Volumes, tokenVolume(AWSTokenVolume, AWSTokenFile, p.audience, p.expiration))
}
