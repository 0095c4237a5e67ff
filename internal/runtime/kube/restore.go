package kube

import (
	"fmt"
	"net"
	"net/url"
	"path"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"hypershift.dev/internal/image"
	"hypershift.dev/internal/runtime"
)

// A workload whose spec has a Restore gets an init container that fills
// each member's data volume from a backup archive before the component
// first starts there: the operator does not write the volumes itself. The
// init container runs `hypershift restore etcd-data` with the component's
// own arguments (its data dir and member identity), reads the archive's
// URL, key and bucket credentials from the Secret <component>-restore,
// mounted into it alone, and restores only an empty data dir.
//
// The init container stays in the pod template for the cluster's life, so
// that finishing the restore does not roll the pods: once the controller
// says the restore is done (Restore.Files empty), the Secret is pruned and
// the init container, finding no Secret in its optional volume, exits at
// once leaving the data alone. A member whose volume is lost later is not
// restored from the old archive again.
const (
	// restoreVolume is the restore Secret's volume, mounted at restoreDir
	// in the init container only.
	restoreVolume = "restore"
	restoreDir    = "/var/run/hypershift-restore"
	// RestoreContainerName is the init container's name.
	RestoreContainerName = "restore-data"
)

// RestoreCommand is what the init container runs before the component's
// arguments.
var RestoreCommand = []string{image.Entrypoint, "restore", "etcd-data", "--from-dir", restoreDir, "--"}

func restoreSecretName(component string) string { return component + "-restore" }

// validateRestore refuses a Restore the runtime cannot carry out.
func validateRestore(s runtime.Spec) error {
	if s.Restore == nil {
		return nil
	}
	if s.Data == "" {
		return fmt.Errorf("instance %s: spec.Restore on an instance without spec.Data: only kept data is restored", s.Name)
	}
	if err := s.Restore.Validate(); err != nil {
		return fmt.Errorf("instance %s: %w", s.Name, err)
	}
	return nil
}

// restoreSecret renders the Secret the init container reads; nil when
// there is nothing to restore.
func (r renderer) restoreSecret() *corev1.Secret {
	rs := r.w.spec.Restore
	if rs == nil || len(rs.Files) == 0 {
		return nil
	}
	data := make(map[string][]byte, len(rs.Files))
	for _, f := range rs.Files {
		data[f.Path] = f.Content
	}
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: r.meta(restoreSecretName(r.w.component)),
		Type:       corev1.SecretTypeOpaque,
		Data:       data,
	}
}

// restoreVolumeSource is the restore Secret as an optional volume: pods
// made after the restore find none and start as they are.
func (r renderer) restoreVolumeSource() corev1.Volume {
	return corev1.Volume{Name: restoreVolume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: restoreSecretName(r.w.component), Optional: ptr.To(true), DefaultMode: ptr.To(secretFileMode),
	}}}
}

// restoreContainer renders the init container of a workload with a
// Restore: hypershift's own binary (whatever release the component runs),
// the component's arguments and environment, its data volume at the
// component's path, the restore Secret read-only.
func (r renderer) restoreContainer() corev1.Container {
	s := r.w.spec
	c := r.container(s)
	return corev1.Container{
		Name:            RestoreContainerName,
		Image:           c.Image,
		ImagePullPolicy: c.ImagePullPolicy,
		Command:         append(append([]string(nil), RestoreCommand...), c.Args...),
		Env:             c.Env,
		VolumeMounts: []corev1.VolumeMount{
			{Name: tmpVolume, MountPath: "/tmp"},
			{Name: dataVolume, MountPath: path.Join(Dir, s.Component, s.Data)},
			{Name: restoreVolume, MountPath: restoreDir, ReadOnly: true},
		},
		SecurityContext: c.SecurityContext,
		// Its error is what the status reports of a failing restore.
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}
}

// restoreEgress lets the init container reach the archive's bucket when
// the URL names an endpoint on a port the policy does not admit already
// (an S3-compatible store on its own port); nil otherwise.
func (r renderer) restoreEgress() *networkingv1.NetworkPolicyEgressRule {
	rs := r.w.spec.Restore
	if rs == nil {
		return nil
	}
	var ports []int
	for _, f := range rs.Files {
		if f.Path != runtime.RestoreURLFile {
			continue
		}
		if p := bucketPort(string(f.Content)); p != 0 && p != kubernetesServicePort && p != kubernetesAPIPort {
			ports = append(ports, p)
		}
	}
	if len(ports) == 0 {
		return nil
	}
	sort.Ints(ports)
	rule := &networkingv1.NetworkPolicyEgressRule{}
	for _, p := range ports {
		rule.Ports = append(rule.Ports, policyPort(corev1.ProtocolTCP, p))
	}
	return rule
}

// bucketPort is the port of an archive URL's endpoint option (an
// S3-compatible store), 0 when it names none or its default.
func bucketPort(raw string) int {
	u, err := url.Parse(raw)
	if err != nil {
		return 0
	}
	ep, err := url.Parse(u.Query().Get("endpoint"))
	if err != nil || ep.Host == "" {
		return 0
	}
	_, port, err := net.SplitHostPort(ep.Host)
	if err != nil {
		return 0
	}
	p, _ := strconv.Atoi(port)
	return p
}
