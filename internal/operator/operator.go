// Package operator assembles hypershift's controllers into a
// controller-runtime manager, against any management cluster.
package operator

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/addons"
	"hypershift.dev/internal/clustercache"
	"hypershift.dev/internal/controller/guestpass"
	"hypershift.dev/internal/controller/hostedcluster"
	"hypershift.dev/internal/controller/hostedcontrolplane"
	"hypershift.dev/internal/controller/hostmachine"
	"hypershift.dev/internal/controller/joinconfig"
	"hypershift.dev/internal/controller/lbmirror"
	"hypershift.dev/internal/controller/nodepool"
	"hypershift.dev/internal/controller/volumemirror"
	"hypershift.dev/internal/fleetmetrics"
	"hypershift.dev/internal/nodes/machine"
	"hypershift.dev/internal/release"
	"hypershift.dev/internal/runtime"
	"hypershift.dev/internal/runtime/kube"
	"hypershift.dev/internal/scheme"
)

// Options configure the operator.
type Options struct {
	RESTConfig *rest.Config
	Runtime    runtime.Runtime
	// NewRuntime, when set, makes Runtime from the manager (whose client
	// and cache a runtime of management-cluster objects uses).
	NewRuntime func(ctrl.Manager) (runtime.Runtime, error)
	// LeaderElection makes replicas of the operator take turns: only the
	// holder of the Lease LeaderElectionID in LeaderElectionNamespace (""
	// = the pod's own namespace) runs the controllers.
	LeaderElection          bool
	LeaderElectionNamespace string
	// Releases are the Kubernetes releases hosted control planes can run
	// (internal/release); nil: the compiled-in one only. The runtimes run
	// them and the HostedCluster controller refuses any other version.
	Releases *release.Catalog
	// Events carries runtime notifications to the HostedControlPlane
	// controller; see NewEvents.
	Events chan event.GenericEvent
	// MetricsBindAddress serves Prometheus metrics; "0" disables.
	MetricsBindAddress string
	// MetricsSecure serves them over HTTPS (a self-signed certificate) to
	// bearer tokens the management API server authenticates and
	// authorizes for GET /metrics; `hypershift install` sets it, its port
	// being reachable from every pod of the management cluster.
	MetricsSecure bool
	// HealthProbeBindAddress serves /healthz and /readyz; "0" disables.
	HealthProbeBindAddress string
	// EndpointHost is the address clients reach hosted API servers on.
	EndpointHost string
	// AdvertiseAddress is the host's own address, added to the hosted API
	// server certificates so clients on the host's network can verify it.
	AdvertiseAddress string
	// ExtraSANs are added to hosted API server certificates.
	ExtraSANs []string
	// NodeRuntime runs the node agents of Simulated NodePools; nil
	// leaves such pools with ValidPlatformConfig=False.
	NodeRuntime runtime.Runtime
	// NodeEvents carries node runtime notifications to the NodePool
	// controller; see nodepool.NewRuntimeEvents.
	NodeEvents chan event.GenericEvent
	// ClusterAPI runs Cluster API's controllers when a pool of a machine
	// platform first needs them (`up`), or finds those `hypershift
	// install` runs (the kube runtime: InstalledClusterAPI), and says
	// whether they are ready (an error while not); nil: this operator has
	// none, and such pools report ValidPlatformConfig=False.
	ClusterAPI func(context.Context) error
	// NewClusterAPI, when set, makes ClusterAPI from the manager (whose
	// client reads what says whether Cluster API runs).
	NewClusterAPI func(ctrl.Manager) func(context.Context) error
	// Machines is this host's machines directory, with its machine network
	// (`hypershift machine network`): the HostMachine provider makes
	// Cluster API's machines there. Nil: this operator runs no machines,
	// and HostClusters and HostMachines say so (NoMachineNetwork).
	Machines *machine.Host
	// NewMachines, when set and Machines is nil, makes the machines of the
	// runtime from the manager (the kube runtime's pods).
	NewMachines func(ctrl.Manager) runtime.Machines
	// MachineOwnerPrefix begins the owner each machine records, before its
	// HostMachine's UID (datadir.Machines.OwnerPrefix for `up`).
	MachineOwnerPrefix string
	// AWSProviderNamespace is where cluster-api-provider-aws runs; "":
	// its default, capa-system.
	AWSProviderNamespace string
	// MaxMachines bounds the machines of Machines' directory; zero: none.
	MaxMachines int
	// VolumeAttach, set, attaches the volumes of the management cluster's
	// storage to machines that are its pods (the kube runtime with a
	// machine image and the nodes' kubelet directory); nil: the volume
	// mirror provisions, never attaches.
	VolumeAttach *volumemirror.Attach
	// LeafCertificateValidity and CAValidity are how long new certificates
	// of hosted clusters (and of `up`'s management plane) are valid; zero:
	// a year and ten years. Leaves renew two thirds into their life.
	LeafCertificateValidity, CAValidity time.Duration
	// ServiceAccountKeyRetireAfter is how long a rotated service-account
	// key stays trusted once its successor signs; zero: the longest a
	// token lives, and a margin (tests shorten it).
	ServiceAccountKeyRetireAfter time.Duration
	// BackupFileRoot is the directory file:// archive URLs must be in;
	// empty refuses file:// archives (backup.CheckFileRoot).
	BackupFileRoot string
	// MaxStartingControlPlanes is how many hosted control planes the
	// process runtime starts at once, the others queued in order of
	// creation (runtime.StartQueue); zero: no limit. NewLocal makes
	// StartQueue from it; the kube runtime leaves starts to the scheduler.
	MaxStartingControlPlanes int
	// ControlPlaneNice is the nice value (0-19) the process runtime gives
	// every hosted control-plane process; zero: the same priority as the
	// management plane.
	ControlPlaneNice int
	// StartQueue admits cold starts of hosted control planes; nil: none.
	StartQueue *runtime.StartQueue
	// Clock is the time backup schedules are judged at; nil: time.Now
	// (tests move it).
	Clock func() time.Time
	// AllowRepeatedControllers lets one process build several operators
	// (tests); controller-runtime otherwise refuses repeated names.
	AllowRepeatedControllers bool
}

// LeaderElectionID names the Lease replicas of the operator elect a
// leader with.
const LeaderElectionID = "hypershift-operator.hypershift.dev"

// NewEvents returns a channel for runtime notifications and the runtime
// callback that feeds it. A full channel drops the event: the controller's
// periodic resync covers it.
func NewEvents() (chan event.GenericEvent, func(runtime.ControlPlaneRef)) {
	ch := make(chan event.GenericEvent, 1024)
	return ch, func(ref runtime.ControlPlaneRef) {
		obj := &hypershiftv1alpha1.HostedControlPlane{ObjectMeta: metav1.ObjectMeta{Namespace: ref.Namespace, Name: ref.Name}}
		select {
		case ch <- event.GenericEvent{Object: obj}:
		default:
		}
	}
}

// New returns a manager running the HostedCluster, HostedControlPlane,
// NodePool and ObjectDeployment (addons) controllers.
func New(opts Options) (ctrl.Manager, error) {
	// client-go's default of 5 requests/s (burst 10) made every create wait
	// ~1.3 s for its own PKI Secrets, and a burst of creates minutes.
	cfg := rest.CopyConfig(opts.RESTConfig)
	if cfg.QPS == 0 {
		cfg.QPS, cfg.Burst = 200, 400
	}
	var cacheOpts cache.Options
	if opts.NewRuntime != nil {
		// A runtime of pods reads its own pods; the management cluster's
		// other pods are none of the operator's business nor memory.
		cacheOpts.ByObject = map[client.Object]cache.ByObject{
			&corev1.Pod{}: {Label: labels.SelectorFromSet(labels.Set{kube.ManagedByLabel: kube.ManagedBy})},
		}
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Cache:                  cacheOpts,
		Scheme:                 scheme.New(),
		Metrics:                metricsOptions(opts),
		HealthProbeBindAddress: opts.HealthProbeBindAddress,
		Controller:             config.Controller{SkipNameValidation: ptr.To(opts.AllowRepeatedControllers)},
		LeaderElection:         opts.LeaderElection,
		LeaderElectionID:       LeaderElectionID,
		// Set only when asked: the manager reads the pod's namespace
		// from its service account otherwise.
		LeaderElectionNamespace: opts.LeaderElectionNamespace,
		// A replica that stops hands over at once instead of after the
		// lease expires.
		LeaderElectionReleaseOnCancel: true,
	})
	if err != nil {
		return nil, fmt.Errorf("create manager: %w", err)
	}
	if opts.NewRuntime != nil {
		rt, err := opts.NewRuntime(mgr)
		if err != nil {
			return nil, fmt.Errorf("create runtime: %w", err)
		}
		opts.Runtime = rt
	}
	if opts.NewClusterAPI != nil {
		opts.ClusterAPI = opts.NewClusterAPI(mgr)
	}
	bind, err := EndpointBindAddress(opts.EndpointHost)
	if err != nil {
		return nil, err
	}
	var ips []net.IP
	var names []string
	// The bind address too: the control plane's own components reach
	// their API server there, also when the endpoint host is a name.
	seen := map[string]bool{}
	for _, san := range append([]string{opts.EndpointHost, bind, opts.AdvertiseAddress}, opts.ExtraSANs...) {
		if san == "" || seen[san] {
			continue
		}
		seen[san] = true
		if ip := net.ParseIP(san); ip != nil {
			ips = append(ips, ip)
		} else {
			names = append(names, san)
		}
	}
	hc := &hostedcluster.Reconciler{
		Client:            mgr.GetClient(),
		APIReader:         mgr.GetAPIReader(),
		APIServerIPs:      ips,
		APIServerDNSNames: names,
		Layout:            podsLayout(opts.Runtime),
		Runtime:           opts.Runtime,
		Clock:             opts.Clock,
		Releases:          opts.Releases,
		LeafValidity:      opts.LeafCertificateValidity,
		CAValidity:        opts.CAValidity,
		BackupFileRoot:    opts.BackupFileRoot,
		Metrics:           hostedcluster.NewMetrics(mgr.GetClient()),

		ServiceAccountKeyRetireAfter: opts.ServiceAccountKeyRetireAfter,
		Recorder:                     mgr.GetEventRecorder("hostedcluster-controller"),
	}
	if err := hc.SetupWithManager(mgr); err != nil {
		return nil, err
	}
	fleetmetrics.Register(mgr.GetClient())
	// One connection per hosted cluster for every controller that talks to
	// it: one health check, one set of credentials to rotate.
	clusters := clustercache.New(clustercache.Options{
		ProbePath: clustercache.AdminProbePath,
		Configure: func(cfg *rest.Config) { cfg.UserAgent = "hypershift-operator" },
		Log:       mgr.GetLogger().WithName("clustercache"),
	})
	hcp := &hostedcontrolplane.Reconciler{
		Clusters:       clusters,
		Client:         mgr.GetClient(),
		Runtime:        opts.Runtime,
		EndpointHost:   opts.EndpointHost,
		BindAddress:    bind,
		Events:         opts.Events,
		Releases:       opts.Releases,
		LeafValidity:   opts.LeafCertificateValidity,
		StartQueue:     opts.StartQueue,
		BackupFileRoot: opts.BackupFileRoot,
	}
	if err := hcp.SetupWithManager(mgr); err != nil {
		return nil, err
	}
	// Addons: workloads of management-cluster phases run only where the
	// management cluster runs pods (not on `up`'s embedded plane); those
	// phases are applied as their namespace's ServiceAccount.
	ad := &addons.Reconciler{
		Client: mgr.GetClient(), RunsPods: podsLayout(opts.Runtime) != nil, Clock: opts.Clock, Log: mgr.GetLogger().WithName("addons"),
		Management: addons.ImpersonatingClients(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()}),
	}
	if err := ad.SetupWithManager(mgr); err != nil {
		return nil, err
	}
	np := &nodepool.Reconciler{Client: mgr.GetClient(), Runtime: opts.NodeRuntime, RuntimeEvents: opts.NodeEvents, Clusters: clusters, ClusterAPI: opts.ClusterAPI, AWSProviderNamespace: opts.AWSProviderNamespace}
	if err := np.SetupWithManager(mgr); err != nil {
		return nil, err
	}
	// Cluster API's bootstrap provider: the userdata of Machines whose
	// bootstrap config is a JoinConfig.
	if err := (&joinconfig.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader()}).SetupWithManager(mgr); err != nil {
		return nil, err
	}
	// Cluster API's infrastructure provider for machines of this host;
	// registered without a machines directory too, to say why nothing is
	// made.
	if err := errors.Join(hostmachine.Setup(mgr, machines(opts, mgr), opts.MachineOwnerPrefix, opts.MaxMachines),
		setupLoadBalancerMirrors(mgr, opts.Runtime, clusters), setupVolumeMirrors(mgr, opts, clusters)); err != nil {
		return nil, err
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	return mgr, nil
}

// setupLoadBalancerMirrors registers the load-balancer mirrors of guest
// Services (internal/controller/lbmirror): KubeVirt clusters get them
// from their infrastructure cluster on every runtime, and Host clusters
// where the runtime runs pods — their machines are then pods of the
// management cluster, whose load balancer serves their guests.
func setupLoadBalancerMirrors(mgr ctrl.Manager, rt runtime.Runtime, clusters *clustercache.Cache) error {
	return (&lbmirror.Reconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Guests: guestpass.NewGuests(clusters, mgr.GetClient(), "lbmirror"),
		Recorder:        mgr.GetEventRecorder("lbmirror-controller"),
		HostMachinePods: podsLayout(rt) != nil,
	}).SetupWithManager(mgr)
}

// setupVolumeMirrors registers the volume mirror of Host clusters whose
// spec.platform.host.storageDriver maps StorageClasses, where the runtime
// attaches volumes to its machines (internal/controller/volumemirror):
// their claims become claims of the management cluster and, with
// opts.VolumeAttach, are attached to the machines that use them.
func setupVolumeMirrors(mgr ctrl.Manager, opts Options, clusters *clustercache.Cache) error {
	if opts.Runtime == nil || !opts.Runtime.Capabilities().AttachesVolumes {
		return nil
	}
	return (&volumemirror.Reconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Guests: guestpass.NewGuests(clusters, mgr.GetClient(), "volumemirror"),
		Recorder: mgr.GetEventRecorder("volumemirror-controller"),
		Classes:  volumemirror.ClassesOf,
		Attach:   opts.VolumeAttach,
	}).SetupWithManager(mgr)
}

// podsLayout is the runtime's layout per control-plane namespace when its
// instances are pods (whose service names go into the certificates); nil
// for a runtime of one host.
func podsLayout(rt runtime.Runtime) func(namespace string) runtime.Layout {
	if rt == nil || !rt.Layout(runtime.ControlPlaneRef{}).Pods {
		return nil
	}
	return func(namespace string) runtime.Layout {
		return rt.Layout(runtime.ControlPlaneRef{Namespace: namespace})
	}
}

// metricsOptions serves /metrics on opts.MetricsBindAddress: plain HTTP on
// the process runtime (loopback by default), HTTPS with authentication and
// authorization by the management API server when opts.MetricsSecure.
func metricsOptions(opts Options) metricsserver.Options {
	o := metricsserver.Options{BindAddress: opts.MetricsBindAddress}
	if opts.MetricsSecure {
		o.SecureServing = true
		o.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	return o
}
