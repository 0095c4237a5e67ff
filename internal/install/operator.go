package install

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Names of what install makes for the operator of the kube runtime.
const (
	OperatorName       = "hypershift-operator"
	leaderElectionName = "hypershift-operator-leader-election"
	// MetricsReaderName is the ClusterRole a scraper of the operator's
	// /metrics is bound to.
	MetricsReaderName = "hypershift-metrics-reader"
	// PriorityClassName ranks control-plane pods (and the operator) above
	// ordinary workloads, below the cluster's own system-critical pods.
	PriorityClassName  = "hypershift-control-plane"
	priorityClassValue = 100000000
	metricsPort        = 8383
	healthPort         = 8384
	// nonRootID is the uid and gid the operator runs as (the image's
	// conventional "nonroot").
	nonRootID = 65532
)

// operatorObjects are the kube runtime's operator and what it runs with, in
// the order they are applied.
func operatorObjects(o Options) []client.Object {
	ns := o.Namespace
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: OperatorName}}
	subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: OperatorName}}
	return []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{
			// The operator needs nothing more than the restricted profile.
			"pod-security.kubernetes.io/enforce": "restricted",
		}}},
		sa,
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: OperatorName}, Rules: operatorRules()},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: MetricsReaderName}, Rules: metricsReaderRules()},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: OperatorName},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: OperatorName},
			Subjects:   subject,
		},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: leaderElectionName}, Rules: leaderElectionRules()},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: leaderElectionName},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: leaderElectionName},
			Subjects:   subject,
		},
		&schedulingv1.PriorityClass{
			ObjectMeta:       metav1.ObjectMeta{Name: PriorityClassName},
			Value:            priorityClassValue,
			PreemptionPolicy: ptr(corev1.PreemptLowerPriority),
			Description:      "Hosted control planes of hypershift and their operator: they serve other clusters.",
		},
		operatorDeployment(o),
	}
}

// OperatorArgs is the operator's command line in its pod.
func OperatorArgs(o Options) []string {
	args := []string{
		"operator", "--runtime=kube", "--image=" + o.Image, "--machine-image=" + o.MachineImage, "--leader-elect", "--install-crds=false",
		"--metrics-bind-address=:8383", "--metrics-secure", "--health-probe-bind-address=:8384",
	}
	if o.StorageClassName != "" {
		args = append(args, "--etcd-storage-class="+o.StorageClassName)
	}
	if o.KubeletDir != "" {
		args = append(args, "--kubelet-dir="+o.KubeletDir)
	}
	if o.AWSProviderNamespace != "" {
		args = append(args, "--aws-provider-namespace="+o.AWSProviderNamespace)
	}
	return args
}

func operatorDeployment(o Options) *appsv1.Deployment {
	return workload(o, OperatorName, OperatorName, corev1.Container{
		Name:            "operator",
		Image:           o.Image,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Command:         []string{"/hypershift"},
		Args:            OperatorArgs(o),
		Env: []corev1.EnvVar{{
			Name:      "POD_NAMESPACE",
			ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}},
		}},
		Ports: []corev1.ContainerPort{
			{Name: "metrics", ContainerPort: metricsPort, Protocol: corev1.ProtocolTCP},
			{Name: "health", ContainerPort: healthPort, Protocol: corev1.ProtocolTCP},
		},
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("100m"),
			corev1.ResourceMemory: resource.MustParse("256Mi"),
		}},
	})
}

// workload is the Deployment of o.Replicas replicas of c, named name, run
// as the ServiceAccount serviceAccount: replicas that elect a leader,
// preferably on different nodes, probed on c's port "health" (/readyz,
// /healthz), non-root with a read-only root filesystem and /tmp to write,
// at PriorityClassName. The operator and Cluster API's manager are such.
func workload(o Options, name, serviceAccount string, c corev1.Container) *appsv1.Deployment {
	// A fresh map each time: install adds its label to the Deployment's
	// own labels, which must not reach the (immutable) selector.
	labels := func() map[string]string { return map[string]string{"app.kubernetes.io/name": name} }
	probe := func(path string) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString("health")}},
			PeriodSeconds:    10,
			FailureThreshold: 3,
		}
	}
	c.ReadinessProbe = probe("/readyz")
	c.LivenessProbe = probe("/healthz")
	c.LivenessProbe.FailureThreshold = 6
	c.SecurityContext = &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr(false),
		ReadOnlyRootFilesystem:   ptr(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
	c.VolumeMounts = []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: name, Labels: labels()},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr(o.Replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels()},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels()},
				Spec: corev1.PodSpec{
					ServiceAccountName: serviceAccount,
					PriorityClassName:  PriorityClassName,
					EnableServiceLinks: ptr(false),
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot:   ptr(true),
						RunAsUser:      ptr(int64(nonRootID)),
						RunAsGroup:     ptr(int64(nonRootID)),
						FSGroup:        ptr(int64(nonRootID)),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					// Replicas on different nodes, so a node's loss leaves a
					// standby to take the lease.
					Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
						PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
							Weight: 100,
							PodAffinityTerm: corev1.PodAffinityTerm{
								LabelSelector: &metav1.LabelSelector{MatchLabels: labels()},
								TopologyKey:   corev1.LabelHostname,
							},
						}},
					}},
					Containers: []corev1.Container{c},
					// The root filesystem is read-only; anything that needs a
					// scratch file gets /tmp.
					Volumes: []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
				},
			},
		},
	}
}
