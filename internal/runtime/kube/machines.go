package kube

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hypershift.dev/internal/hostedref"
	"hypershift.dev/internal/runtime"
)

// MachineLabel names the machine a pod or Secret of the kube runtime's
// machines is.
const MachineLabel = "hypershift.dev/machine"

// Pod machines (docs/machines.md).
const (
	// machinesNamespaceSuffix ends the namespace of a control plane's
	// machines: its pods are privileged, which the control-plane
	// namespace's Pod Security Standard (restricted) refuses.
	machinesNamespaceSuffix = "-machines"
	// machineUserdataDir is where a machine pod's userdata Secret is
	// mounted.
	machineUserdataDir = "/etc/hypershift-machine"
	userdataKey        = "userdata"
	// machineGracePeriod is the machine pod's termination grace period: its
	// first process resets the node (a minute at most) when told to stop.
	machineGracePeriod = 90
	// machineServiceAccount runs the machine pods, with no token.
	machineServiceAccount = "machine"
	// MachineHotplugDir is where a machine pod has its hot-plug
	// directory (HotplugDir on its management node), with host-to-container
	// mount propagation: the volumes attachment pods hold there show in
	// the machine, for its node's CSI plugin (docs/volumes.md).
	MachineHotplugDir = "/var/lib/hypershift/hotplug"
	// hotplugPlugin names the hot-plug directories' root in a management
	// node's kubelet plugins directory.
	hotplugPlugin = "hotplug.hypershift.dev"
)

// HotplugDir is machine's hot-plug directory, of the machines namespace
// ns, on a management node whose kubelet root directory is kubeletDir:
// under the kubelet's directory, which the kubelet makes a shared mount,
// as bidirectional propagation needs.
func HotplugDir(kubeletDir, ns, machine string) string {
	return path.Join(kubeletDir, "plugins", hotplugPlugin, ns, machine)
}

// DefaultMaxMachines bounds the machine pods of a cluster unless the
// operator is told otherwise (--max-machines): whoever may write NodePools
// must not be able to fill the cluster with privileged pods.
const DefaultMaxMachines = 32

// MachinesOptions configure the kube runtime's machines.
type MachinesOptions struct {
	// Image is the machine image (`hypershift image save --machine`):
	// the hypershift binary and the Debian packages a node runs. Empty: no
	// machine is made (Check says so).
	Image string
	// APIReader reads from the API server; nil: the client. A machine's
	// owner is checked with it before anything is deleted.
	APIReader client.Reader
	// KubeletDir is the kubelet's root directory on the management
	// cluster's nodes; set, each machine pod has its hot-plug directory
	// (HotplugDir) at MachineHotplugDir, for mirrored volumes.
	KubeletDir string
}

// Machines is the kube runtime's runtime.Machines: each machine is a
// privileged pod of the management cluster — the pod is the machine, as a
// KubeVirt virtual machine is a pod — whose first process (`hypershift
// machine boot`) runs the userdata from a Secret beside it, in a namespace
// of the control plane's machines (its namespace + "-machines", labelled
// with the HostedCluster's UID, Pod Security privileged), made with the
// first machine and deleted with the last. The pod and the Secret carry
// the machine's owner (OwnerUIDLabel); only those of the caller's owner
// are deleted, each with its UID as precondition.
type Machines struct {
	client client.Client
	reader client.Reader
	opts   MachinesOptions
}

var _ runtime.Machines = (*Machines)(nil)

// NewMachines returns the kube runtime's machines, made through c; c's
// cache must hold the pods labelled ManagedByLabel.
func NewMachines(c client.Client, opts MachinesOptions) *Machines {
	reader := opts.APIReader
	if reader == nil {
		reader = c
	}
	return &Machines{client: c, reader: reader, opts: opts}
}

// Where implements runtime.Machines.
func (*Machines) Where() string { return "pods of the management cluster" }

// Check implements runtime.Machines: machines need their image.
func (m *Machines) Check(context.Context) error {
	if m.opts.Image == "" {
		return errors.New("the operator has no machine image: install with --machine-image (`hypershift image save --machine`)")
	}
	return nil
}

// Count implements runtime.Machines: every machine pod of the cluster.
func (m *Machines) Count(ctx context.Context) (int, error) {
	pods := &corev1.PodList{}
	if err := m.client.List(ctx, pods, client.MatchingLabels{ManagedByLabel: ManagedBy}, client.HasLabels{MachineLabel}); err != nil {
		return 0, err
	}
	return len(pods.Items), nil
}

// MachinesNamespace is the namespace of the machines of the control plane
// in namespace ns.
func MachinesNamespace(ns string) string {
	if len(ns)+len(machinesNamespaceSuffix) <= 63 {
		return ns + machinesNamespaceSuffix
	}
	sum := sha256.Sum256([]byte(ns))
	return ns[:63-len(machinesNamespaceSuffix)-9] + "-" + hex.EncodeToString(sum[:4]) + machinesNamespaceSuffix
}

// Get implements runtime.Machines.
func (m *Machines) Get(ctx context.Context, ref runtime.MachineRef) (runtime.Machine, error) {
	pod := &corev1.Pod{}
	err := m.client.Get(ctx, client.ObjectKey{Namespace: MachinesNamespace(ref.Namespace), Name: ref.Name}, pod)
	if apierrors.IsNotFound(err) {
		return runtime.Machine{}, fmt.Errorf("machine %s: %w", ref.Name, runtime.ErrMachineNotFound)
	}
	if err != nil {
		return runtime.Machine{}, err
	}
	return machineOf(pod), nil
}

// machineOf says how the machine a pod is stands.
func machineOf(pod *corev1.Pod) runtime.Machine {
	m := runtime.Machine{Name: pod.Name, Owner: pod.Labels[OwnerUIDLabel]}
	if a, err := netip.ParseAddr(pod.Status.PodIP); err == nil {
		m.Address = a
	}
	var st *corev1.ContainerStatus
	for i := range pod.Status.ContainerStatuses {
		st = &pod.Status.ContainerStatuses[i]
	}
	if st != nil && st.State.Running != nil {
		m.StartedAt = st.State.Running.StartedAt.UTC()
	}
	switch {
	case pod.DeletionTimestamp != nil:
		m.State, m.Message = runtime.MachineBroken, fmt.Sprintf("its pod %s/%s is being deleted", pod.Namespace, pod.Name)
	case pod.Status.Phase == corev1.PodRunning && st != nil && st.Ready:
		m.State = runtime.MachineBooted
	case pod.Status.Phase == corev1.PodRunning:
		m.State = runtime.MachineRunning
	case pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded:
		m.State, m.Message = runtime.MachineFailed, endedMessage(pod, st)
	default:
		m.State, m.Message = runtime.MachineStarting, startingMessage(pod, st)
	}
	return m
}

// endedMessage says how a machine's pod ended: its exit and its log's end.
func endedMessage(pod *corev1.Pod, st *corev1.ContainerStatus) string {
	msg := "its pod ended"
	switch {
	case st != nil && st.State.Terminated != nil:
		t := st.State.Terminated
		msg = fmt.Sprintf("its pod ended (exit code %d, %s)", t.ExitCode, t.Reason)
		if tail := strings.TrimSpace(t.Message); tail != "" {
			msg += "; the end of its log:\n" + tail
		}
	case pod.Status.Message != "":
		msg += ": " + pod.Status.Message
	}
	return msg
}

// startingMessage says what a machine's pod that does not run waits for.
func startingMessage(pod *corev1.Pod, st *corev1.ContainerStatus) string {
	msg := "its pod is " + string(pod.Status.Phase)
	switch {
	case st != nil && st.State.Waiting != nil && st.State.Waiting.Reason != "":
		msg += " (" + st.State.Waiting.Reason + ": " + st.State.Waiting.Message + ")"
	case pod.Status.Phase == corev1.PodPending && pod.Spec.NodeName == "":
		msg += ", not scheduled yet"
	}
	return msg
}

// Create implements runtime.Machines: the namespace of the control plane's
// machines, the userdata Secret, then the pod.
func (m *Machines) Create(ctx context.Context, ref runtime.MachineRef, userdata []byte) (runtime.Machine, error) {
	if err := m.Check(ctx); err != nil {
		return runtime.Machine{}, err
	}
	ns, err := EnsureMachinesNamespace(ctx, m.client, m.reader, ref.Namespace, ref.Cluster)
	if err != nil {
		return runtime.Machine{}, err
	}
	pod := &corev1.Pod{}
	err = m.reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: ref.Name}, pod)
	switch {
	case err == nil && pod.Labels[OwnerUIDLabel] != ref.Owner:
		return runtime.Machine{}, fmt.Errorf("pod %s/%s (owner %q): %w", ns, ref.Name, pod.Labels[OwnerUIDLabel], runtime.ErrMachineExists)
	case err == nil:
		return machineOf(pod), nil
	case !apierrors.IsNotFound(err):
		return runtime.Machine{}, err
	}
	if err := m.ensureServiceAccount(ctx, ns); err != nil {
		return runtime.Machine{}, err
	}
	if err := m.ensureUserdata(ctx, ns, ref, userdata); err != nil {
		return runtime.Machine{}, err
	}
	pod = m.machinePod(ns, ref)
	if err := m.client.Create(ctx, pod); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return runtime.Machine{}, fmt.Errorf("pod %s/%s was made meanwhile: %w", ns, ref.Name, runtime.ErrMachineExists)
		}
		return runtime.Machine{}, fmt.Errorf("create pod %s/%s: %w", ns, ref.Name, err)
	}
	return machineOf(pod), nil
}

// EnsureMachinesNamespace makes the namespace of the machines of the
// control plane in namespace cpNamespace, of HostedCluster UID cluster, or
// checks that the one there is this cluster's, and returns its name. The
// volume mirror keeps its infrastructure claims there too: the attachment
// pods that mount them are privileged, as the machines are.
func EnsureMachinesNamespace(ctx context.Context, c client.Client, reader client.Reader, cpNamespace, cluster string) (string, error) {
	name := MachinesNamespace(cpNamespace)
	ns := &corev1.Namespace{}
	err := reader.Get(ctx, client.ObjectKey{Name: name}, ns)
	switch {
	case err == nil && ns.Labels[OwnerUIDLabel] != cluster:
		return "", fmt.Errorf("namespace %s exists and is not this cluster's machines' (label %s is %q): %w", name, OwnerUIDLabel, ns.Labels[OwnerUIDLabel], runtime.ErrMachineExists)
	case err == nil && ns.DeletionTimestamp != nil:
		return "", fmt.Errorf("namespace %s is being deleted (its last machine and volume went); it is made again once it is gone", name)
	case err == nil:
		return name, nil
	case !apierrors.IsNotFound(err):
		return "", err
	}
	ns = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		ManagedByLabel: ManagedBy,
		OwnerUIDLabel:  cluster,
		// The HostedCluster's, as its control-plane namespace is: the
		// operator writes only in namespaces so labelled (the
		// operator-scope admission policy).
		hostedref.ClusterUIDLabel: cluster,
		// A machine is a privileged pod: it runs containerd and a kubelet.
		"pod-security.kubernetes.io/enforce": "privileged",
	}}}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("create namespace %s: %w", name, err)
	}
	return name, nil
}

// ensureServiceAccount makes the machines' service account: a pod names
// one that exists, and the namespace's default one comes a moment after
// the namespace, made by another controller.
func (m *Machines) ensureServiceAccount(ctx context.Context, ns string) error {
	sa := &corev1.ServiceAccount{
		ObjectMeta:                   metav1.ObjectMeta{Namespace: ns, Name: machineServiceAccount, Labels: map[string]string{ManagedByLabel: ManagedBy}},
		AutomountServiceAccountToken: ptr.To(false),
	}
	if err := m.client.Create(ctx, sa); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create service account %s/%s: %w", ns, sa.Name, err)
	}
	return nil
}

func userdataSecretName(machine string) string { return machine + "-userdata" }

// ensureUserdata writes the machine's userdata Secret; one of another
// owner is not touched.
func (m *Machines) ensureUserdata(ctx context.Context, ns string, ref runtime.MachineRef, userdata []byte) error {
	name := userdataSecretName(ref.Name)
	s := &corev1.Secret{}
	err := m.reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, s)
	switch {
	case err == nil && s.Labels[OwnerUIDLabel] != ref.Owner:
		return fmt.Errorf("secret %s/%s (owner %q): %w", ns, name, s.Labels[OwnerUIDLabel], runtime.ErrMachineExists)
	case err == nil:
		s.Data = map[string][]byte{userdataKey: userdata}
		return m.client.Update(ctx, s)
	case !apierrors.IsNotFound(err):
		return err
	}
	s = &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: machineLabels(ref)},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{userdataKey: userdata},
	}
	if err := m.client.Create(ctx, s); err != nil {
		return fmt.Errorf("create secret %s/%s: %w", ns, name, err)
	}
	return nil
}

func machineLabels(ref runtime.MachineRef) map[string]string {
	return map[string]string{ManagedByLabel: ManagedBy, MachineLabel: ref.Name, OwnerUIDLabel: ref.Owner}
}

// machinePod is the machine's pod.
func (m *Machines) machinePod(ns string, ref runtime.MachineRef) *corev1.Pod {
	pod := m.basePod(ns, ref)
	if m.opts.KubeletDir != "" {
		c := &pod.Spec.Containers[0]
		// join runs the node's CSI plugin on it (machine.VolumesDirEnv).
		c.Env = append(c.Env, corev1.EnvVar{Name: "HYPERSHIFT_VOLUMES_DIR", Value: MachineHotplugDir})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{
			Name: "hotplug", MountPath: MachineHotplugDir, MountPropagation: ptr.To(corev1.MountPropagationHostToContainer),
		})
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "hotplug", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{
			Path: HotplugDir(m.opts.KubeletDir, ns, ref.Name), Type: ptr.To(corev1.HostPathDirectoryOrCreate),
		}}})
	}
	return pod
}

func (m *Machines) basePod(ns string, ref runtime.MachineRef) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ref.Name, Labels: machineLabels(ref)},
		Spec: corev1.PodSpec{
			// The Node is named for the machine: the kubelet takes the host name.
			Hostname:                      ref.Name,
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: ptr.To[int64](machineGracePeriod),
			ServiceAccountName:            machineServiceAccount,
			AutomountServiceAccountToken:  ptr.To(false),
			EnableServiceLinks:            ptr.To(false),
			Containers: []corev1.Container{{
				Name:            "machine",
				Image:           m.opts.Image,
				ImagePullPolicy: corev1.PullIfNotPresent,
				Command:         []string{"/hypershift", "machine", "boot", "--userdata", machineUserdataDir + "/" + userdataKey},
				Env: []corev1.EnvVar{
					{Name: "PATH", Value: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
					{Name: "HOME", Value: "/root"},
					{Name: "HYPERSHIFT_PROVIDER_ID", Value: ref.ProviderID},
				},
				SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)},
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/hypershift", "machine", "boot", "--check"}}},
					PeriodSeconds: 5,
				},
				// A userdata that fails ends the pod; its log's end says why.
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU:    resource.MustParse("10m"),
					corev1.ResourceMemory: resource.MustParse("64Mi"),
				}},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "userdata", MountPath: machineUserdataDir, ReadOnly: true},
					// The machine's own disk: containerd's snapshots cannot
					// be on the container's overlay root.
					{Name: "var-lib", MountPath: "/var/lib"},
					{Name: "var-log", MountPath: "/var/log"},
					{Name: "run", MountPath: "/run"},
				},
			}},
			Volumes: []corev1.Volume{
				{Name: "userdata", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: userdataSecretName(ref.Name), DefaultMode: ptr.To[int32](0o600)}}},
				{Name: "var-lib", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "var-log", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "run", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			},
		},
	}
}

// Delete implements runtime.Machines: the owner's pod (its first process
// resets the node), then its Secret, then — with the last machine — the
// namespace; each only when it carries the owner, with its UID as
// precondition.
func (m *Machines) Delete(ctx context.Context, ref runtime.MachineRef) (bool, error) {
	ns := MachinesNamespace(ref.Namespace)
	pod := &corev1.Pod{}
	err := m.reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: ref.Name}, pod)
	switch {
	case err == nil && pod.Labels[OwnerUIDLabel] != ref.Owner:
		// Not this owner's: left alone, and the Secret of the name too.
		return true, nil
	case err == nil && pod.DeletionTimestamp != nil:
		return false, nil
	case err == nil:
		if err := m.client.Delete(ctx, pod, client.Preconditions{UID: &pod.UID}); err != nil && !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("delete pod %s/%s: %w", ns, ref.Name, err)
		}
		return false, nil
	case !apierrors.IsNotFound(err):
		return false, err
	}
	s := &corev1.Secret{}
	err = m.reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: userdataSecretName(ref.Name)}, s)
	switch {
	case err == nil && s.Labels[OwnerUIDLabel] == ref.Owner:
		if err := m.client.Delete(ctx, s, client.Preconditions{UID: &s.UID}); err != nil && !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("delete secret %s/%s: %w", ns, s.Name, err)
		}
	case err != nil && !apierrors.IsNotFound(err):
		return false, err
	}
	return true, m.deleteNamespaceIfEmpty(ctx, ns, ref.Cluster)
}

// deleteNamespaceIfEmpty deletes the cluster's machines namespace once no
// machine pod and no claim (the volume mirror's: a guest volume's data)
// is left in it; one that holds claims goes with the HostedCluster.
func (m *Machines) deleteNamespaceIfEmpty(ctx context.Context, name, cluster string) error {
	ns := &corev1.Namespace{}
	if err := m.reader.Get(ctx, client.ObjectKey{Name: name}, ns); err != nil {
		return client.IgnoreNotFound(err)
	}
	if ns.Labels[OwnerUIDLabel] != cluster || ns.Labels[ManagedByLabel] != ManagedBy || ns.DeletionTimestamp != nil {
		return nil
	}
	pods := &corev1.PodList{}
	if err := m.reader.List(ctx, pods, client.InNamespace(name), client.HasLabels{MachineLabel}, client.Limit(1)); err != nil {
		return err
	}
	if len(pods.Items) > 0 {
		return nil
	}
	claims := &corev1.PersistentVolumeClaimList{}
	if err := m.reader.List(ctx, claims, client.InNamespace(name), client.Limit(1)); err != nil {
		return err
	}
	if len(claims.Items) > 0 {
		return nil
	}
	if err := m.client.Delete(ctx, ns, client.Preconditions{UID: &ns.UID}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete namespace %s: %w", name, err)
	}
	return nil
}
