package dataplane

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hypershift.dev/internal/pki"
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
	agentTokenDir   = "/var/run/secrets/konnectivity" //nolint:gosec // where the token is mounted, not a credential
	// agentTokenSeconds is the lifetime of the agent's pod-bound token;
	// the kubelet renews it at 80 %, and the agent reads it on every
	// connect.
	agentTokenSeconds = 3600
	// KonnectivityServerRole names the ClusterRole and binding that let
	// the server review the agents' tokens and read their Nodes.
	KonnectivityServerRole = "hypershift:konnectivity-server"
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
		&rbacv1.ClusterRole{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
			ObjectMeta: metav1.ObjectMeta{Name: KonnectivityServerRole},
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}},
				{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get"}},
			},
		},
		&rbacv1.ClusterRoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: KonnectivityServerRole},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: KonnectivityServerRole},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: pki.KonnectivityServerUser}},
		},
		&corev1.Secret{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Namespace: kubeSystem, Name: KonnectivityAgent},
			Type:       corev1.SecretTypeOpaque,
			Data:       map[string][]byte{"ca.crt": k.CA, corev1.TLSCertKey: k.Cert, corev1.TLSPrivateKeyKey: k.Key},
		},
		&corev1.ServiceAccount{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
			ObjectMeta: metav1.ObjectMeta{Namespace: pki.KonnectivityAgentNamespace, Name: pki.KonnectivityAgentServiceAccount},
			// The agent's only token is the projected one below.
			AutomountServiceAccountToken: ptr.To(false),
		},
		&appsv1.DaemonSet{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"},
			ObjectMeta: metav1.ObjectMeta{Namespace: kubeSystem, Name: KonnectivityAgent, Labels: labels},
			Spec: appsv1.DaemonSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{AgentCertificateAnnotation: certDigest(k.Cert)}},
					Spec: corev1.PodSpec{
						ServiceAccountName: pki.KonnectivityAgentServiceAccount,
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
								// The server picks the agent of a node by its
								// address, and accepts only the addresses
								// recorded for the node its token is bound
								// to, under the node's name.
								"--agent-id=$(NODE_NAME)",
								"--agent-identifiers=ipv4=$(HOST_IP)",
								"--service-account-token-path=" + agentTokenDir + "/token",
								"--health-server-host=127.0.0.1",
								fmt.Sprintf("--health-server-port=%d", agentHealthPort),
								"--admin-bind-address=127.0.0.1",
								fmt.Sprintf("--admin-server-port=%d", agentAdminPort),
							},
							Env: []corev1.EnvVar{
								{Name: "HOST_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.hostIP"}}},
								{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
							},
							VolumeMounts: []corev1.VolumeMount{
								{Name: "certs", MountPath: agentCertDir, ReadOnly: true},
								{Name: "token", MountPath: agentTokenDir, ReadOnly: true},
							},
							LivenessProbe:  health,
							ReadinessProbe: ready,
							SecurityContext: &corev1.SecurityContext{
								AllowPrivilegeEscalation: ptr.To(false),
								ReadOnlyRootFilesystem:   ptr.To(true),
								Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
							},
						}},
						Volumes: []corev1.Volume{
							{Name: "certs", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
								SecretName: KonnectivityAgent, DefaultMode: ptr.To[int32](0o400),
							}}},
							{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
								DefaultMode: ptr.To[int32](0o400),
								Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{
									Audience: pki.KonnectivityAudience, ExpirationSeconds: ptr.To[int64](agentTokenSeconds), Path: "token",
								}}},
							}}},
						},
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
