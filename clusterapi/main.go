// Command cluster-api-manager runs Cluster API's core controllers — Cluster,
// Machine, MachineSet, MachineDeployment and MachineHealthCheck, with Cluster
// API's ClusterCache for the connections to the workload clusters — built
// from the sigs.k8s.io/cluster-api module. It is a module of its own
// (hypershift.dev/clusterapi) because Cluster API requires other k8s.io and
// controller-runtime versions than the root module; the Makefile builds it to
// bin/clusterapi/cluster-api-manager (docs/machines.md).
//
// Upstream's own main (core/main.go) is a package main and cannot be
// imported; this is our wiring of its exported reconcilers and setup helpers.
// What it leaves off, and why:
//
//   - MachinePool: the feature gate is off and its CRD is not installed;
//     pools of Machines are MachineDeployments here.
//   - ClusterClass and managed topologies, ClusterResourceSet, runtime
//     extensions (the RuntimeSDK): nothing here uses them.
//   - Webhooks (defaulting, validation, conversion): there is no webhook
//     certificate infrastructure; the project writes complete v1beta2
//     objects, the version the CRDs store.
//   - The CRD migrator, which rewrites stored objects when a later Cluster
//     API changes a CRD's storage version: nothing is stored at an older
//     version yet.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/logs"
	logsv1 "k8s.io/component-base/logs/api/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	"sigs.k8s.io/cluster-api/controllers/remote"
	"sigs.k8s.io/cluster-api/core/reconcilers/cluster"
	"sigs.k8s.io/cluster-api/core/reconcilers/machine"
	"sigs.k8s.io/cluster-api/core/reconcilers/machinedeployment"
	"sigs.k8s.io/cluster-api/core/reconcilers/machinehealthcheck"
	"sigs.k8s.io/cluster-api/core/reconcilers/machineset"
	"sigs.k8s.io/cluster-api/core/setup"
	"sigs.k8s.io/cluster-api/feature"
	"sigs.k8s.io/cluster-api/util/apiwarnings"
	"sigs.k8s.io/cluster-api/util/index"
)

const (
	// controllerName is the manager's name: its user agent, its informers'
	// field manager and, with leader election, part of its lease's name.
	controllerName = "hypershift-cluster-api-manager"
	// fieldManager owns the CRDs this binary applies.
	fieldManager = "hypershift-clusterapi"
)

type options struct {
	kubeconfig     string
	crdDir         string
	healthAddr     string
	metricsAddr    string
	namespace      string
	leaderElect    bool
	leaderElectNS  string
	syncPeriod     time.Duration
	crdWaitTimeout time.Duration
	qps            float32
	burst          int
	// Grace periods of the Cluster and Machine controllers: after the first
	// a workload cluster's RemoteConnectionProbe condition turns False,
	// after the second the Machines' conditions read from it turn Unknown.
	remoteConnectionGracePeriod time.Duration
	remoteConditionsGracePeriod time.Duration
	concurrency                 int
	logs                        *logs.Options
}

func (o *options) addFlags(fs *pflag.FlagSet) {
	logsv1.AddFlags(o.logs, fs)
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the management API server (default: in-cluster or $KUBECONFIG)")
	fs.StringVar(&o.crdDir, "crd-dir", "", "directory of Cluster API CRD YAML files to server-side apply on start (none when empty)")
	fs.StringVar(&o.healthAddr, "health-addr", ":9440", "address of the healthz and readyz endpoints (\"0\" for none)")
	fs.StringVar(&o.metricsAddr, "metrics-addr", "0", "address of the metrics endpoint, plain HTTP (\"0\" for none)")
	fs.StringVar(&o.namespace, "namespace", "", "the one namespace whose Cluster API objects are reconciled (default: all)")
	fs.BoolVar(&o.leaderElect, "leader-elect", false, "elect a leader among replicas of this manager before reconciling")
	fs.StringVar(&o.leaderElectNS, "leader-elect-namespace", "", "namespace of the leader election lease (default: in-cluster namespace)")
	fs.DurationVar(&o.syncPeriod, "sync-period", 10*time.Minute, "minimum interval at which every watched object is reconciled again")
	fs.DurationVar(&o.crdWaitTimeout, "crd-timeout", time.Minute, "how long to wait for the applied CRDs to be Established")
	fs.Float32Var(&o.qps, "kube-api-qps", 100, "queries per second to the management API server")
	fs.IntVar(&o.burst, "kube-api-burst", 200, "burst of queries to the management API server")
	fs.DurationVar(&o.remoteConnectionGracePeriod, "remote-connection-grace-period", 50*time.Second,
		"after this long without a successful health probe of a workload cluster its Cluster's RemoteConnectionProbe condition is False")
	fs.DurationVar(&o.remoteConditionsGracePeriod, "remote-conditions-grace-period", 5*time.Minute,
		"after this long without a successful health probe of a workload cluster the conditions read from it are Unknown (at least 2m, more than the connection grace period)")
	fs.IntVar(&o.concurrency, "concurrency", 10, "objects of each kind reconciled at once")
}

func (o *options) validate() error {
	if o.remoteConditionsGracePeriod <= o.remoteConnectionGracePeriod {
		return errors.New("--remote-conditions-grace-period must be longer than --remote-connection-grace-period")
	}
	// The ClusterCache drops a connection after at most 5 failed probes of
	// 10s + 5s timeout; the conditions' grace period must outlast that.
	if o.remoteConditionsGracePeriod < 2*time.Minute {
		return errors.New("--remote-conditions-grace-period must be at least 2m")
	}
	if o.concurrency < 1 {
		return errors.New("--concurrency must be at least 1")
	}
	return nil
}

func main() {
	o := &options{logs: logs.NewOptions()}
	fs := pflag.NewFlagSet("cluster-api-manager", pflag.ContinueOnError)
	fs.SetNormalizeFunc(cliflag.WordSepNormalizeFunc)
	o.addFlags(fs)
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if err := logsv1.ValidateAndApply(o.logs, nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctrl.SetLogger(klog.Background())
	log := ctrl.Log.WithName("setup")

	if err := run(ctrl.SetupSignalHandler(), o); err != nil {
		log.Error(err, "cluster-api-manager failed")
		klog.FlushAndExit(klog.ExitFlushTimeout, 1)
	}
}

func run(ctx context.Context, o *options) error {
	log := ctrl.Log.WithName("setup")
	if err := o.validate(); err != nil {
		return err
	}
	// The gates this binary is built for, whatever upstream's defaults: no
	// MachinePool (on by default upstream), no ClusterClass, no RuntimeSDK.
	if err := feature.MutableGates.SetFromMap(map[string]bool{
		string(feature.MachinePool):     false,
		string(feature.ClusterTopology): false,
		string(feature.RuntimeSDK):      false,
		string(feature.InPlaceUpdates):  false,
	}); err != nil {
		return fmt.Errorf("feature gates: %w", err)
	}

	restConfig, err := loadConfig(o.kubeconfig)
	if err != nil {
		return err
	}
	restConfig.QPS = o.qps
	restConfig.Burst = o.burst
	restConfig.UserAgent = remote.DefaultClusterAPIUserAgent(controllerName)
	restConfig.WarningHandler = apiwarnings.DefaultHandler(klog.Background().WithName("API Server Warning"))

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(apiextensionsv1.AddToScheme(scheme))
	utilruntime.Must(clusterv1.AddToScheme(scheme))

	if o.crdDir != "" {
		if err := applyCRDs(ctx, restConfig, scheme, o.crdDir, o.crdWaitTimeout); err != nil {
			return err
		}
	}

	mgr, err := ctrl.NewManager(restConfig, ctrl.Options{
		Scheme: scheme,
		Controller: ctrlconfig.Controller{
			UsePriorityQueue: new(feature.Gates.Enabled(feature.PriorityQueue)),
		},
		LeaderElection:             o.leaderElect,
		LeaderElectionID:           controllerName,
		LeaderElectionNamespace:    o.leaderElectNS,
		LeaderElectionResourceLock: resourcelock.LeasesResourceLock,
		HealthProbeBindAddress:     o.healthAddr,
		Metrics:                    metricsserver.Options{BindAddress: o.metricsAddr},
		// Upstream's cache (only the Secrets with a cluster-name label,
		// kubeconfigs' data kept, others' dropped) and client (Secrets and
		// ConfigMaps read uncached).
		Cache:  setup.ManagerCacheOptions(scheme, controllerName, o.namespace, o.syncPeriod),
		Client: setup.ManagerClientOptions(),
	})
	if err != nil {
		return fmt.Errorf("manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	// The field indexes the reconcilers look Machines up by (node name,
	// provider ID).
	if err := index.AddDefaultIndexes(ctx, mgr); err != nil {
		return fmt.Errorf("indexes: %w", err)
	}
	if err := setupReconcilers(ctx, mgr, o); err != nil {
		return err
	}
	log.Info("starting manager", "namespace", o.namespace, "leaderElection", o.leaderElect)
	return mgr.Start(ctx)
}

// setupReconcilers adds the ClusterCache and the five core reconcilers.
func setupReconcilers(ctx context.Context, mgr ctrl.Manager, o *options) error {
	each := controller.Options{MaxConcurrentReconciles: o.concurrency}

	// The ClusterCache reads each workload cluster's kubeconfig Secret
	// (<cluster>-kubeconfig) through a client on the manager's cache, which
	// holds only Secrets labelled with a cluster name.
	secrets, err := setup.CreateSecretCachingClient(mgr)
	if err != nil {
		return fmt.Errorf("secret caching client: %w", err)
	}
	clusterCache, err := clustercache.SetupWithManager(ctx, mgr, clustercache.Options{
		SecretClient: secrets,
		Cache:        setup.ClusterCacheCacheOptions(),
		// Upstream's default QPS and burst towards each workload cluster.
		Client: setup.ClusterCacheClientOptions(controllerName, 20, 30),
	}, each)
	if err != nil {
		return fmt.Errorf("cluster cache: %w", err)
	}

	steps := []struct {
		name  string
		setup func() error
	}{
		{"Cluster", func() error {
			return (&cluster.Reconciler{
				Client:                      mgr.GetClient(),
				APIReader:                   mgr.GetAPIReader(),
				ClusterCache:                clusterCache,
				RemoteConnectionGracePeriod: o.remoteConnectionGracePeriod,
			}).SetupWithManager(ctx, mgr, each)
		}},
		{"Machine", func() error {
			return (&machine.Reconciler{
				Client:                      mgr.GetClient(),
				APIReader:                   mgr.GetAPIReader(),
				ClusterCache:                clusterCache,
				RemoteConditionsGracePeriod: o.remoteConditionsGracePeriod,
			}).SetupWithManager(ctx, mgr, each)
		}},
		{"MachineSet", func() error {
			return (&machineset.Reconciler{
				Client:       mgr.GetClient(),
				APIReader:    mgr.GetAPIReader(),
				ClusterCache: clusterCache,
				// Upstream's default: every preflight check (they apply
				// only to Clusters with a control plane reference).
				PreflightChecks: sets.New(clusterv1.MachineSetPreflightCheckAll),
			}).SetupWithManager(ctx, mgr, each)
		}},
		{"MachineDeployment", func() error {
			return (&machinedeployment.Reconciler{
				Client:    mgr.GetClient(),
				APIReader: mgr.GetAPIReader(),
			}).SetupWithManager(ctx, mgr, each)
		}},
		{"MachineHealthCheck", func() error {
			return (&machinehealthcheck.Reconciler{
				Client:       mgr.GetClient(),
				ClusterCache: clusterCache,
			}).SetupWithManager(ctx, mgr, each)
		}},
	}
	for _, s := range steps {
		if err := s.setup(); err != nil {
			return fmt.Errorf("%s controller: %w", s.name, err)
		}
	}
	return nil
}

func loadConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		return ctrl.GetConfig()
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	return cfg, nil
}

// applyCRDs server-side applies every CRD in dir (*.yaml, *.yml; one or more
// documents each) and waits until the API server has Established them all.
func applyCRDs(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme, dir string, timeout time.Duration) error {
	log := ctrl.Log.WithName("crds")
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("--crd-dir: %w", err)
	}
	var names []string
	for _, e := range entries {
		ext := filepath.Ext(e.Name())
		if e.IsDir() || (ext != ".yaml" && ext != ".yml") {
			continue
		}
		crds, err := readCRDs(filepath.Join(dir, e.Name()))
		if err != nil {
			return err
		}
		for _, crd := range crds {
			crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
			crd.ManagedFields = nil
			crd.ResourceVersion = ""
			if err := c.Patch(ctx, crd, client.Apply, client.FieldOwner(fieldManager), client.ForceOwnership); err != nil { //nolint:staticcheck // an apply of a whole typed object
				return fmt.Errorf("apply CRD %s: %w", crd.Name, err)
			}
			names = append(names, crd.Name)
		}
	}
	if len(names) == 0 {
		return fmt.Errorf("--crd-dir %s: no CustomResourceDefinition found", dir)
	}
	slices.Sort(names)
	log.Info("applied CRDs", "names", names)

	pending := slices.Clone(names)
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		var still []string
		for _, name := range pending {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
				return false, err
			}
			if !established(crd) {
				still = append(still, name)
			}
		}
		pending = still
		return len(pending) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("CRDs not Established (%s): %w", strings.Join(pending, ", "), err)
	}
	log.Info("CRDs established")
	return nil
}

func readCRDs(path string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, doc := range strings.Split(string(data), "\n---") {
		if strings.TrimSpace(strings.TrimPrefix(doc, "---")) == "" {
			continue
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict([]byte(strings.TrimPrefix(doc, "---")), crd); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if crd.Kind != "CustomResourceDefinition" {
			return nil, fmt.Errorf("%s: a %s, not a CustomResourceDefinition", path, crd.Kind)
		}
		crds = append(crds, crd)
	}
	return crds, nil
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}
