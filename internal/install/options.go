package install

import (
	"fmt"
	"path"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"k8s.io/apimachinery/pkg/util/validation"

	"hypershift.dev/internal/clusterapi"
	"hypershift.dev/internal/image"
	"hypershift.dev/internal/version"
)

// Runtimes an installation runs hosted control planes with.
const (
	// RuntimeProcess runs them as processes of the operator's host
	// (`hypershift up`, `hypershift operator`).
	RuntimeProcess = "process"
	// RuntimeKube runs them as pods of the management cluster.
	RuntimeKube = "kube"
)

// ManagedByLabel, set to ManagedBy on every object install makes, is how
// uninstall finds them; FieldOwner is install's server-side-apply manager.
const (
	ManagedByLabel = "app.kubernetes.io/managed-by"
	ManagedBy      = "hypershift-install"
	FieldOwner     = "hypershift-install"
)

// Options say what to install. Their names are the flags of
// `hypershift install`.
type Options struct {
	// Runtime is RuntimeProcess or RuntimeKube (the default).
	Runtime string
	// Image is the operator's and control planes' image; default
	// image.Ref(), the image `hypershift image save` writes.
	Image string
	// MachineImage runs the machines of Host NodePools, privileged pods
	// of the cluster (docs/machines.md); default image.MachineRef(), the
	// image `hypershift image save --machine` writes.
	MachineImage string
	// KubeletDir is the kubelet's root directory on the cluster's nodes,
	// passed to the operator (volumes are attached to machines there);
	// default DefaultKubeletDir.
	KubeletDir string
	// AWSProviderNamespace is where cluster-api-provider-aws runs, passed
	// to the operator; empty: its default, capa-system.
	AWSProviderNamespace string
	// Namespace is the operator's; default "hypershift".
	Namespace string
	// Replicas of the operator, and of Cluster API's manager (one leads,
	// the others stand by); default 2.
	Replicas int32
	// StorageClassName of etcd's volumes; empty: the cluster's default.
	StorageClassName string
	// Versions are the Kubernetes versions the installation can run (its
	// release catalog); the runtime policy refuses others. Default: the
	// compiled-in one.
	Versions []string
	// ClusterAPIDir holds Cluster API's manager and its CRDs, as `make
	// build` lays them out (internal/clusterapi); it has no flag: the
	// default is the directory beside the hypershift binary,
	// clusterapi.DefaultDir(). Its CRDs are installed, and the manager
	// run from the image; when the directory does not exist, neither is.
	ClusterAPIDir string

	// apiOnly leaves out the operator: the CRDs and policies alone.
	apiOnly bool
}

// DefaultNamespace is the operator's namespace unless told otherwise.
const DefaultNamespace = "hypershift"

// DefaultKubeletDir is the kubelet's root directory on a node unless told
// otherwise (the kubelet's own default).
const DefaultKubeletDir = "/var/lib/kubelet"

func (o Options) withDefaults() Options {
	if o.Runtime == "" {
		o.Runtime = RuntimeKube
	}
	if o.Image == "" {
		o.Image = image.Ref()
	}
	if o.MachineImage == "" {
		o.MachineImage = image.MachineRef()
	}
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	if o.KubeletDir == "" {
		o.KubeletDir = DefaultKubeletDir
	}
	if o.Replicas == 0 {
		o.Replicas = 2
	}
	if len(o.Versions) == 0 {
		o.Versions = []string{version.KubernetesVersion}
	}
	if o.ClusterAPIDir == "" {
		o.ClusterAPIDir = clusterapi.DefaultDir()
	}
	return o
}

// Validate says, naming the flag, what is wrong with the options (defaults
// applied), before anything is made.
func (o Options) Validate() error {
	o = o.withDefaults()
	if o.Runtime != RuntimeProcess && o.Runtime != RuntimeKube {
		return fmt.Errorf("--runtime %q: use %s or %s", o.Runtime, RuntimeKube, RuntimeProcess)
	}
	if errs := validation.IsDNS1123Label(o.Namespace); len(errs) > 0 {
		return fmt.Errorf("--namespace %q is not a valid namespace name: %s", o.Namespace, strings.Join(errs, "; "))
	}
	if _, err := name.ParseReference(o.Image); err != nil {
		return fmt.Errorf("--image %q is not an image reference (e.g. %s): %w", o.Image, image.Ref(), err)
	}
	if ns := o.AWSProviderNamespace; ns != "" && len(validation.IsDNS1123Label(ns)) > 0 {
		return fmt.Errorf("--aws-provider-namespace %q is not a valid namespace name", ns)
	}
	if _, err := name.ParseReference(o.MachineImage); err != nil {
		return fmt.Errorf("--machine-image %q is not an image reference (e.g. %s): %w", o.MachineImage, image.MachineRef(), err)
	}
	if !path.IsAbs(o.KubeletDir) {
		return fmt.Errorf("--kubelet-dir %q must be an absolute path: the kubelet's root directory on the cluster's nodes", o.KubeletDir)
	}
	if o.Replicas < 1 {
		return fmt.Errorf("--replicas %d: the operator needs at least 1", o.Replicas)
	}
	if o.StorageClassName != "" {
		if errs := validation.IsDNS1123Subdomain(o.StorageClassName); len(errs) > 0 {
			return fmt.Errorf("--storage-class %q is not a valid StorageClass name: %s", o.StorageClassName, strings.Join(errs, "; "))
		}
	}
	return nil
}
