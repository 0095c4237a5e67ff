package kube

import (
	"path"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hypershift.dev/internal/image"
	"hypershift.dev/internal/release"
	"hypershift.dev/internal/runtime"
)

// The pods run as an unprivileged user; numeric, so the image needs no
// passwd entry for it.
const runAsID int64 = 65532

// Volumes every pod has besides its files.
const (
	// dirVolume is the emptyDir that holds Dir/<component> for every
	// component of a pod, mounted in each of its containers (the
	// Konnectivity server's socket, the API server reads). Each directory
	// is a subPath of it: the kubelet makes it writable like the volume,
	// where a directory the container runtime makes for the files mounted
	// into it would be root's.
	dirVolume = "dir"
	// tmpVolume is /tmp: the root filesystem is read-only.
	tmpVolume = "tmp"
	// dataVolume is the claim template of a workload with data.
	dataVolume = "data"
)

// Probe timing. The liveness probe allows minutes of failure: it only
// restarts a hung process, never one that waits for its peers (an etcd
// member without quorum, an API server without etcd).
const (
	readinessPeriod           = 5
	livenessPeriod            = 10
	livenessFailureThreshold  = 30
	probeTimeoutSeconds       = 5
	readinessFailureThreshold = 3
)

// drainSeconds: a container of a published component keeps serving this
// long after its pod is deleted (a preStop sleep), while the EndpointSlice
// controller and kube-proxy stop sending it new connections, so a roll
// refuses none.
const drainSeconds = 5

// podTemplate renders the pods of the workload.
func (r renderer) podTemplate(secret *corev1.Secret) corev1.PodTemplateSpec {
	labels := r.labels()
	annotations := map[string]string{}
	if secret != nil {
		annotations[FilesHashAnnotation] = r.filesHash()
	}
	if v := r.w.spec.Version; v != "" {
		annotations[KubernetesVersionAnnotation] = v
	}
	if len(annotations) == 0 {
		annotations = nil
	}
	volumes := []corev1.Volume{
		{Name: dirVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: tmpVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}
	if secret != nil {
		volumes = append(volumes, r.filesVolumes(secret)...)
	}
	var containers []corev1.Container
	for _, s := range r.w.containers() {
		containers = append(containers, r.container(s))
	}
	var initContainers []corev1.Container
	if r.w.spec.Restore != nil {
		volumes = append(volumes, r.restoreVolumeSource())
		initContainers = append(initContainers, r.restoreContainer())
	}
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: annotations},
		Spec: corev1.PodSpec{
			InitContainers:               initContainers,
			Containers:                   containers,
			Volumes:                      volumes,
			PriorityClassName:            r.opts.PriorityClassName,
			AutomountServiceAccountToken: ptr.To(false),
			EnableServiceLinks:           ptr.To(false),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr.To(true),
				RunAsUser:      ptr.To(runAsID),
				RunAsGroup:     ptr.To(runAsID),
				FSGroup:        ptr.To(runAsID),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
				PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
					Weight: 100,
					PodAffinityTerm: corev1.PodAffinityTerm{
						LabelSelector: &metav1.LabelSelector{MatchLabels: r.selector()},
						TopologyKey:   corev1.LabelHostname,
					},
				}},
			}},
		},
	}
}

// command runs a spec's component: hypershift's for the compiled-in
// release, the image's release binary of Spec.Version otherwise.
func command(s runtime.Spec) []string {
	if s.Version != "" {
		return []string{path.Join(image.ReleasesDir, s.Version, release.BinaryName), s.Component}
	}
	return []string{image.Entrypoint, "component", s.Component}
}

// container renders one component's container.
func (r renderer) container(s runtime.Spec) corev1.Container {
	mounts := []corev1.VolumeMount{{Name: tmpVolume, MountPath: "/tmp"}}
	for _, c := range r.w.containers() {
		mounts = append(mounts, corev1.VolumeMount{Name: dirVolume, MountPath: path.Join(Dir, c.Component), SubPath: c.Component})
	}
	if s.Data != "" {
		mounts = append(mounts, corev1.VolumeMount{Name: dataVolume, MountPath: path.Join(Dir, s.Component, s.Data)})
	}
	mounts = append(mounts, fileMounts(s)...)
	c := corev1.Container{
		Name:            s.Component,
		Image:           r.opts.Image,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Command:         command(s),
		Args:            specArgs(s),
		Env:             env(s.Env),
		Ports:           containerPorts(s.Ports),
		VolumeMounts:    mounts,
		Resources:       corev1.ResourceRequirements{Requests: requests(s.Requests)},
		// A container that exits in error leaves its last log lines as
		// its termination message: the status says why it fails.
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false),
			ReadOnlyRootFilesystem:   ptr.To(true),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		},
	}
	if len(s.Publish) > 0 {
		c.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: drainSeconds}}}
	}
	if s.Readiness.Port != 0 {
		get := &corev1.HTTPGetAction{
			Path:   s.Readiness.Path,
			Port:   intstr.FromInt(s.Readiness.Port),
			Scheme: corev1.URIScheme(strings.ToUpper(s.Readiness.Scheme)),
		}
		c.ReadinessProbe = &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{HTTPGet: get},
			PeriodSeconds: readinessPeriod, TimeoutSeconds: probeTimeoutSeconds, FailureThreshold: readinessFailureThreshold,
		}
		c.LivenessProbe = &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{HTTPGet: get.DeepCopy()},
			PeriodSeconds: livenessPeriod, TimeoutSeconds: probeTimeoutSeconds, FailureThreshold: livenessFailureThreshold,
		}
	}
	return c
}

// env puts the pod's name and IP first, so that the spec's own variables
// and arguments can use $(POD_NAME) and $(POD_IP).
func env(vars []string) []corev1.EnvVar {
	out := []corev1.EnvVar{
		{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
	}
	for _, v := range vars {
		k, val, _ := strings.Cut(v, "=")
		out = append(out, corev1.EnvVar{Name: k, Value: val})
	}
	return out
}

// containerPorts lists the ports sorted by name; names that are not valid
// container port names (15 characters at most) are left off, the number
// stays.
func containerPorts(ports map[string]int) []corev1.ContainerPort {
	var out []corev1.ContainerPort
	for _, name := range sortedKeys(ports) {
		p := corev1.ContainerPort{ContainerPort: int32(ports[name]), Protocol: corev1.ProtocolTCP} //nolint:gosec // validated port
		if len(validation.IsValidPortName(name)) == 0 {
			p.Name = name
		}
		out = append(out, p)
	}
	return out
}

func requests(r runtime.Resources) corev1.ResourceList {
	list := corev1.ResourceList{}
	if r.MilliCPU > 0 {
		list[corev1.ResourceCPU] = *resource.NewMilliQuantity(r.MilliCPU, resource.DecimalSI)
	}
	if r.MemoryBytes > 0 {
		list[corev1.ResourceMemory] = *resource.NewQuantity(r.MemoryBytes, resource.BinarySI)
	}
	if len(list) == 0 {
		return nil
	}
	return list
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// workloadObject renders the Deployment, or the StatefulSet of a workload
// with data (a volume per member, members reached by name).
func (r renderer) workloadObject(pod corev1.PodTemplateSpec) client.Object {
	selector := &metav1.LabelSelector{MatchLabels: r.selector()}
	if !r.w.statefulSet() {
		return &appsv1.Deployment{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
			ObjectMeta: r.meta(r.w.component),
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To(r.w.replicas()),
				Selector: selector,
				Template: pod,
				// A new pod first, then an old one goes, one at a time:
				// the API keeps serving through a change of version.
				Strategy: appsv1.DeploymentStrategy{
					Type: appsv1.RollingUpdateDeploymentStrategyType,
					RollingUpdate: &appsv1.RollingUpdateDeployment{
						MaxUnavailable: ptr.To(intstr.FromInt(0)),
						MaxSurge:       ptr.To(intstr.FromInt(1)),
					},
				},
			},
		}
	}
	// The spec's own choice (the cluster's spec.etcd.managed.storage)
	// over the runtime's defaults; validateSpec parsed the size.
	size, class := r.opts.EtcdStorageSize, r.opts.StorageClassName
	if v := r.w.spec.DataVolume; v.Size != "" {
		size = resource.MustParse(v.Size)
	}
	if v := r.w.spec.DataVolume; v.StorageClassName != "" {
		class = v.StorageClassName
	}
	claim := corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: dataVolume, Labels: r.labels()},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: size,
			}},
		},
	}
	if class != "" {
		claim.Spec.StorageClassName = ptr.To(class)
	}
	return &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: r.meta(r.w.component),
		Spec: appsv1.StatefulSetSpec{
			Replicas:             ptr.To(r.w.replicas()),
			Selector:             selector,
			Template:             pod,
			ServiceName:          discoveryServiceName(r.w.component),
			PodManagementPolicy:  appsv1.ParallelPodManagement,
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{claim},
		},
	}
}
