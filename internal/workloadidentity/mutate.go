package workloadidentity

import (
	"errors"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
)

// Provider is a cloud whose credentials Mutate gives a pod.
type Provider string

// The providers, in the order Mutate applies them.
const (
	Azure Provider = "azure"
	AWS   Provider = "aws"
)

// Result is what Mutate did to a pod.
type Result struct {
	// Providers are the clouds the pod asked for (AzureUseLabel) or its
	// ServiceAccount grants (the AWS role annotation), whether or not the
	// pod already had everything.
	Providers []Provider
	// Changed: the pod differs from what it was.
	Changed bool
	// Warnings are for whoever created the pod (admission warnings): an
	// annotation ignored or corrected, a variable left unset. Values the
	// tenant wrote are quoted and shortened.
	Warnings []string
}

// mirrorPodAnnotation marks the API server's copy of a kubelet's static pod.
const mirrorPodAnnotation = "kubernetes.io/config.mirror"

// Mutate gives pod the credentials its ServiceAccount sa and its own labels
// ask for: Azure's when the pod carries AzureUseLabel="true", AWS's when sa
// carries the role annotation and the pod not AWSSkipLabel, both when both.
// Other pods are left alone, and so are mirror pods, whose spec must stay
// the kubelet's. An error — an annotation upstream refuses — leaves pod
// untouched and says which annotation to fix; the pod should be denied.
//
// Mutate is idempotent (the registration may reinvoke it): what a pod
// already has is kept, as doc.go details per provider.
func Mutate(pod *corev1.Pod, sa *corev1.ServiceAccount, cfg Config) (Result, error) {
	if pod == nil || sa == nil {
		return Result{}, errors.New("workload identity: no pod or no ServiceAccount to read")
	}
	if _, ok := pod.Annotations[mirrorPodAnnotation]; ok {
		return Result{}, nil
	}
	cfg = cfg.withDefaults()
	var res Result
	// Every annotation is read before anything is written, so a refusal
	// leaves the pod as it came.
	azure, warnings, err := planAzure(pod, sa, cfg.Azure)
	if err != nil {
		return Result{}, err
	}
	res.Warnings = append(res.Warnings, warnings...)
	aws, warnings := planAWS(pod, sa, cfg.AWS)
	res.Warnings = append(res.Warnings, warnings...)
	if azure == nil && aws == nil {
		return res, nil
	}
	before := pod.DeepCopy()
	if azure != nil {
		azure.apply(pod)
		res.Providers = append(res.Providers, Azure)
	}
	if aws != nil {
		aws.apply(pod)
		res.Providers = append(res.Providers, AWS)
	}
	res.Changed = !apiequality.Semantic.DeepEqual(before, pod)
	return res, nil
}

// eachContainer calls f for every init container and container whose name
// is not in skip: both upstream webhooks mutate both kinds.
func eachContainer(pod *corev1.Pod, skip map[string]bool, f func(*corev1.Container)) {
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if !skip[list[i].Name] {
				f(&list[i])
			}
		}
	}
}

// hasEnv reports whether c sets any of names itself (by value or valueFrom;
// envFrom is not looked at, as upstream does not).
func hasEnv(c *corev1.Container, names ...string) bool {
	for _, e := range c.Env {
		for _, n := range names {
			if e.Name == n {
				return true
			}
		}
	}
	return false
}

// someContainerLacks reports whether a container Mutate would write to
// does not set the variable name itself.
func someContainerLacks(pod *corev1.Pod, skip map[string]bool, name string) bool {
	lacks := false
	eachContainer(pod, skip, func(c *corev1.Container) { lacks = lacks || !hasEnv(c, name) })
	return lacks
}

// hasMount reports whether c mounts a volume called volume, wherever.
func hasMount(c *corev1.Container, volume string) bool {
	for _, m := range c.VolumeMounts {
		if m.Name == volume {
			return true
		}
	}
	return false
}

// tokenVolume is a projected volume of one service-account token.
func tokenVolume(name, file, audience string, expiration int64) corev1.Volume {
	return corev1.Volume{
		Name: name,
		VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{
				Audience:          audience,
				ExpirationSeconds: &expiration,
				Path:              file,
			}}},
		}},
	}
}

// maxQuoted is how much of a tenant's value a message repeats.
const maxQuoted = 64

// quote is v quoted for a message, shortened to maxQuoted bytes: it is the
// tenant's text, and messages go back to the API server and into logs.
func quote(v string) string {
	if len(v) > maxQuoted {
		return strconv.Quote(v[:maxQuoted]) + "…"
	}
	return strconv.Quote(v)
}

// saRef names a ServiceAccount in messages.
func saRef(sa *corev1.ServiceAccount) string {
	return fmt.Sprintf("ServiceAccount %s/%s", sa.Namespace, sa.Name)
}
