package hostedcontrolplane

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	kubescheme "k8s.io/client-go/kubernetes/scheme"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/clustercache"
	"hypershift.dev/internal/dataplane"
)

// hostedSyncTimeout bounds the first sync of a hosted cluster's caches
// (within applyTimeout).
const hostedSyncTimeout = 15 * time.Second

// hostedCluster is the controller's connection to one hosted cluster: a
// client that applies the data plane, and caches of the applied objects
// (by the managed-by label) and of the Nodes. A change to an applied
// object — deleted, scaled, edited, or a workload's status — enqueues the
// HostedControlPlane, whose next pass applies the objects again and reads
// their health: a watch restores within a round trip, where a periodic
// resync would leave a deleted kube-dns Service gone for a whole period.
type hostedCluster struct {
	client client.Client
	nodes  corev1listers.NodeLister
	// cached holds the applied objects as the watches see them, by kind.
	cached map[string]cache.Indexer
	drift  driftRecords
}

// hostedClusters is the controller's part of the operator's connections to
// hosted clusters, keyed by HostedControlPlane (see internal/clustercache:
// health check, reconnect when the kubeconfig changes or the credentials
// are rejected).
type hostedClusters struct {
	ext    *clustercache.Extension[*hostedCluster]
	events chan event.GenericEvent
}

func newHostedClusters(clusters *clustercache.Cache) *hostedClusters {
	h := &hostedClusters{events: make(chan event.GenericEvent, 1024)}
	h.ext = clustercache.Register(clusters, clustercache.ExtensionOptions[*hostedCluster]{
		Name:    "hostedcontrolplane",
		Connect: h.connect,
		Configure: func(cfg *rest.Config) {
			cfg.QPS, cfg.Burst = 20, 40
			cfg.UserAgent = "hypershift-hosted-cluster-config"
			// v1 Endpoints (the kubernetes Service's) are deprecated;
			// every list, watch and apply would log that.
			cfg.WarningHandler = rest.NoWarnings{}
		},
		OnDisconnect: func(key types.NamespacedName, _ *hostedCluster, _ string) { h.enqueue(key) },
	})
	return h
}

func (h *hostedClusters) enqueue(key types.NamespacedName) {
	hcp := &hypershiftv1alpha1.HostedControlPlane{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	select {
	case h.events <- event.GenericEvent{Object: hcp}:
	default: // full: the periodic requeue covers it
	}
}

// connect builds the client and caches of one hosted cluster; the caches
// run until run is done.
func (h *hostedClusters) connect(ctx context.Context, key types.NamespacedName, cfg *rest.Config, run context.Context) (*hostedCluster, error) {
	c, err := client.New(cfg, client.Options{Scheme: kubescheme.Scheme})
	if err != nil {
		return nil, fmt.Errorf("client of hosted cluster %s: %w", key, err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("client of hosted cluster %s: %w", key, err)
	}
	managed := informers.NewSharedInformerFactoryWithOptions(kube, 10*time.Minute,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.LabelSelector = labels.Set{dataplane.ManagedByLabel: dataplane.ManagedBy}.String()
		}))
	// Nodes only to count the Ready ones: a node that becomes Ready lets
	// pods run, and their workloads' status changes enqueue.
	nodes := informers.NewSharedInformerFactoryWithOptions(kube, 10*time.Minute,
		informers.WithTransform(func(obj any) (any, error) {
			if n, ok := obj.(*corev1.Node); ok {
				return &corev1.Node{
					ObjectMeta: metav1.ObjectMeta{Name: n.Name, ResourceVersion: n.ResourceVersion},
					Status:     corev1.NodeStatus{Conditions: n.Status.Conditions},
				}, nil
			}
			return obj, nil
		}))
	enqueue := func(any) { h.enqueue(key) }
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
		DeleteFunc: enqueue,
	}
	watched := map[string]cache.SharedIndexInformer{
		"ConfigMap":          managed.Core().V1().ConfigMaps().Informer(),
		"Secret":             managed.Core().V1().Secrets().Informer(),
		"ServiceAccount":     managed.Core().V1().ServiceAccounts().Informer(),
		"Service":            managed.Core().V1().Services().Informer(),
		"Endpoints":          managed.Core().V1().Endpoints().Informer(),
		"EndpointSlice":      managed.Discovery().V1().EndpointSlices().Informer(),
		"Deployment":         managed.Apps().V1().Deployments().Informer(),
		"DaemonSet":          managed.Apps().V1().DaemonSets().Informer(),
		"ClusterRole":        managed.Rbac().V1().ClusterRoles().Informer(),
		"ClusterRoleBinding": managed.Rbac().V1().ClusterRoleBindings().Informer(),
		"Role":               managed.Rbac().V1().Roles().Informer(),
		"RoleBinding":        managed.Rbac().V1().RoleBindings().Informer(),
		"StorageClass":       managed.Storage().V1().StorageClasses().Informer(),
		"CSIDriver":          managed.Storage().V1().CSIDrivers().Informer(),
	}
	cached := map[string]cache.Indexer{}
	synced := []cache.InformerSynced{}
	for kind, inf := range watched {
		if _, err := inf.AddEventHandler(handler); err != nil {
			return nil, err
		}
		cached[kind] = inf.GetIndexer()
		synced = append(synced, inf.HasSynced)
	}
	nodeInformer := nodes.Core().V1().Nodes()
	synced = append(synced, nodeInformer.Informer().HasSynced)
	managed.Start(run.Done())
	nodes.Start(run.Done())
	syncCtx, cancel := context.WithTimeout(ctx, hostedSyncTimeout)
	defer cancel()
	defer context.AfterFunc(run, cancel)() // disconnected meanwhile: stop waiting
	if !cache.WaitForCacheSync(syncCtx.Done(), synced...) {
		return nil, fmt.Errorf("hosted cluster %s: caches did not sync within %s", key, hostedSyncTimeout)
	}
	return &hostedCluster{client: c, nodes: nodeInformer.Lister(), cached: cached}, nil
}

// countNodes counts the cluster's nodes and the Ready ones.
func (hc *hostedCluster) countNodes() (all, ready int, err error) {
	list, err := hc.nodes.List(labels.Everything())
	if err != nil {
		return 0, 0, err
	}
	for _, node := range list {
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				ready++
			}
		}
	}
	return len(list), ready, nil
}
