package dataplane

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Names of the cluster DNS objects (kubeadm's, so tools that look for them
// find them).
const (
	CoreDNS        = "coredns"
	DNSService     = "kube-dns"
	coreDNSRole    = "system:coredns"
	dnsAppLabel    = "k8s-app"
	dnsAppValue    = "kube-dns"
	corefileKey    = "Corefile"
	corefileDir    = "/etc/coredns"
	dnsHealthPort  = 8080
	dnsReadyPort   = 8181
	dnsMetricsPort = 9153
)

// corefile is the Corefile of cluster DNS: the cluster's names from the
// API, everything else forwarded to the node's resolvers (dnsPolicy
// Default gives the pod the node's /etc/resolv.conf).
func corefile(domain string) string {
	return fmt.Sprintf(`.:53 {
    errors
    health :%d {
        lameduck 5s
    }
    ready :%d
    kubernetes %s in-addr.arpa ip6.arpa {
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 30
    }
    prometheus :%d
    forward . /etc/resolv.conf {
        max_concurrent 1000
    }
    cache 30
    loop
    reload
    loadbalance
}
`, dnsHealthPort, dnsReadyPort, domain, dnsMetricsPort)
}

func clusterDNS(cfg Config, dnsIP string) []client.Object {
	dnsLabels := map[string]string{dnsAppLabel: dnsAppValue}
	return []client.Object{
		&corev1.ServiceAccount{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
			ObjectMeta: metav1.ObjectMeta{Namespace: kubeSystem, Name: CoreDNS},
		},
		&rbacv1.ClusterRole{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
			ObjectMeta: metav1.ObjectMeta{Name: coreDNSRole},
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{""}, Resources: []string{"endpoints", "services", "pods", "namespaces"}, Verbs: []string{"list", "watch"}},
				{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
			},
		},
		&rbacv1.ClusterRoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: coreDNSRole},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: coreDNSRole},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: kubeSystem, Name: CoreDNS}},
		},
		&corev1.ConfigMap{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Namespace: kubeSystem, Name: CoreDNS},
			Data:       map[string]string{corefileKey: corefile(cfg.ClusterDomain)},
		},
		coreDNSDeployment(cfg.Image, dnsLabels),
		&corev1.Service{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
			ObjectMeta: metav1.ObjectMeta{
				Namespace: kubeSystem, Name: DNSService,
				Labels: map[string]string{dnsAppLabel: dnsAppValue, "kubernetes.io/name": "CoreDNS"},
				// Prometheus scrapes the metrics port, as kubeadm's Service says.
				Annotations: map[string]string{"prometheus.io/port": fmt.Sprint(dnsMetricsPort), "prometheus.io/scrape": "true"},
			},
			Spec: corev1.ServiceSpec{
				Selector:  dnsLabels,
				ClusterIP: dnsIP,
				Ports: []corev1.ServicePort{
					{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromInt32(53)},
					{Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(53)},
					{Name: "metrics", Port: dnsMetricsPort, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(dnsMetricsPort)},
				},
			},
		},
	}
}

func coreDNSDeployment(image string, labels map[string]string) *appsv1.Deployment {
	probe := func(path string, port int32) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Path: path, Port: intstr.FromInt32(port), Scheme: corev1.URISchemeHTTP,
		}}}
	}
	liveness := probe("/health", dnsHealthPort)
	liveness.InitialDelaySeconds, liveness.TimeoutSeconds, liveness.FailureThreshold = 60, 5, 5
	readiness := probe("/ready", dnsReadyPort)
	readiness.PeriodSeconds = 2
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Namespace: kubeSystem, Name: CoreDNS, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Strategy: appsv1.DeploymentStrategy{
				Type:          appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: ptr.To(intstr.FromInt32(1))},
			},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName: CoreDNS,
					PriorityClassName:  "system-cluster-critical",
					// The node's resolvers: what `forward . /etc/resolv.conf`
					// forwards to (ClusterFirst would point DNS at itself).
					DNSPolicy:    corev1.DNSDefault,
					NodeSelector: map[string]string{corev1.LabelOSStable: "linux"},
					Tolerations: []corev1.Toleration{
						{Key: "CriticalAddonsOnly", Operator: corev1.TolerationOpExists},
						{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule},
					},
					// Two replicas on two nodes when there are two.
					Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
						PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
							Weight: 100,
							PodAffinityTerm: corev1.PodAffinityTerm{
								LabelSelector: &metav1.LabelSelector{MatchLabels: labels},
								TopologyKey:   corev1.LabelHostname,
							},
						}},
					}},
					Containers: []corev1.Container{{
						Name:            CoreDNS,
						Image:           image,
						ImagePullPolicy: corev1.PullNever, // built on the node; there is no registry
						Command:         []string{"/hypershift", "component", "coredns"},
						Args:            []string{"-conf", corefileDir + "/" + corefileKey},
						Ports: []corev1.ContainerPort{
							{Name: "dns", ContainerPort: 53, Protocol: corev1.ProtocolUDP},
							{Name: "dns-tcp", ContainerPort: 53, Protocol: corev1.ProtocolTCP},
							{Name: "metrics", ContainerPort: dnsMetricsPort, Protocol: corev1.ProtocolTCP},
						},
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{
								corev1.ResourceCPU:    resource.MustParse("100m"),
								corev1.ResourceMemory: resource.MustParse("70Mi"),
							},
							Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("170Mi")},
						},
						VolumeMounts:   []corev1.VolumeMount{{Name: "config-volume", MountPath: corefileDir, ReadOnly: true}},
						LivenessProbe:  liveness,
						ReadinessProbe: readiness,
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: ptr.To(false),
							ReadOnlyRootFilesystem:   ptr.To(true),
							// Port 53 only.
							Capabilities: &corev1.Capabilities{
								Add:  []corev1.Capability{"NET_BIND_SERVICE"},
								Drop: []corev1.Capability{"ALL"},
							},
						},
					}},
					Volumes: []corev1.Volume{{
						Name: "config-volume",
						VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
							LocalObjectReference: corev1.LocalObjectReference{Name: CoreDNS},
							Items:                []corev1.KeyToPath{{Key: corefileKey, Path: corefileKey}},
						}},
					}},
				},
			},
		},
	}
}
