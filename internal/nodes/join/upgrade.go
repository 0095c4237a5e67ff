package join

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/nodes/bootstrap"
	"hypershift.dev/internal/release"
	"hypershift.dev/internal/releaseserver"
	"hypershift.dev/internal/runtime"
	"hypershift.dev/internal/version"
)

// A node's kubelet and kube-proxy run the release node.json names
// (KubernetesVersion): the hypershift binary's own (`hypershift component
// kubelet`) when it is the binary's compiled-in version, else the release
// binary fetched from the control plane's release server into
// NODE_DIR/releases/<version>/kubernetes (`kubernetes kubelet`). The
// NodePool controller asks for another version by annotating the Node
// (hypershiftv1alpha1.NodeKubernetesVersionAnnotation) once it drained it;
// the node daemon watches its own Node with the kubelet's credentials,
// fetches that release (client certificate), and restarts the kubelet and
// kube-proxy from it. Pods keep running: containerd and its shims are not
// restarted, and a restarted kubelet adopts the running containers.

// compiledIn says whether version is the one linked into this binary.
func compiledIn(v string) bool { return v == "" || v == version.KubernetesVersion }

// runRelease makes spec run its component from the node's release.
func (n *Node) runRelease(spec runtime.Spec) runtime.Spec {
	if compiledIn(n.KubernetesVersion) {
		return spec
	}
	spec.Command = n.ReleaseBinary(n.KubernetesVersion)
	spec.Args = append([]string{spec.Component}, spec.Args...)
	return spec
}

// CheckKubernetesVersion refuses a --kubernetes-version that is not
// vMAJOR.MINOR.PATCH ("" is the compiled-in one).
func CheckKubernetesVersion(v string) error {
	if _, ok := release.Minor(v); v != "" && !ok {
		return fmt.Errorf("--kubernetes-version %q is not a Kubernetes version: pass vMAJOR.MINOR.PATCH, such as %s", v, version.KubernetesVersion)
	}
	return nil
}

// RunningVersion is the Kubernetes version the node's kubelet runs.
func (n *Node) RunningVersion() string { return release.Normalize(n.KubernetesVersion) }

// EnsureRelease makes sure the release of version is on the node, fetched
// with the credentials of kubeconfig (the bootstrap token at join, the
// kubelet's client certificate after), and records it in n (not saved).
// A cached binary matching the sha256 node.json recorded is used as is, so
// a node daemon restarted while the control plane is away still starts.
func (n *Node) EnsureRelease(ctx context.Context, kubeconfig, v string) error {
	if compiledIn(v) {
		n.KubernetesVersion, n.ReleaseSHA256 = "", ""
		return nil
	}
	dest := n.ReleaseBinary(v)
	if n.KubernetesVersion == v && n.ReleaseSHA256 != "" {
		if sum, err := releaseserver.FileSHA256(dest); err == nil && sum == n.ReleaseSHA256 {
			return nil
		}
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("fetch release %s: %w", v, err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	cm, err := kube.CoreV1().ConfigMaps(bootstrap.ReleasesInfoNamespace).Get(ctx, bootstrap.ReleasesInfoName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("read %s/%s (the control plane's release server; platform None clusters publish it): %w",
			bootstrap.ReleasesInfoNamespace, bootstrap.ReleasesInfoName, err)
	}
	info, err := bootstrap.ParseReleasesInfo(cm.Data)
	if err != nil {
		return err
	}
	// The same credentials and CA as the API connection: the release
	// server's certificate is issued by the cluster's root CA, the one
	// pinned at join.
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return err
	}
	client.Timeout = 10 * time.Minute
	if err := FetchRelease(ctx, client, info, v, dest); err != nil {
		return err
	}
	n.KubernetesVersion, n.ReleaseSHA256 = v, info.SHA256[v]
	return nil
}

// ensureRunningRelease checks, before the kubelet starts, that the release
// node.json names is on the node (fetched again if it is gone or damaged,
// with the kubelet's credentials, or the token before it has them).
func (n *Node) ensureRunningRelease(ctx context.Context) error {
	if compiledIn(n.KubernetesVersion) {
		return nil
	}
	kubeconfig := n.KubeletKubeconfig()
	if _, err := os.Stat(kubeconfig); err != nil {
		kubeconfig = n.BootstrapKubeconfigPath()
	}
	return n.EnsureRelease(ctx, kubeconfig, n.KubernetesVersion)
}

// wantedVersion is the version the controller asks node to run, when it
// differs from running.
func wantedVersion(node *corev1.Node, running string) (string, bool) {
	v := node.Annotations[hypershiftv1alpha1.NodeKubernetesVersionAnnotation]
	if v == "" || release.Normalize(v) == release.Normalize(running) {
		return "", false
	}
	return v, true
}

// watchVersion watches the Node named name and calls upgrade with the
// version its annotation asks for whenever it differs from running(),
// until ctx ends. Errors (of the watch or of upgrade) are logged and
// retried after a pause.
func watchVersion(ctx context.Context, kube kubernetes.Interface, name string, running func() string, upgrade func(context.Context, string) error, log logr.Logger) {
	const retry = 2 * time.Second
	sel := fields.OneTermEqualSelector("metadata.name", name).String()
	check := func(node *corev1.Node) bool {
		if node.Name != name {
			return true
		}
		v, ok := wantedVersion(node, running())
		if !ok {
			return true
		}
		log.Info("the NodePool controller asks for another Kubernetes version", "node", name, "from", running(), "to", v)
		if err := upgrade(ctx, v); err != nil {
			log.Error(err, "upgrade the node", "node", name, "version", v)
			return false
		}
		log.Info("kubelet and kube-proxy restarted", "node", name, "version", v)
		return true
	}
	for ctx.Err() == nil {
		list, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{FieldSelector: sel})
		if err == nil && len(list.Items) == 1 && !check(&list.Items[0]) {
			err = fmt.Errorf("upgrade failed")
		}
		var w watch.Interface
		if err == nil {
			w, err = kube.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{FieldSelector: sel, ResourceVersion: list.ResourceVersion})
		}
		if err == nil {
			err = consume(ctx, w, check)
		}
		if err != nil && ctx.Err() == nil {
			log.V(1).Info("watch of the node's version: "+err.Error(), "node", name)
		}
		select {
		case <-ctx.Done():
		case <-time.After(retry):
		}
	}
}

// consume passes the watched Nodes to check until the watch ends; a failed
// check ends it too, so it is retried from a fresh list.
func consume(ctx context.Context, w watch.Interface, check func(*corev1.Node) bool) error {
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.ResultChan():
			if !ok {
				return nil
			}
			node, isNode := ev.Object.(*corev1.Node)
			if !isNode || ev.Type == watch.Deleted {
				continue
			}
			if !check(node) {
				return fmt.Errorf("upgrade failed")
			}
		}
	}
}

// watchUpgrades moves the node to the version its Node's annotation asks
// for: fetch the release with the kubelet's client certificate, record it
// in node.json, and apply the node's specs — the process runtime restarts
// the kubelet and kube-proxy, whose command changed.
func (n *Node) watchUpgrades(ctx context.Context, apply func(context.Context, []runtime.Spec) error, log logr.Logger) {
	// Its trust follows a root-CA rotation (kubeletclient.go).
	cfg, err := n.followingRESTConfig()
	if err != nil {
		log.Error(err, "watch the node's version: no kubelet credentials", "node", n.Name)
		return
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		log.Error(err, "watch the node's version", "node", n.Name)
		return
	}
	watchVersion(ctx, kube, n.Name, n.RunningVersion, func(ctx context.Context, v string) error {
		// node.json and the specs change one writer at a time (trust.go).
		nodeStateMu.Lock()
		defer nodeStateMu.Unlock()
		if err := n.EnsureRelease(ctx, n.KubeletKubeconfig(), v); err != nil {
			return err
		}
		if err := n.Save(); err != nil {
			return err
		}
		return apply(ctx, n.Specs())
	}, log)
}
