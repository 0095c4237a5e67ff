package lbmirror

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	kubevirtplatform "hypershift.dev/internal/controller/nodepool/platform/kubevirt"
	"hypershift.dev/internal/hostedref"
	"hypershift.dev/internal/kubeconfig"
)

// infra is where a cluster's mirrors are made and its machines run: the
// control-plane namespace of the management cluster (platform Host, and
// KubeVirt without credentials), or the namespace of the virtual machines
// in the external infrastructure cluster (KubeVirt with credentials).
type infra struct {
	namespace string
	// client writes mirrors and slices; reader reads them, and the
	// virt-launcher pods, from the API server.
	client client.Client
	reader client.Reader
	// remote: the user's infrastructure cluster, reached with the user's
	// credentials; close lets its connections go.
	remote bool
	close  func()
}

// KubeVirt's names, as KubeVirt and cluster-api-provider-kubevirt set
// them: the launcher pod of a VirtualMachineInstance carries
// kubevirt.io=virt-launcher and is controlled by its VMI, which CAPK names
// like the KubevirtMachine (and the guest's hostname).
const (
	launcherLabel = "kubevirt.io"
	launcherValue = "virt-launcher"
	vmiGroup      = "kubevirt.io"
	vmiKind       = "VirtualMachineInstance"
	kubevirtKind  = "KubevirtMachine"
)

// MaxResponseBytes bounds each response of an external infrastructure
// cluster, whose server the user names: 16 MiB, well above a page of 100
// pods.
const MaxResponseBytes = 16 << 20

// maxPages bounds the pages of virt-launcher pods, and of Machines, one
// pass reads: 2,000 objects in pages of 100, whatever continue tokens a
// server hands out.
const maxPages = 20

// remoteTimeout bounds a pass, or a deletion's attempt, that talks to an
// external infrastructure cluster: a slow server of the user's holds one
// of the controller's workers that long at most.
const remoteTimeout = 2 * time.Minute

var machineListGVK = schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "MachineList"}

// infraOf is the cluster's infrastructure; fallback: a deleted cluster's,
// which may be reached with the control-plane namespace's copy of the
// kubeconfig once the user's Secret is gone.
func (r *Reconciler) infraOf(ctx context.Context, hc *hypershiftv1alpha1.HostedCluster, fallback bool) (*infra, error) {
	cp := hostedref.ControlPlaneNamespace(hc)
	kv := hc.Spec.Platform.KubeVirt
	if hc.Spec.Platform.Type != hypershiftv1alpha1.KubeVirtPlatform || kv == nil || kv.Credentials == nil {
		return &infra{namespace: cp, client: r.Client, reader: r.APIReader, close: func() {}}, nil
	}
	return r.remoteInfra(ctx, hc, fallback)
}

// remoteInfra reaches the external infrastructure cluster with the
// kubeconfig of the user's Secret — or, once that is gone (a cluster
// deleted with its Secret), the copy the NodePool controller made in the
// control-plane namespace, if it is this cluster's. Only the server, CA,
// server name and inline credentials are read (kubeconfig.Sanitize, then
// Parse): no exec plugin, file or proxy of the user's runs with the
// operator's rights. Redirects are refused (the server is the user's, and
// so would be where it sends the operator), every response is read under
// MaxResponseBytes, and no discovery is made. Errors about the Secret
// (missing, no key, refused content) are errUnreachable.
func (r *Reconciler) remoteInfra(ctx context.Context, hc *hypershiftv1alpha1.HostedCluster, fallback bool) (*infra, error) {
	creds := hc.Spec.Platform.KubeVirt.Credentials
	ref := creds.InfraKubeConfigSecret
	const field = "spec.platform.kubevirt.credentials.infraKubeConfigSecret"
	s := &corev1.Secret{}
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: hc.Namespace, Name: ref.Name}, s)
	key := ref.Key
	if apierrors.IsNotFound(err) && fallback {
		cp := client.ObjectKey{Namespace: hostedref.ControlPlaneNamespace(hc), Name: kubevirtplatform.InfraKubeconfigSecret(hc.Name)}
		err = r.APIReader.Get(ctx, cp, s)
		if err == nil && s.Labels[hostedref.OwnerUIDLabel] != string(hc.UID) {
			err = apierrors.NewNotFound(corev1.Resource("secrets"), cp.Name)
		}
		key = "kubeconfig"
	}
	switch {
	case apierrors.IsNotFound(err):
		return nil, errUnreachable{fmt.Errorf("secret %s/%s, named by %s, does not exist", hc.Namespace, ref.Name, field)}
	case err != nil:
		return nil, fmt.Errorf("secret %s/%s, named by %s: %w", hc.Namespace, ref.Name, field, err)
	}
	data, ok := s.Data[key]
	if !ok {
		return nil, errUnreachable{fmt.Errorf("secret %s/%s, named by %s, has no key %q", s.Namespace, s.Name, field, key)}
	}
	clean, err := kubeconfig.Sanitize(data)
	if err != nil {
		return nil, errUnreachable{fmt.Errorf("secret %s/%s, named by %s: %w", s.Namespace, s.Name, field, err)}
	}
	cfg, err := kubeconfig.Parse(clean)
	if err != nil {
		return nil, errUnreachable{fmt.Errorf("secret %s/%s, named by %s: %w", s.Namespace, s.Name, field, err)}
	}
	cfg.Timeout = 30 * time.Second
	cfg.QPS, cfg.Burst = 20, 40
	cfg.UserAgent = "hypershift-lbmirror-controller"
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return boundedBodies{rt} })
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, errUnreachable{err}
	}
	httpClient.CheckRedirect = func(*http.Request, []*http.Request) error {
		return errors.New("the infrastructure cluster answered with a redirect, which is not followed")
	}
	c, err := client.New(cfg, client.Options{HTTPClient: httpClient, Scheme: infraScheme, Mapper: infraMapper})
	if err != nil {
		return nil, errUnreachable{err}
	}
	return &infra{namespace: creds.InfraNamespace, client: c, reader: c, remote: true, close: httpClient.CloseIdleConnections}, nil
}

// errUnreachable: no connection to the infrastructure cluster can be
// made, whatever the wait: its Secret is gone, or refused.
type errUnreachable struct{ error }

func (e errUnreachable) Unwrap() error { return e.error }

// infraScheme and infraMapper are the kinds the mirror reads and writes
// in an infrastructure cluster, mapped without asking its discovery.
var (
	infraScheme = func() *runtime.Scheme {
		s := runtime.NewScheme()
		if err := errors.Join(corev1.AddToScheme(s), discoveryv1.AddToScheme(s)); err != nil {
			panic(err)
		}
		return s
	}()
	infraMapper = func() meta.RESTMapper {
		m := meta.NewDefaultRESTMapper(nil)
		for _, gvk := range []schema.GroupVersionKind{
			corev1.SchemeGroupVersion.WithKind("Service"), corev1.SchemeGroupVersion.WithKind("Pod"),
			discoveryv1.SchemeGroupVersion.WithKind("EndpointSlice"),
		} {
			m.Add(gvk, meta.RESTScopeNamespace)
		}
		return m
	}()
)

// boundedBodies cuts every response body at MaxResponseBytes, with an
// error rather than a short read.
type boundedBodies struct{ next http.RoundTripper }

func (b boundedBodies) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := b.next.RoundTrip(req)
	if err == nil && resp.Body != nil {
		resp.Body = &boundedBody{ReadCloser: resp.Body, left: MaxResponseBytes}
	}
	return resp, err
}

type boundedBody struct {
	io.ReadCloser
	left int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// The end of a response of exactly the bound is not past it.
		var one [1]byte
		if n, err := b.ReadCloser.Read(one[:]); n == 0 {
			return 0, err
		}
		return 0, fmt.Errorf("response larger than %d bytes", MaxResponseBytes)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

// kubevirtMachines are the cluster's ready KubeVirt machines: Cluster API
// Machines of the control-plane namespace, running and not being deleted,
// whose KubevirtMachine's VirtualMachineInstance has a running, ready
// launcher pod in the infrastructure namespace, at that pod's addresses.
// The addresses are the pod's, which the infrastructure cluster's network
// gives it, never an address the VM's guest agent reports (what the
// hosted cluster's admin, root on the VM, could choose). A VMI with two
// ready launcher pods is being live-migrated: the VM runs in the older
// one until the migration ends, when that pod ends too.
func (r *Reconciler) kubevirtMachines(ctx context.Context, hc *hypershiftv1alpha1.HostedCluster, in *infra) ([]machine, error) {
	nodes, err := r.runningMachines(ctx, hostedref.ControlPlaneNamespace(hc))
	if err != nil || len(nodes) == 0 {
		return nil, err
	}
	type launcher struct {
		ips   []net.IP
		start time.Time
	}
	launchers := map[string]launcher{}
	err = listPages(ctx, in.reader, r.Limits.PageSize, func() *corev1.PodList { return &corev1.PodList{} }, func(pods *corev1.PodList) {
		for i := range pods.Items {
			p := &pods.Items[i]
			vmi := launcherOf(p)
			if vmi == "" || nodes[vmi] == "" || !podReady(p) {
				continue
			}
			l := launcher{start: p.CreationTimestamp.Time}
			if p.Status.StartTime != nil {
				l.start = p.Status.StartTime.Time
			}
			for _, a := range p.Status.PodIPs {
				if ip := net.ParseIP(a.IP); ip != nil && len(l.ips) < 2 {
					l.ips = append(l.ips, ip)
				}
			}
			if have, ok := launchers[vmi]; len(l.ips) > 0 && (!ok || l.start.Before(have.start)) {
				launchers[vmi] = l
			}
		}
	}, client.InNamespace(in.namespace), client.MatchingLabels{launcherLabel: launcherValue, hostedref.ClusterUIDLabel: string(hc.UID)})
	if err != nil {
		return nil, fmt.Errorf("virt-launcher pods in %s: %w", in.namespace, err)
	}
	out := make([]machine, 0, len(launchers))
	for vmi, l := range launchers {
		out = append(out, machine{Node: nodes[vmi], IPs: l.ips})
	}
	slices.SortFunc(out, func(a, b machine) int { return strings.Compare(a.Node, b.Node) })
	return out, nil
}

// runningMachines maps the VMI name (the KubevirtMachine's) of each
// running Machine of the namespace that has a Node to that Node's name.
func (r *Reconciler) runningMachines(ctx context.Context, ns string) (map[string]string, error) {
	out := map[string]string{}
	newList := func() *unstructured.UnstructuredList {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(machineListGVK)
		return list
	}
	err := listPages(ctx, r.APIReader, r.Limits.PageSize, newList, func(list *unstructured.UnstructuredList) {
		for _, m := range list.Items {
			kind, _, _ := unstructured.NestedString(m.Object, "spec", "infrastructureRef", "kind")
			vmi, _, _ := unstructured.NestedString(m.Object, "spec", "infrastructureRef", "name")
			node, _, _ := unstructured.NestedString(m.Object, "status", "nodeRef", "name")
			phase, _, _ := unstructured.NestedString(m.Object, "status", "phase")
			if m.GetDeletionTimestamp() == nil && kind == kubevirtKind && vmi != "" && node != "" && phase == "Running" {
				out[vmi] = node
			}
		}
	}, client.InNamespace(ns))
	switch {
	case meta.IsNoMatchError(err):
		return nil, errors.New("cluster API's Machine kind (cluster.x-k8s.io/v1beta2) is not served: no KubeVirt machine can be found")
	case err != nil:
		return nil, fmt.Errorf("machines in %s: %w", ns, err)
	}
	return out, nil
}

// listPages lists page by page, pageSize objects a page (each into a
// new list, so nothing of one page is left in the next) and at most
// maxPages pages whatever continue tokens the server hands out, calling
// each with every page. A List error is returned as it is.
func listPages[L client.ObjectList](ctx context.Context, c client.Reader, pageSize int, newList func() L, each func(L), opts ...client.ListOption) error {
	cont := ""
	for range maxPages {
		page := append(slices.Clone(opts), client.Limit(int64(pageSize)))
		if cont != "" {
			page = append(page, client.Continue(cont))
		}
		list := newList()
		if err := c.List(ctx, list, page...); err != nil {
			return err
		}
		each(list)
		if cont = list.GetContinue(); cont == "" {
			return nil
		}
	}
	return fmt.Errorf("more than %d pages", maxPages)
}

// launcherOf is the name of the VirtualMachineInstance controlling p.
func launcherOf(p *corev1.Pod) string {
	ref := metav1.GetControllerOf(p)
	if ref == nil || ref.Kind != vmiKind {
		return ""
	}
	if gv, err := schema.ParseGroupVersion(ref.APIVersion); err != nil || gv.Group != vmiGroup {
		return ""
	}
	return ref.Name
}

func podReady(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
