package operator

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hypershift.dev/internal/controller/volumemirror"
	"hypershift.dev/internal/install"
	"hypershift.dev/internal/runtime"
	"hypershift.dev/internal/runtime/kube"
	"hypershift.dev/internal/scheme"
)

// WithKubeRuntime returns opts running hosted control planes as pods of the
// management cluster: the kube runtime, made from the manager's client,
// notifies the HostedControlPlane controller when their pods change. Node
// agents need the process runtime: Simulated NodePools report that.
// Cluster API's manager is the Deployment install made in the operator's
// namespace: pools of a machine platform wait until it is available
// (InstalledClusterAPI, reading the manager's cache, which holds
// Deployments for the runtime).
func WithKubeRuntime(opts Options, kubeOpts kube.Options) Options {
	events, notify := NewEvents()
	opts.Events = events
	opts.NodeRuntime, opts.NodeEvents = nil, nil
	namespace := kubeOpts.Namespace
	if namespace == "" {
		namespace = kube.DefaultOperatorNamespace
	}
	opts.ClusterAPI = nil
	opts.NewClusterAPI = func(mgr ctrl.Manager) func(context.Context) error {
		return InstalledClusterAPI(mgr.GetClient(), client.ObjectKey{Namespace: namespace, Name: install.ClusterAPIName})
	}
	if kubeOpts.MachineImage != "" {
		opts.Machines = nil
		opts.MaxMachines = kubeOpts.MaxMachines
		opts.NewMachines = func(mgr ctrl.Manager) runtime.Machines {
			return kube.NewMachines(mgr.GetClient(), kube.MachinesOptions{Image: kubeOpts.MachineImage, APIReader: mgr.GetAPIReader(), KubeletDir: kubeOpts.KubeletDir})
		}
		if kubeOpts.KubeletDir != "" {
			opts.VolumeAttach = &volumemirror.Attach{Image: kubeOpts.MachineImage, KubeletDir: kubeOpts.KubeletDir}
		}
	}
	opts.NewRuntime = func(mgr ctrl.Manager) (runtime.Runtime, error) {
		if kubeOpts.APIReader == nil {
			// Ownership is decided on what the API server says, not on a
			// cache that may lag or hold only our own labelled objects.
			kubeOpts.APIReader = mgr.GetAPIReader()
		}
		rt := kube.New(mgr.GetClient(), kubeOpts)
		if err := rt.Watch(mgr, notify); err != nil {
			return nil, fmt.Errorf("watch control-plane pods: %w", err)
		}
		return rt, nil
	}
	return opts
}

// RunKube runs `hypershift operator --runtime=kube` until ctx ends: the
// operator against the management cluster of opts.RESTConfig, its hosted
// control planes as pods there. It keeps no local state, so several
// replicas can run with opts.LeaderElection; with installAPI it first
// installs or upgrades the CRDs and the kube runtime's policies.
func RunKube(ctx context.Context, opts Options, kubeOpts kube.Options, installAPI bool, log logr.Logger) error {
	if installAPI {
		if err := installRuntimeAPI(ctx, opts.RESTConfig, install.RuntimeKube, opts.Releases.Versions(), kubeOpts.Namespace); err != nil {
			return err
		}
	}
	mgr, err := New(WithKubeRuntime(opts, kubeOpts))
	if err != nil {
		return err
	}
	log.Info("operator starting", "runtime", install.RuntimeKube, "image", kubeOpts.Image, "leaderElection", opts.LeaderElection)
	return mgr.Start(ctx)
}

func installRuntimeAPI(ctx context.Context, cfg *rest.Config, runtime string, versions []string, namespace string) error {
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return err
	}
	if err := install.API(ctx, c, runtime, versions, namespace); err != nil {
		return fmt.Errorf("install hypershift.dev API: %w", err)
	}
	return nil
}
