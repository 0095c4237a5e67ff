package dataplane

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// KonnectivityAgent names the agent's Secret, ServiceAccount and DaemonSet.
const KonnectivityAgent = "konnectivity-agent"

// The agent's health and admin ports, on the node's loopback (hostNetwork):
// upstream's defaults, clear of the kubelet (10250), kube-proxy
// (10249/10256) and the node's API proxy (6443).
const (
	agentHealthPort = 8093
	agentAdminPort  = 8094
	agentCertDir    = "/etc/konnectivity"
	// AgentCertificateAnnotation on the agents' pod template identifies
	// their certificate: the agent reads it once, at start, so a renewed
	// certificate rolls the DaemonSet (one node at a time).
	AgentCertificateAnnotation = "hypershift.dev/konnectivity-agent-certificate"
)

func konnectivityAgent(image string, k Konnectivity) ([]client.Object, error) {
	switch {
	case k.ServerHost == "":
		return nil, errors.New("konnectivity: the server's host is empty")
	case k.ServerPort <= 0 || k.ServerPort > 65535:
		return nil, fmt.Errorf("konnectivity: server port %d out of range", k.ServerPort)
	case len(k.CA) == 0 || len(k.Cert) == 0 || len(k.Key) == 0:
		return nil, errors.New("konnectivity: the agent needs the CA, its certificate and its key")
	}
	labels := map[string]string{"k8s-app": KonnectivityAgent}
	health := &corev1.Probe{
		ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Host: "127.0.0.1", Path: "/healthz", Port: intstr.FromInt32(agentHealthPort), Scheme: corev1.URISchemeHTTP,
		}},
		InitialDelaySeconds: 15, TimeoutSeconds: 15,
	}
	ready := health.DeepCopy()
	ready.InitialDelaySeconds, ready.PeriodSeconds = 0, 2
	ready.HTTPGet.Path = "/readyz"
	return []client.Object{
		&corev1.Secret{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Namespace: kubeSystem, Name: KonnectivityAgent},
			Type:       corev1.SecretTypeOpaque,
			Data:       map[string][]byte{"ca.crt": k.CA, corev1.TLSCertKey: k.Cert, corev1.TLSPrivateKeyKey: k.Key},
		},
		&corev1.ServiceAccount{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
			ObjectMeta: metav1.ObjectMeta{Namespace: kubeSystem, Name: KonnectivityAgent},
		},
		&appsv1.DaemonSet{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"},
			ObjectMeta: metav1.ObjectMeta{Namespace: kubeSystem, Name: KonnectivityAgent, Labels: labels},
			Spec: appsv1.DaemonSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{AgentCertificateAnnotation: certDigest(k.Cert)}},
					Spec: corev1.PodSpec{
						ServiceAccountName: KonnectivityAgent,
						PriorityClassName:  "system-node-critical",
						// The server reaches pods and nodes through the node.
						HostNetwork: true,
						// The node's resolvers: the agent needs only the
						// control plane's endpoint, and must reach it while
						// cluster DNS is down.
						DNSPolicy: corev1.DNSDefault,
						// On every node, whatever its taints.
						Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
						Containers: []corev1.Container{{
							Name:            KonnectivityAgent,
							Image:           image,
							ImagePullPolicy: corev1.PullNever,
							Command:         []string{"/hypershift", "component", "konnectivity-agent"},
							Args: []string{
								fmt.Sprintf("--proxy-server-host=%s", k.ServerHost),
								fmt.Sprintf("--proxy-server-port=%d", k.ServerPort),
								"--ca-cert=" + agentCertDir + "/ca.crt",
								"--agent-cert=" + agentCertDir + "/" + corev1.TLSCertKey,
								"--agent-key=" + agentCertDir + "/" + corev1.TLSPrivateKeyKey,
								// The server picks the agent of a node by its address.
								"--agent-identifiers=ipv4=$(HOST_IP)",
								"--health-server-host=127.0.0.1",
								fmt.Sprintf("--health-server-port=%d", agentHealthPort),
								"--admin-bind-address=127.0.0.1",
								fmt.Sprintf("--admin-server-port=%d", agentAdminPort),
							},
							Env: []corev1.EnvVar{{
								Name:      "HOST_IP",
								ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.hostIP"}},
							}},
							VolumeMounts:   []corev1.VolumeMount{{Name: "certs", MountPath: agentCertDir, ReadOnly: true}},
							LivenessProbe:  health,
							ReadinessProbe: ready,
							SecurityContext: &corev1.SecurityContext{
								AllowPrivilegeEscalation: ptr.To(false),
								ReadOnlyRootFilesystem:   ptr.To(true),
								Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
							},
						}},
						Volumes: []corev1.Volume{{
							Name: "certs",
							VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
								SecretName: KonnectivityAgent, DefaultMode: ptr.To[int32](0o400),
							}},
						}},
					},
				},
			},
		},
	}, nil
}

// certDigest is a short digest of a certificate, to tell renewals apart.
func certDigest(cert []byte) string {
	sum := sha256.Sum256(cert)
	return hex.EncodeToString(sum[:])[:16]
}
