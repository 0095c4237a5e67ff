// Package hostmachine is Cluster API's infrastructure provider for machines
// of the management plane's host (docs/machines.md): for each HostMachine —
// Cluster API clones one from a HostMachineTemplate for each Machine — it
// makes a machine of internal/nodes/machine, owned by the HostMachine's UID,
// starts the Machine's bootstrap userdata in it detached, and reports the
// machine as Cluster API's infrastructure machine contract (v1beta2) asks:
// spec.providerID, status.addresses, status.initialization.provisioned and
// the Ready condition. Machines are made only for HostMachines of a
// HostedCluster's control-plane namespace: the userdata runs as root on
// this host. HostClusters, the infrastructure cluster, are provisioned when
// the operator has a machine network.
//
// Without a machines directory (Reconciler.Machines nil) the operator runs
// no provider: both kinds only say so (Ready=False NoMachineNetwork), and no
// finalizer is added or removed.
package hostmachine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/controller/conditions"
	"hypershift.dev/internal/controller/lifecycle"
	"hypershift.dev/internal/hostedref"
	"hypershift.dev/internal/runtime"
)

// Finalizer holds a HostMachine until its machine is deleted.
const Finalizer = "hypershift.dev/host-machine"

// ReadyCondition is the condition of HostClusters and HostMachines that
// Cluster API mirrors (as the Cluster's InfrastructureReady and the
// Machine's InfrastructureReady).
const ReadyCondition hypershiftv1alpha1.ConditionType = "Ready"

// Reasons of the Ready condition.
const (
	// MachineNetworkReadyReason (HostCluster, True): the operator has a
	// machine network.
	MachineNetworkReadyReason hypershiftv1alpha1.ConditionReason = "MachineNetworkReady"
	// NoMachineNetworkReason (HostCluster, HostMachine): the operator runs
	// without a machines directory, or its machine network is gone.
	NoMachineNetworkReason hypershiftv1alpha1.ConditionReason = "NoMachineNetwork"
	// WaitingForMachineReason: no Cluster API Machine controls the
	// HostMachine yet.
	WaitingForMachineReason = hypershiftv1alpha1.WaitingForMachineReason
	// WaitingForBootstrapDataReason: the Machine names no bootstrap data
	// Secret yet (spec.bootstrap.dataSecretName), or it does not exist.
	WaitingForBootstrapDataReason hypershiftv1alpha1.ConditionReason = "WaitingForBootstrapData"
	// InvalidBootstrapDataReason: the bootstrap data Secret is not one
	// (its type, its key value, its size).
	InvalidBootstrapDataReason hypershiftv1alpha1.ConditionReason = "InvalidBootstrapData"
	// NotInControlPlaneNamespaceReason: the HostMachine is not in the
	// control-plane namespace of a HostedCluster; no machine is made.
	NotInControlPlaneNamespaceReason hypershiftv1alpha1.ConditionReason = "NotInControlPlaneNamespace"
	// InvalidProviderIDReason: spec.providerID was set to another
	// machine's before the machine was made.
	InvalidProviderIDReason hypershiftv1alpha1.ConditionReason = "InvalidProviderID"
	// MachineNameTakenReason: a machine of the HostMachine's machine name
	// exists on the host and is not its own (made by hand, or of another
	// HostMachine); it is left alone.
	MachineNameTakenReason hypershiftv1alpha1.ConditionReason = "MachineNameTaken"
	// MachineStartingReason: the machine is made and does not run yet (a
	// pod waiting for its node or its image; the message says which).
	MachineStartingReason hypershiftv1alpha1.ConditionReason = "MachineStarting"
	// MachineLimitReachedReason: the host has as many machines as the
	// operator may make (--max-machines); the machine is made once one goes.
	MachineLimitReachedReason hypershiftv1alpha1.ConditionReason = "MachineLimitReached"
	// UserdataRunningReason (True): the machine exists and runs its
	// userdata.
	UserdataRunningReason hypershiftv1alpha1.ConditionReason = "UserdataRunning"
	// UserdataSucceededReason (True): its userdata exited with status 0.
	UserdataSucceededReason hypershiftv1alpha1.ConditionReason = "UserdataSucceeded"
	// UserdataFailedReason: its userdata failed; the message ends with the
	// last lines of its log.
	UserdataFailedReason hypershiftv1alpha1.ConditionReason = "UserdataFailed"
	// MachineGoneReason: the machine made for the HostMachine is no longer
	// there, or not whole; it is not made again (a MachineHealthCheck
	// replaces the Machine).
	MachineGoneReason hypershiftv1alpha1.ConditionReason = "MachineGone"
	// DeletingReason: the machine is being deleted.
	DeletingReason = hypershiftv1alpha1.DeletingReason
)

const (
	// waitRecheck is how soon a HostMachine waiting for its Machine or its
	// bootstrap data looks again: a safety net, since a change of either
	// wakes it at once (watch.go).
	waitRecheck = 30 * time.Second
	// runningRecheck is how soon a running userdata is looked at again. Its
	// end is a process's on the host, not an object to watch; Ready is
	// already True while it runs, so its end changes only the reason (or
	// reports a failure) and a short poll of the machine's files does.
	runningRecheck = 5 * time.Second
	// machineRecheck is how soon a made machine is looked at again: one
	// deleted from outside is reported MachineGone.
	machineRecheck = time.Minute
	// limitRecheck is how soon a machine held by --max-machines looks again.
	limitRecheck = 15 * time.Second
	// deleteTimeout bounds a machine's deletion (it runs `join --reset`
	// in it).
	deleteTimeout = 2 * time.Minute
	// deletingRecheck is how soon a machine whose deletion goes on (a pod
	// that resets its node) is looked at again.
	deletingRecheck = 2 * time.Second
)

// Reconciler reconciles HostMachines.
type Reconciler struct {
	Client client.Client
	// APIReader reads the bootstrap data Secret from the API server, not
	// the cache. Nil: Client.
	APIReader client.Reader
	// Machines makes the machines where the operator's runtime runs; nil:
	// this operator runs no machines.
	Machines runtime.Machines
	// OwnerPrefix begins the owner recorded with each machine, before the
	// HostMachine's UID: the management plane's identity, by which
	// `down --purge` finds the machines of its plane (datadir.Machines).
	OwnerPrefix string
	// MaxMachines bounds the machines of the directory (any owner's) this
	// controller makes machines beside: whoever may write NodePools must not
	// be able to fill the host. Zero: no bound.
	MaxMachines int

	// making is held while the machines are counted and one is made, so
	// that concurrent reconciles do not pass the bound together.
	making sync.Mutex
	// watch wakes a waiting HostMachine when its Machine or bootstrap data
	// Secret changes; nil without a manager (SetupWithManager).
	watch *machineWatch
}

// owner is what a HostMachine's machine records as its owner.
func (r *Reconciler) owner(hm *hypershiftv1alpha1.HostMachine) string {
	return r.OwnerPrefix + string(hm.UID)
}

// Setup registers the HostCluster and HostMachine controllers; machines
// nil registers them to report that this operator runs no machines.
// ownerPrefix begins the owner each machine records (Reconciler.OwnerPrefix),
// and at most maxMachines machines are on the host (Reconciler.MaxMachines).
func Setup(mgr ctrl.Manager, machines runtime.Machines, ownerPrefix string, maxMachines int) error {
	if err := (&ClusterReconciler{Client: mgr.GetClient(), Machines: machines}).SetupWithManager(mgr); err != nil {
		return err
	}
	return (&Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Machines: machines, OwnerPrefix: ownerPrefix, MaxMachines: maxMachines}).SetupWithManager(mgr)
}

// SetupWithManager registers the controller. Besides HostMachines it
// watches bootstrap data Secrets, and Cluster API's Machines once one was
// read (watch.go).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	w := &machineWatch{cache: mgr.GetCache()}
	c, err := ctrl.NewControllerManagedBy(mgr).
		For(&hypershiftv1alpha1.HostMachine{}).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(w.hostMachinesOfSecret), builder.WithPredicates(bootstrapDataSecret)).
		WithOptions(controller.Options{MaxConcurrentReconciles: 4}).
		Build(r)
	if err != nil {
		return err
	}
	w.controller, r.watch = c, w
	return nil
}

// Reconcile implements reconcile.Reconciler.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
	hm := &hypershiftv1alpha1.HostMachine{}
	if err := r.Client.Get(ctx, req.NamespacedName, hm); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	ctx = ctrl.LoggerInto(ctx, ctrl.LoggerFrom(ctx).WithValues("machine", MachineName(hm)))
	deleting := !hm.DeletionTimestamp.IsZero()
	if deleting && !controllerutil.ContainsFinalizer(hm, Finalizer) {
		return ctrl.Result{}, nil
	}
	// Only a provider that can delete the machine holds the HostMachine
	// for it.
	if !deleting && r.Machines != nil && controllerutil.AddFinalizer(hm, Finalizer) {
		if err := r.Client.Update(ctx, hm); err != nil {
			return ctrl.Result{}, fmt.Errorf("add finalizer %s: %w", Finalizer, err)
		}
	}
	patch, err := lifecycle.NewStatusPatch(hm)
	if err != nil {
		return ctrl.Result{}, err
	}
	defer func() {
		if err := patch.Apply(ctx, r.Client); err != nil && reterr == nil {
			reterr = err
		}
	}()
	switch {
	case r.Machines == nil:
		noMachines(hm, deleting)
		return ctrl.Result{}, nil
	case deleting:
		return r.reconcileDelete(ctx, hm)
	default:
		return r.reconcileNormal(ctx, hm)
	}
}

func setReady(hm *hypershiftv1alpha1.HostMachine, ready bool, reason hypershiftv1alpha1.ConditionReason, format string, args ...any) {
	conditions.Set(&hm.Status.Conditions, hm.Generation, ReadyCondition, ready, reason, fmt.Sprintf(format, args...))
}

// noMachines says that this operator runs no machines.
func noMachines(hm *hypershiftv1alpha1.HostMachine, deleting bool) {
	msg := noMachinesMessage
	if deleting {
		msg += "; its machine is deleted (and the finalizer " + Finalizer + " removed) once an operator that makes machines runs"
	}
	setReady(hm, false, NoMachineNetworkReason, "%s", msg)
}

// noMachinesMessage says how an operator gets to make machines.
const noMachinesMessage = "This operator makes no machines: start the management plane with --machines-dir " +
	"(`hypershift machine network`, then `hypershift up --machines-dir DIR`), or install it with --machine-image (the kube runtime)"

// ref names the HostMachine's machine: in its namespace, owned by it, of
// the HostedCluster whose control-plane namespace that is.
func (r *Reconciler) ref(ctx context.Context, hm *hypershiftv1alpha1.HostMachine) (runtime.MachineRef, error) {
	ns := &corev1.Namespace{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: hm.Namespace}, ns); client.IgnoreNotFound(err) != nil {
		return runtime.MachineRef{}, err
	}
	name := MachineName(hm)
	return runtime.MachineRef{
		Namespace: hm.Namespace, Cluster: ns.Labels[hostedref.ClusterUIDLabel],
		Name: name, Owner: r.owner(hm), ProviderID: hypershiftv1alpha1.HostProviderIDPrefix + name,
	}, nil
}

// reconcileNormal makes the HostMachine's machine, starts its userdata and
// reports them.
func (r *Reconciler) reconcileNormal(ctx context.Context, hm *hypershiftv1alpha1.HostMachine) (ctrl.Result, error) {
	ref, err := r.ref(ctx, hm)
	if err != nil {
		return ctrl.Result{}, err
	}
	if hm.Spec.ProviderID != "" && hm.Spec.ProviderID != ref.ProviderID {
		setReady(hm, false, InvalidProviderIDReason,
			"spec.providerID is %s, but this HostMachine's machine is %s: leave spec.providerID empty (in the HostMachineTemplate too)", hm.Spec.ProviderID, ref.ProviderID)
		return ctrl.Result{}, nil
	}
	provisioned := ptr.Deref(hm.Status.Initialization.Provisioned, false)
	where := r.Machines.Where()
	m, err := r.Machines.Get(ctx, ref)
	switch {
	case errors.Is(err, runtime.ErrMachineNotFound) && provisioned:
		setReady(hm, false, MachineGoneReason,
			"Machine %s is no longer in %s: it is not made again; a MachineHealthCheck replaces the Machine", ref.Name, where)
		return ctrl.Result{RequeueAfter: machineRecheck}, nil
	case errors.Is(err, runtime.ErrMachineNotFound):
		return r.create(ctx, hm, ref, false)
	case err != nil || m.Owner != ref.Owner:
		// Not this HostMachine's machine: never acted on.
		why := fmt.Sprintf("a machine %s that is not this HostMachine's is in %s", ref.Name, where)
		if err != nil {
			why = fmt.Sprintf("%s: %v", why, err)
		}
		if provisioned {
			setReady(hm, false, MachineGoneReason, "This HostMachine's machine is gone: %s; it is left alone", why)
			return ctrl.Result{RequeueAfter: machineRecheck}, nil
		}
		setReady(hm, false, MachineNameTakenReason, "%s: it is left alone; delete it, or this HostMachine", capitalize(why))
		return ctrl.Result{RequeueAfter: machineRecheck}, nil
	}
	switch m.State {
	case runtime.MachineBroken:
		if provisioned {
			// Looked at again: a check that failed once is not final.
			setReady(hm, false, MachineGoneReason, "Machine %s: %s: it is not made again; a MachineHealthCheck replaces the Machine", ref.Name, m.Message)
			return ctrl.Result{RequeueAfter: machineRecheck}, nil
		}
		// Made half-way by a pass that stopped: made again.
		ctrl.LoggerFrom(ctx).Info("deleting a machine made half-way", "reason", m.Message)
		if done, err := r.deleteMachine(ctx, ref); err != nil || !done {
			return ctrl.Result{RequeueAfter: deletingRecheck}, err
		}
		return r.create(ctx, hm, ref, false)
	case runtime.MachineNotStarted:
		return r.create(ctx, hm, ref, true)
	}
	return r.report(ctx, hm, m)
}

// create makes the machine once its bootstrap data is there, and starts
// its userdata; made: it exists already, its userdata not started (a pass
// stopped in between).
func (r *Reconciler) create(ctx context.Context, hm *hypershiftv1alpha1.HostMachine, ref runtime.MachineRef, made bool) (ctrl.Result, error) {
	userdata, wait, err := r.bootstrapData(ctx, hm)
	if err != nil || wait != nil {
		return waitFor(hm, wait, err)
	}
	r.making.Lock()
	defer r.making.Unlock()
	if r.MaxMachines > 0 && !made {
		n, err := r.Machines.Count(ctx)
		if err != nil {
			return ctrl.Result{}, err
		}
		if n >= r.MaxMachines {
			setReady(hm, false, MachineLimitReachedReason,
				"There are %d machines in %s, the most this operator makes (--max-machines %d): machine %s is made once one goes", n, r.Machines.Where(), r.MaxMachines, ref.Name)
			return ctrl.Result{RequeueAfter: limitRecheck}, nil
		}
	}
	m, err := r.Machines.Create(ctx, ref, userdata)
	switch {
	case errors.Is(err, runtime.ErrMachineExists):
		setReady(hm, false, MachineNameTakenReason, "%v, and it is not this HostMachine's machine: it is left alone", err)
		return ctrl.Result{RequeueAfter: machineRecheck}, nil
	case err != nil:
		if cerr := r.Machines.Check(ctx); cerr != nil {
			setReady(hm, false, NoMachineNetworkReason, "%v", cerr)
			return ctrl.Result{RequeueAfter: machineRecheck}, nil
		}
		return ctrl.Result{}, fmt.Errorf("make machine %s: %w", ref.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("machine made, its userdata started", "state", m.State)
	return r.report(ctx, hm, m)
}

// waitFor reports what the HostMachine waits for.
func waitFor(hm *hypershiftv1alpha1.HostMachine, wait *waiting, err error) (ctrl.Result, error) {
	var invalid invalidError
	switch {
	case errors.As(err, &invalid):
		setReady(hm, false, invalid.reason, "%v", err)
		return ctrl.Result{RequeueAfter: machineRecheck}, nil
	case err != nil:
		return ctrl.Result{}, err
	}
	setReady(hm, false, wait.reason, "%s", wait.msg)
	return ctrl.Result{RequeueAfter: waitRecheck}, nil
}

// report writes the machine's provider ID, addresses and how its userdata
// is. A machine is provisioned once it has its address.
func (r *Reconciler) report(ctx context.Context, hm *hypershiftv1alpha1.HostMachine, m runtime.Machine) (ctrl.Result, error) {
	if m.State == runtime.MachineStarting && !m.Address.IsValid() {
		setReady(hm, false, MachineStartingReason, "Machine %s: %s", m.Name, m.Message)
		return ctrl.Result{RequeueAfter: runningRecheck}, nil
	}
	if providerID := hypershiftv1alpha1.HostProviderIDPrefix + m.Name; hm.Spec.ProviderID != providerID {
		// Patched on a copy: the status this pass changes stays.
		updated := hm.DeepCopy()
		updated.Spec.ProviderID = providerID
		if err := r.Client.Patch(ctx, updated, client.MergeFrom(hm)); err != nil {
			return ctrl.Result{}, fmt.Errorf("set spec.providerID: %w", err)
		}
		hm.Spec.ProviderID, hm.ResourceVersion = providerID, updated.ResourceVersion
	}
	hm.Status.Initialization.Provisioned = ptr.To(true)
	hm.Status.Addresses = []hypershiftv1alpha1.MachineAddress{{Type: "Hostname", Address: m.Name}}
	if m.Address.IsValid() {
		hm.Status.Addresses = append([]hypershiftv1alpha1.MachineAddress{{Type: "InternalIP", Address: m.Address.String()}}, hm.Status.Addresses...)
	}
	switch m.State {
	case runtime.MachineStarting:
		setReady(hm, false, MachineStartingReason, "Machine %s (%s): %s", m.Name, m.Address, m.Message)
		return ctrl.Result{RequeueAfter: runningRecheck}, nil
	case runtime.MachineRunning:
		setReady(hm, true, UserdataRunningReason, "Machine %s (%s) runs its userdata, started %s", m.Name, m.Address, m.StartedAt.Format(time.RFC3339))
		return ctrl.Result{RequeueAfter: runningRecheck}, nil
	case runtime.MachineBooted:
		setReady(hm, true, UserdataSucceededReason, "Machine %s (%s): its userdata succeeded", m.Name, m.Address)
	default:
		setReady(hm, false, UserdataFailedReason, "Machine %s (%s): %s", m.Name, m.Address, m.Message)
	}
	return ctrl.Result{RequeueAfter: machineRecheck}, nil
}

// reconcileDelete deletes the HostMachine's machine — only when it is the
// HostMachine's — and lets the HostMachine go once it is gone.
func (r *Reconciler) reconcileDelete(ctx context.Context, hm *hypershiftv1alpha1.HostMachine) (ctrl.Result, error) {
	ref, err := r.ref(ctx, hm)
	if err != nil {
		return ctrl.Result{}, err
	}
	m, err := r.Machines.Get(ctx, ref)
	switch {
	case errors.Is(err, runtime.ErrMachineNotFound):
		// What a machine leaves beside it (a pod's Secret) still goes.
	case err != nil || m.Owner != ref.Owner:
		ctrl.LoggerFrom(ctx).Info("the machine of this name is not this HostMachine's: left alone", "owner", m.Owner, "error", err)
		return ctrl.Result{}, lifecycle.RemoveFinalizer(ctx, r.Client, hm, Finalizer)
	default:
		setReady(hm, false, DeletingReason, "Deleting machine %s: its node is reset and the machine removed", ref.Name)
	}
	done, err := r.deleteMachine(ctx, ref)
	if err != nil {
		setReady(hm, false, DeletingReason, "Deleting machine %s failed, retried: %v", ref.Name, err)
		return ctrl.Result{}, err
	}
	if !done {
		return ctrl.Result{RequeueAfter: deletingRecheck}, nil
	}
	ctrl.LoggerFrom(ctx).Info("machine deleted")
	return ctrl.Result{}, lifecycle.RemoveFinalizer(ctx, r.Client, hm, Finalizer)
}

// deleteMachine deletes the owner's machine, bounded by deleteTimeout.
func (r *Reconciler) deleteMachine(ctx context.Context, ref runtime.MachineRef) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, deleteTimeout)
	defer cancel()
	return r.Machines.Delete(ctx, ref)
}

func capitalize(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}
