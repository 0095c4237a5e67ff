package simulated

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	certificatesv1listers "k8s.io/client-go/listers/certificates/v1"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/client-go/util/workqueue"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/nodes/podindex"
)

// Options configure an agent.
type Options struct {
	// BootstrapKubeconfig holds the hosted API server's address and CA and
	// the pool's bootstrap token; the agent removes it once read.
	BootstrapKubeconfig string
	// NodePool names the pool whose machines the agent simulates.
	NodePool string
	// CertDir keeps each node's client (and serving) certificate.
	CertDir string
	// HealthAddress serves /healthz and /status.
	HealthAddress string
	// QPS and Burst limit the requests of all nodes together.
	QPS   float32
	Burst int
	// Joins bounds how many nodes bootstrap at once.
	Joins int
	// PodWorkers is how many pod updates run at once.
	PodWorkers int
	// ServingCertificates makes each node ask for a kubelet serving
	// certificate, as a kubelet with serverTLSBootstrap does.
	ServingCertificates bool
	Log                 logr.Logger
}

// defaults fills what a caller of Run left zero from DefaultAgentConfig.
func (o *Options) defaults() {
	d := DefaultAgentConfig()
	if o.QPS == 0 {
		o.QPS = float32(d.QPS)
	}
	if o.Burst == 0 {
		o.Burst = d.Burst
	}
	if o.Joins == 0 {
		o.Joins = d.ConcurrentJoins
	}
	if o.PodWorkers == 0 {
		o.PodWorkers = d.PodWorkers
	}
}

// cacheSyncTimeout bounds the agent's first list of what it watches.
const cacheSyncTimeout = time.Minute

// Agent simulates the nodes of one NodePool.
type Agent struct {
	opts    Options
	log     logr.Logger
	started time.Time

	server  string
	caPEM   []byte
	limiter flowcontrol.RateLimiter
	boot    kubernetes.Interface
	// anon reads the join information, which anonymous users may read
	// (and the bootstrap token's user may not).
	anon  kubernetes.Interface
	joins chan struct{}
	csrs  *csrWaiter

	pods      cache.Indexer
	nodeStore corev1listers.NodeLister
	csrStore  certificatesv1listers.CertificateSigningRequestLister
	queue     workqueue.TypedRateLimitingInterface[string]

	mu     sync.Mutex
	ctx    context.Context
	nodes  map[string]*node
	synced atomic.Bool

	joinMu    sync.Mutex
	joinTimes []time.Duration
}

// Run runs an agent until ctx ends.
func Run(ctx context.Context, opts Options) error {
	opts.defaults()
	a := &Agent{
		opts:    opts,
		log:     opts.Log.WithValues("nodePool", opts.NodePool),
		started: time.Now(),
		limiter: flowcontrol.NewTokenBucketRateLimiter(opts.QPS, opts.Burst),
		joins:   make(chan struct{}, opts.Joins),
		csrs:    newCSRWaiter(),
		nodes:   map[string]*node{},
		queue:   workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
		ctx:     ctx,
	}
	if opts.NodePool == "" {
		return errors.New("--nodepool is required")
	}
	if err := os.MkdirAll(opts.CertDir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", opts.CertDir, err)
	}
	if err := a.connect(); err != nil {
		return err
	}
	health, err := a.serveHealth()
	if err != nil {
		return err
	}
	defer health.Close()

	if err := a.startInformers(ctx); err != nil {
		return err
	}
	a.synced.Store(true)
	a.log.Info("agent started", "server", a.server)
	go a.followTrust(ctx)
	var workers sync.WaitGroup
	for range opts.PodWorkers {
		workers.Go(func() {
			for a.processPod(ctx) {
			}
		})
	}
	<-ctx.Done()
	a.queue.ShutDown()
	a.stopAll()
	workers.Wait()
	return nil
}

// connect reads the bootstrap kubeconfig, then removes it: the token is
// kept in memory only, so it is not left on disk after the nodes' TLS
// bootstrap (the runtime writes the file again before a restart).
func (a *Agent) connect() error {
	cfg, err := clientcmd.BuildConfigFromFlags("", a.opts.BootstrapKubeconfig)
	if err != nil {
		return fmt.Errorf("read bootstrap kubeconfig: %w", err)
	}
	if err := os.Remove(a.opts.BootstrapKubeconfig); err != nil {
		return fmt.Errorf("remove bootstrap kubeconfig: %w", err)
	}
	a.server = cfg.Host
	a.caPEM = cfg.CAData
	if len(a.caPEM) == 0 && cfg.CAFile != "" {
		if a.caPEM, err = os.ReadFile(cfg.CAFile); err != nil {
			return fmt.Errorf("read CA: %w", err)
		}
	}
	cfg.RateLimiter = a.limiter
	cfg.UserAgent = "hypershift-simulated-agent/" + a.opts.NodePool
	cfg = rest.CopyConfig(cfg)
	if a.boot, err = kubernetes.NewForConfig(cfg); err != nil {
		return fmt.Errorf("bootstrap client: %w", err)
	}
	anon := &rest.Config{Host: a.server, TLSClientConfig: rest.TLSClientConfig{CAData: a.caPEM}, RateLimiter: a.limiter, UserAgent: cfg.UserAgent}
	if a.anon, err = kubernetes.NewForConfig(anon); err != nil {
		return fmt.Errorf("anonymous client: %w", err)
	}
	return nil
}

// startInformers starts one watch each for the pool's config, its Nodes,
// the pods bound to any node, and CSRs — whatever the number of nodes.
func (a *Agent) startInformers(ctx context.Context) error {
	cmFactory := informers.NewSharedInformerFactoryWithOptions(a.boot, 0,
		informers.WithNamespace(metav1.NamespaceSystem),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", ConfigMapName(a.opts.NodePool)).String()
		}))
	nodeFactory := informers.NewSharedInformerFactoryWithOptions(a.boot, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.LabelSelector = labels.Set{hypershiftv1alpha1.NodePoolLabel: a.opts.NodePool}.String()
		}))
	podFactory := informers.NewSharedInformerFactoryWithOptions(a.boot, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermNotEqualSelector("spec.nodeName", "").String()
		}),
		informers.WithTransform(trimPod))
	csrFactory := informers.NewSharedInformerFactory(a.boot, 0)

	cms := cmFactory.Core().V1().ConfigMaps().Informer()
	nodes := nodeFactory.Core().V1().Nodes()
	pods := podFactory.Core().V1().Pods().Informer()
	csrs := csrFactory.Certificates().V1().CertificateSigningRequests()
	if err := podindex.AddTo(pods); err != nil {
		return err
	}
	a.pods = pods.GetIndexer()
	a.nodeStore = nodes.Lister()
	a.csrStore = csrs.Lister()

	handlers := []struct {
		informer cache.SharedIndexInformer
		handler  cache.ResourceEventHandler
	}{
		{cms, cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { a.applyConfig(obj) },
			UpdateFunc: func(_, obj any) { a.applyConfig(obj) },
			DeleteFunc: func(any) { a.applyConfig(nil) },
		}},
		{nodes.Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc:    a.nodeChanged,
			UpdateFunc: func(_, obj any) { a.nodeChanged(obj) },
		}},
		{pods, cache.ResourceEventHandlerFuncs{
			AddFunc:    a.enqueuePod,
			UpdateFunc: func(_, obj any) { a.enqueuePod(obj) },
			DeleteFunc: a.podDeleted,
		}},
		{csrs.Informer(), a.csrs.handler()},
	}
	for _, h := range handlers {
		if _, err := h.informer.AddEventHandler(h.handler); err != nil {
			return err
		}
	}
	// Nodes, pods and CSRs first: the config starts nodes, which use them.
	for _, f := range []informers.SharedInformerFactory{nodeFactory, podFactory, csrFactory} {
		f.Start(ctx.Done())
	}
	// Exiting lets the runtime report the failure and retry with back-off.
	syncCtx, cancel := context.WithTimeout(ctx, cacheSyncTimeout)
	defer cancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), nodes.Informer().HasSynced, pods.HasSynced, csrs.Informer().HasSynced) {
		return fmt.Errorf("nodes, pods and CSRs not listed within %s: is the bootstrap token valid and bound to the agent's RBAC? (see the errors above)", cacheSyncTimeout)
	}
	cmFactory.Start(ctx.Done())
	if !cache.WaitForCacheSync(syncCtx.Done(), cms.HasSynced) {
		return fmt.Errorf("ConfigMap kube-system/%s not readable within %s", ConfigMapName(a.opts.NodePool), cacheSyncTimeout)
	}
	return nil
}

// trimPod drops what the agent never reads, to keep a large pod cache
// small.
func trimPod(obj any) (any, error) {
	if p, ok := obj.(*corev1.Pod); ok {
		p.ManagedFields = nil
		p.Annotations = nil
	}
	return obj, nil
}

// applyConfig starts the nodes of new machines and stops those of removed
// ones.
func (a *Agent) applyConfig(obj any) {
	var cfg Config
	if cm, ok := obj.(*corev1.ConfigMap); ok {
		var err error
		if cfg, err = DecodeConfig(cm); err != nil {
			a.log.Error(err, "ignoring config")
			return
		}
	}
	want := map[string]Machine{}
	for _, m := range cfg.Machines {
		want[m.Name] = m
	}
	a.restartUpgraded(cfg, want)
	a.mu.Lock()
	var stopped []*node
	for name, n := range a.nodes {
		if _, ok := want[name]; !ok {
			stopped = append(stopped, n)
			delete(a.nodes, name)
		}
	}
	now := time.Now()
	started := 0
	for _, m := range cfg.Machines {
		if _, ok := a.nodes[m.Name]; ok {
			continue
		}
		ctx, cancel := context.WithCancel(a.ctx)
		n := &node{a: a, m: m, cfg: cfg, log: a.log.WithValues("node", m.Name), cancel: cancel, done: make(chan struct{})}
		a.nodes[m.Name] = n
		// A machine present when the agent starts joins as of the start.
		seen := now
		if now.Sub(a.started) < 5*time.Second {
			seen = a.started
		}
		go n.run(ctx, seen)
		started++
	}
	a.mu.Unlock()
	if started > 0 || len(stopped) > 0 {
		a.log.Info("machines changed", "started", started, "stopped", len(stopped), "total", len(cfg.Machines))
	}
	for _, n := range stopped {
		n.cancel()
	}
	for _, n := range stopped {
		<-n.done
		_ = os.Remove(n.clientPath())
		_ = os.Remove(n.servingPath())
	}
}

func (a *Agent) stopAll() {
	all := a.allNodes()
	for _, n := range all {
		n.cancel()
	}
	for _, n := range all {
		<-n.done
	}
}

// allNodes is a snapshot of the agent's nodes.
func (a *Agent) allNodes() []*node {
	a.mu.Lock()
	defer a.mu.Unlock()
	all := make([]*node, 0, len(a.nodes))
	for _, n := range a.nodes {
		all = append(all, n)
	}
	return all
}

func (a *Agent) node(name string) *node {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.nodes[name]
}

func (a *Agent) nodeChanged(obj any) {
	node, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	if n := a.node(node.Name); n != nil && n.isJoined() && node.Spec.PodCIDR != "" {
		n.setPodCIDR(node.Spec.PodCIDR)
	}
}

func (a *Agent) nodeExists(name string) bool {
	_, err := a.nodeStore.Get(name)
	return err == nil
}

func (a *Agent) podCIDROf(name string) string {
	if n, err := a.nodeStore.Get(name); err == nil {
		return n.Spec.PodCIDR
	}
	return ""
}

func (a *Agent) csrLister(name string) (*certificatesv1.CertificateSigningRequest, error) {
	return a.csrStore.Get(name)
}

func (a *Agent) podsOf(node string) []*corev1.Pod { return podindex.On(a.pods, node) }

func (a *Agent) enqueuePodsOf(node string) {
	for _, p := range a.podsOf(node) {
		a.enqueuePod(p)
	}
}

func (a *Agent) enqueuePod(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok || a.node(p.Spec.NodeName) == nil {
		return
	}
	if key, err := cache.MetaNamespaceKeyFunc(p); err == nil {
		a.queue.Add(key)
	}
}

func (a *Agent) podDeleted(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if p, ok := obj.(*corev1.Pod); ok {
		if n := a.node(p.Spec.NodeName); n != nil {
			n.releasePodIP(p)
		}
	}
}

// processPod syncs one queued pod; it returns false once the queue is shut
// down.
func (a *Agent) processPod(ctx context.Context) bool {
	key, shutdown := a.queue.Get()
	if shutdown {
		return false
	}
	defer a.queue.Done(key)
	err := a.syncPod(ctx, key)
	switch {
	case err == nil, errors.Is(err, errWaitingForPodCIDR):
		a.queue.Forget(key)
	default:
		if ctx.Err() == nil {
			a.log.V(1).Info("pod sync failed, retrying", "pod", key, "error", err.Error())
		}
		a.queue.AddRateLimited(key)
	}
	return true
}

func (a *Agent) syncPod(ctx context.Context, key string) error {
	obj, exists, err := a.pods.GetByKey(key)
	if err != nil || !exists {
		return err
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil
	}
	n := a.node(pod.Spec.NodeName)
	if n == nil || !n.isJoined() {
		return nil // synced when its node joins
	}
	return n.syncPod(ctx, pod)
}

// observeJoin records how long a node took from the agent seeing its
// machine to reporting Ready.
func (a *Agent) observeJoin(_ string, d time.Duration) {
	a.joinMu.Lock()
	a.joinTimes = append(a.joinTimes, d)
	n := len(a.joinTimes)
	a.joinMu.Unlock()
	if n%100 == 0 {
		a.log.Info("nodes joined", "count", n, "medianJoinSeconds", a.medianJoin().Seconds())
	}
}

func (a *Agent) medianJoin() time.Duration {
	a.joinMu.Lock()
	defer a.joinMu.Unlock()
	if len(a.joinTimes) == 0 {
		return 0
	}
	sorted := append([]time.Duration(nil), a.joinTimes...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	return sorted[len(sorted)/2]
}

// serveHealth serves /healthz (ready once the caches synced) and /status
// (how many nodes joined, and how fast).
func (a *Agent) serveHealth() (*http.Server, error) {
	if a.opts.HealthAddress == "" {
		return &http.Server{}, nil //nolint:gosec // never started
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if !a.synced.Load() {
			http.Error(w, "caches not synced", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/status", func(w http.ResponseWriter, _ *http.Request) {
		a.mu.Lock()
		total, joined := len(a.nodes), 0
		for _, n := range a.nodes {
			if n.isJoined() {
				joined++
			}
		}
		a.mu.Unlock()
		fmt.Fprintf(w, "nodes %d\njoined %d\nmedianJoinSeconds %.3f\n", total, joined, a.medianJoin().Seconds())
	})
	l, err := net.Listen("tcp", a.opts.HealthAddress)
	if err != nil {
		return nil, fmt.Errorf("health endpoint: %w", err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	return srv, nil
}
