package nodepool

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	certificatesv1listers "k8s.io/client-go/listers/certificates/v1"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/event"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/clustercache"
	"hypershift.dev/internal/hostedref"
	"hypershift.dev/internal/nodes/bootstrap"
	"hypershift.dev/internal/nodes/podindex"
)

// hostedSyncTimeout bounds the first sync of a hosted cluster's caches.
const hostedSyncTimeout = 30 * time.Second

// hostedCluster is the controller's connection to one hosted cluster: a
// client with its admin credentials and caches of what NodePools look at
// there — Nodes, node client and kubelet-serving CSRs, and the pools'
// token Secrets and ConfigMaps in kube-system. Cache events enqueue the
// NodePool concerned.
type hostedCluster struct {
	kube        kubernetes.Interface
	nodes       corev1listers.NodeLister
	nodeIndex   cache.Indexer
	csrs        certificatesv1listers.CertificateSigningRequestLister
	clientCSRs  cache.Indexer
	secrets     corev1listers.SecretNamespaceLister
	configMaps  corev1listers.ConfigMapNamespaceLister
	informerCtx context.Context //nolint:containedctx // the lifetime of this connection's caches
	share       *cacheShare
	namespace   string
	events      chan<- event.GenericEvent
	// users are the pools that used this connection, enqueued when it is
	// disconnected.
	users sync.Map

	// Pods are cached only once an autoscaled pool needs them.
	podsMu     sync.Mutex
	pods       cache.SharedIndexInformer
	autoscaled sync.Map // pool name → true

	// rbacDone records the pools (and the cluster, as "") whose RBAC was
	// ensured over this connection.
	rbacDone sync.Map

	// grantMu serializes the approval of node client CSRs across the
	// cluster's pools; granted remembers the node names approved over this
	// connection, which the CSR cache may not show yet.
	grantMu sync.Mutex
	granted map[string]claim
}

// hostedClusters is the controller's part of the operator's connections to
// hosted clusters (internal/clustercache: health check, disconnect on
// rejected credentials). A disconnected cluster's pools are enqueued; their
// next reconcile connects again with the kubeconfig the Secret holds then.
type hostedClusters struct {
	ext    *clustercache.Extension[*hostedCluster]
	events chan event.GenericEvent
	// owners maps a connection's key (the control plane's) to its
	// HostedCluster, whose namespace the pools are in.
	owners sync.Map
}

func newHostedClusters(clusters *clustercache.Cache) *hostedClusters {
	h := &hostedClusters{events: make(chan event.GenericEvent, 4096)}
	h.ext = clustercache.Register(clusters, clustercache.ExtensionOptions[*hostedCluster]{
		Name:    "nodepool",
		Connect: h.connect,
		Configure: func(cfg *rest.Config) {
			cfg.QPS, cfg.Burst = 50, 100
			cfg.UserAgent = "hypershift-nodepool-controller"
		},
		OnDisconnect: func(_ types.NamespacedName, hc *hostedCluster, _ string) { hc.enqueueUsers() },
	})
	return h
}

// get returns the connection to the HostedCluster at key, making it (and
// waiting for its caches) when there is none, it was disconnected, or the
// kubeconfig changed.
func (h *hostedClusters) get(ctx context.Context, key types.NamespacedName, kubeconfig []byte) (*hostedCluster, error) {
	cp := hostedref.ControlPlaneKey(key)
	h.owners.Store(cp, key)
	hc, err := h.ext.Get(ctx, cp, kubeconfig)
	if err != nil {
		return nil, err
	}
	if reason := hc.share.exceeded(); reason != "" {
		// Past its share between its connect and now.
		h.ext.Forget(cp)
		return nil, errors.New(reason)
	}
	return hc, nil
}

// forget closes the controller's part of the connection to the
// HostedCluster at key.
func (h *hostedClusters) forget(key types.NamespacedName) {
	if h != nil {
		cp := hostedref.ControlPlaneKey(key)
		h.ext.Forget(cp)
		h.owners.Delete(cp)
	}
}

// connect builds the caches of the HostedCluster whose control plane is at
// cp (get recorded which); they run until run is done.
func (h *hostedClusters) connect(ctx context.Context, cp types.NamespacedName, cfg *rest.Config, run context.Context) (*hostedCluster, error) {
	owner, ok := h.owners.Load(cp)
	if !ok {
		return nil, fmt.Errorf("control plane %s: no HostedCluster asked for it", cp)
	}
	return h.connectCluster(ctx, owner.(types.NamespacedName), cp, cfg, run) //nolint:forcetypeassert // get stores only keys
}

// connectCluster builds the caches of the HostedCluster at key, whose
// control plane is at cp.
func (h *hostedClusters) connectCluster(ctx context.Context, key, cp types.NamespacedName, cfg *rest.Config, run context.Context) (*hostedCluster, error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	// Whoever administers the hosted cluster decides how many Nodes, CSRs
	// and labelled Secrets it holds: past its share (cacheLimits) the
	// caches stop and the connection is dropped.
	run, stopCaches := context.WithCancel(run)
	share := &cacheShare{cluster: key.String(), stop: stopCaches}
	connected := false
	defer func() {
		if !connected {
			stopCaches()
		}
	}()
	hasPool, err := labels.NewRequirement(hypershiftv1alpha1.NodePoolLabel, selection.Exists, nil)
	if err != nil {
		return nil, err
	}
	poolSelector := labels.NewSelector().Add(*hasPool).String()
	// Every Node: a Node's labels do not say which pool it is in (its
	// kubelet may set them); the binding does (see identity.go).
	allNodes := informers.NewSharedInformerFactoryWithOptions(kube, 10*time.Minute, informers.WithTransform(stripForCache))
	inKubeSystem := informers.NewSharedInformerFactoryWithOptions(kube, 10*time.Minute,
		informers.WithNamespace(metav1.NamespaceSystem), informers.WithTransform(stripForCache),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = poolSelector }))
	bySigner := func(signer string) informers.SharedInformerFactory {
		return informers.NewSharedInformerFactoryWithOptions(kube, 10*time.Minute, informers.WithTransform(stripForCache),
			informers.WithTweakListOptions(func(o *metav1.ListOptions) {
				o.FieldSelector = fields.OneTermEqualSelector("spec.signerName", signer).String()
			}))
	}
	servingCSRs := bySigner(certificatesv1.KubeletServingSignerName)
	clientCSRs := bySigner(certificatesv1.KubeAPIServerClientKubeletSignerName)

	nodes := allNodes.Core().V1().Nodes()
	csrs := servingCSRs.Certificates().V1().CertificateSigningRequests()
	clients := clientCSRs.Certificates().V1().CertificateSigningRequests()
	if err := nodes.Informer().AddIndexers(cache.Indexers{boundPoolIndex: indexBoundPool}); err != nil {
		return nil, err
	}
	if err := clients.Informer().AddIndexers(cache.Indexers{csrNodeIndex: indexCSRNode, csrPoolIndex: indexCSRPool}); err != nil {
		return nil, err
	}
	secrets := inKubeSystem.Core().V1().Secrets()
	configMaps := inKubeSystem.Core().V1().ConfigMaps()
	hc := &hostedCluster{
		kube:        kube,
		nodes:       nodes.Lister(),
		nodeIndex:   nodes.Informer().GetIndexer(),
		csrs:        csrs.Lister(),
		clientCSRs:  clients.Informer().GetIndexer(),
		secrets:     secrets.Lister().Secrets(metav1.NamespaceSystem),
		configMaps:  configMaps.Lister().ConfigMaps(metav1.NamespaceSystem),
		granted:     map[string]claim{},
		informerCtx: run,
		share:       share,
		namespace:   key.Namespace,
		events:      h.events,
	}
	enqueueByLabel := h.handler(key.Namespace, func(obj any) []string {
		if o, ok := obj.(metav1.Object); ok {
			return []string{o.GetLabels()[hypershiftv1alpha1.NodePoolLabel]}
		}
		return nil
	})
	enqueueNodePool := h.handler(key.Namespace, func(obj any) []string {
		node, ok := obj.(*corev1.Node)
		if !ok {
			return nil
		}
		if pool := node.Labels[bootstrap.BindingLabel]; pool != "" {
			return []string{pool}
		}
		return hc.claimants(node.Name) // a node to bind
	})
	enqueueByRequester := h.handler(key.Namespace, func(obj any) []string {
		csr, ok := obj.(*certificatesv1.CertificateSigningRequest)
		if !ok {
			return nil
		}
		if node, err := hc.nodes.Get(bootstrap.NodeNameOf(csr)); err == nil {
			return []string{node.Labels[bootstrap.BindingLabel]}
		}
		return nil // the node's registration brings the pool back
	})
	enqueueByTokenPool := h.handler(key.Namespace, func(obj any) []string {
		if csr, ok := obj.(*certificatesv1.CertificateSigningRequest); ok {
			if pool, ok := bootstrap.PoolOfGroups(csr.Spec.Groups); ok {
				return []string{pool}
			}
		}
		return nil
	})
	for _, reg := range []struct {
		informer cache.SharedIndexInformer
		handler  cache.ResourceEventHandler
		what     string
		limit    int
	}{
		{nodes.Informer(), enqueueNodePool, "Nodes", cacheLimits.nodes},
		{secrets.Informer(), enqueueByLabel, "Secrets labelled " + hypershiftv1alpha1.NodePoolLabel + " in kube-system", cacheLimits.labelled},
		{configMaps.Informer(), enqueueByLabel, "ConfigMaps labelled " + hypershiftv1alpha1.NodePoolLabel + " in kube-system", cacheLimits.labelled},
		{csrs.Informer(), enqueueByRequester, "CertificateSigningRequests for " + certificatesv1.KubeletServingSignerName, cacheLimits.csrs},
		{clients.Informer(), enqueueByTokenPool, "CertificateSigningRequests for " + certificatesv1.KubeAPIServerClientKubeletSignerName, cacheLimits.csrs},
	} {
		if _, err := reg.informer.AddEventHandler(share.counter(reg.what, reg.limit)); err != nil {
			return nil, err
		}
		if _, err := reg.informer.AddEventHandler(reg.handler); err != nil {
			return nil, err
		}
	}
	for _, f := range []informers.SharedInformerFactory{allNodes, inKubeSystem, servingCSRs, clientCSRs} {
		f.Start(run.Done())
	}
	syncCtx, cancel := context.WithTimeout(ctx, hostedSyncTimeout)
	defer cancel()
	defer context.AfterFunc(run, cancel)() // disconnected meanwhile (credentials rejected): stop waiting
	if !cache.WaitForCacheSync(syncCtx.Done(), nodes.Informer().HasSynced, csrs.Informer().HasSynced,
		clients.Informer().HasSynced, secrets.Informer().HasSynced, configMaps.Informer().HasSynced) {
		if reason := share.exceeded(); reason != "" {
			return nil, errors.New(reason)
		}
		return nil, fmt.Errorf("hosted cluster %s: caches did not sync within %s", key, hostedSyncTimeout)
	}
	// Connected, a connection past its share is forgotten and its pools
	// come back: the next connect says why it is refused.
	share.setDrop(func() {
		h.ext.Forget(cp)
		hc.enqueueUsers()
	})
	if reason := share.exceeded(); reason != "" {
		return nil, errors.New(reason)
	}
	connected = true
	return hc, nil
}

// cacheLimits are how many objects of each kind the NodePool controller
// caches of one hosted cluster: Kubernetes' own limit of 5,000 Nodes, and
// as many CSRs of each node signer as two renewals of those nodes while
// the controller manager keeps them (an hour once issued).
var cacheLimits = struct{ nodes, csrs, labelled int }{nodes: 5000, csrs: 10000, labelled: 5000}

// cacheShare counts what the caches of one hosted cluster hold and stops
// them when a kind passes its limit.
type cacheShare struct {
	cluster string
	stop    func()

	mu     sync.Mutex
	reason string
	drop   func() // once connected: forget the connection
}

// counter counts the objects of one informer.
func (s *cacheShare) counter(what string, limit int) cache.ResourceEventHandler {
	var n atomic.Int64
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) {
			if n.Add(1) > int64(limit) {
				s.exceed(fmt.Sprintf("hosted cluster %s holds more than %d %s, the most the operator caches of one cluster: "+
					"it stopped watching the cluster and manages none of its NodePools until they are fewer", s.cluster, limit, what))
			}
		},
		DeleteFunc: func(any) { n.Add(-1) },
	}
}

func (s *cacheShare) exceed(reason string) {
	s.mu.Lock()
	if s.reason != "" {
		s.mu.Unlock()
		return
	}
	s.reason = reason
	drop := s.drop
	s.mu.Unlock()
	s.stop()
	if drop != nil {
		go drop()
	}
}

func (s *cacheShare) setDrop(drop func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.drop = drop
}

// exceeded is why the caches stopped, or "".
func (s *cacheShare) exceeded() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reason
}

// stripForCache drops from an object of a hosted cluster what the NodePool
// controller never reads before it is cached: managed fields (often the
// larger part of an object) and a Node's image list (up to 50 entries of
// names a node's kubelet reports). Whoever administers the hosted cluster
// decides how many such objects there are; what each costs the operator is
// kept to what is used.
func stripForCache(obj any) (any, error) {
	if o, ok := obj.(metav1.Object); ok {
		o.SetManagedFields(nil)
	}
	if node, ok := obj.(*corev1.Node); ok {
		node.Status.Images = nil
	}
	return obj, nil
}

// enqueueUsers enqueues the pools that used this connection.
func (hc *hostedCluster) enqueueUsers() {
	hc.users.Range(func(pool, _ any) bool {
		name, _ := pool.(string)
		np := &hypershiftv1alpha1.NodePool{ObjectMeta: metav1.ObjectMeta{Namespace: hc.namespace, Name: name}}
		select {
		case hc.events <- event.GenericEvent{Object: np}:
		default: // full: the periodic requeue covers it
		}
		return true
	})
}

// handler enqueues the NodePools, in namespace, that pools() names.
func (h *hostedClusters) handler(namespace string, pools func(obj any) []string) cache.ResourceEventHandler {
	enqueue := func(obj any) {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		for _, name := range pools(obj) {
			if name == "" {
				continue
			}
			np := &hypershiftv1alpha1.NodePool{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
			select {
			case h.events <- event.GenericEvent{Object: np}:
			default: // full: the periodic requeue covers it
			}
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
		DeleteFunc: enqueue,
	}
}

// poolNodes lists the Nodes bound to a pool from the cache, by name.
func (hc *hostedCluster) poolNodes(pool string) (map[string]*corev1.Node, error) {
	hc.users.Store(pool, true)
	list, err := hc.nodeIndex.ByIndex(boundPoolIndex, pool)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*corev1.Node, len(list))
	for _, obj := range list {
		if n, ok := obj.(*corev1.Node); ok {
			out[n.Name] = n
		}
	}
	return out, nil
}

// podCache returns a cache of the cluster's pods, starting it on first use.
// Pods that cannot be scheduled, and pods leaving a node, enqueue the
// autoscaled pools of the cluster.
func (hc *hostedCluster) podCache(ctx context.Context) (cache.Indexer, error) {
	hc.podsMu.Lock()
	if hc.pods == nil {
		informer, err := hc.startPodInformer()
		if err != nil {
			hc.podsMu.Unlock()
			return nil, err
		}
		hc.pods = informer
	}
	informer := hc.pods
	hc.podsMu.Unlock()
	syncCtx, cancel := context.WithTimeout(ctx, hostedSyncTimeout)
	defer cancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), informer.HasSynced) {
		return nil, fmt.Errorf("pods of the hosted cluster not listed within %s", hostedSyncTimeout)
	}
	return informer.GetIndexer(), nil
}

func (hc *hostedCluster) startPodInformer() (cache.SharedIndexInformer, error) {
	factory := informers.NewSharedInformerFactoryWithOptions(hc.kube, 10*time.Minute,
		informers.WithTransform(func(obj any) (any, error) {
			if p, ok := obj.(*corev1.Pod); ok {
				p.ManagedFields = nil
			}
			return obj, nil
		}))
	informer := factory.Core().V1().Pods().Informer()
	if err := podindex.AddTo(informer); err != nil {
		return nil, err
	}
	enqueue := func(obj any) {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		p, ok := obj.(*corev1.Pod)
		if !ok || (p.Spec.NodeName == "" && !unschedulable(p)) {
			return
		}
		hc.autoscaled.Range(func(pool, _ any) bool {
			name, _ := pool.(string)
			np := &hypershiftv1alpha1.NodePool{ObjectMeta: metav1.ObjectMeta{Namespace: hc.namespace, Name: name}}
			select {
			case hc.events <- event.GenericEvent{Object: np}:
			default:
			}
			return true
		})
	}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
		DeleteFunc: enqueue,
	}); err != nil {
		return nil, err
	}
	factory.Start(hc.informerCtx.Done())
	return informer, nil
}

// podsOn returns the cached pods bound to a node ("" for pending pods).
func podsOn(pods cache.Indexer, node string) []*corev1.Pod { return podindex.On(pods, node) }
