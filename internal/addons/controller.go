// Package addons runs ObjectDeployments: each template change is a new
// ObjectSet revision whose phases are applied in order, with server-side
// apply, to the management cluster or — class hosted-cluster — to the
// hosted cluster of the control-plane namespace, through a connector with
// only the permissions the addon's objects need (docs/addons.md).
//
// One pass of an ObjectDeployment:
//
//	deleting? ── yes ──▶ delete objects, newest revision's phases last to first, both sides ─▶ drop finalizer
//	   │ no
//	paused? ── yes ──▶ Paused=True, nothing applied or deleted
//	   │ no
//	template hash ≠ newest revision's ──▶ create ObjectSet N+1
//	   │
//	apply newest revision phase by phase (connector for hosted-cluster phases)
//	   │ Available (and successDelaySeconds passed)
//	delete what older revisions had and the newest lacks ─▶ archive them ─▶ prune history
package addons

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
)

// Recheck intervals: while a rollout is held (probes of the other cluster
// are not watched) and once it is Available (drift, token renewal).
const (
	heldRecheck      = 3 * time.Second
	availableRecheck = time.Minute
	// hostedTimeout bounds one pass's work in a hosted cluster, so one
	// that hangs does not hold the worker.
	hostedTimeout = 30 * time.Second
)

// Reconciler reconciles ObjectDeployments and their ObjectSets.
type Reconciler struct {
	Client client.Client
	// RunsPods is false on a management plane without nodes (`up`):
	// workloads there are applied and reported as unable to run.
	RunsPods bool
	// Management returns the client that applies, reads and deletes the
	// management-side objects of the ObjectDeployments of a namespace: on
	// the operator, ImpersonatingClients (that namespace's
	// ServiceAccountName). nil uses Client itself, which only tests do.
	Management func(namespace string) (client.Client, error)
	// Clock: nil is time.Now.
	Clock func() time.Time
	Log   logr.Logger
}

func (r *Reconciler) now() time.Time {
	if r.Clock != nil {
		return r.Clock()
	}
	return time.Now()
}

// scope is one pass over an ObjectDeployment.
type scope struct {
	od    *hypershiftv1alpha1.ObjectDeployment
	owner Owner
	sets  []*hypershiftv1alpha1.ObjectSet // oldest first
	// hostedAdmin is the hosted cluster's admin client (the connector's
	// own objects only); nil when none.
	hostedAdmin client.Client
	adminCfg    *rest.Config
	t           targets
	// invalidSelector says why spec.selector does not select the
	// template's labels; empty when it does.
	invalidSelector string
}

// selectorMismatch says why od's spec.selector does not select its
// template's labels (which every revision carries), or "".
func selectorMismatch(od *hypershiftv1alpha1.ObjectDeployment) string {
	sel, err := metav1.LabelSelectorAsSelector(&od.Spec.Selector)
	if err != nil {
		return fmt.Sprintf("spec.selector is not a valid label selector: %v", err)
	}
	if tmpl := labels.Set(od.Spec.Template.Metadata.Labels); !sel.Matches(tmpl) {
		return fmt.Sprintf("spec.selector (%s) does not select spec.template.metadata.labels (%s): no revision is made until it does", sel, tmpl)
	}
	return ""
}

// Reconcile runs one pass.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	od := &hypershiftv1alpha1.ObjectDeployment{}
	if err := r.Client.Get(ctx, req.NamespacedName, od); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	s := &scope{od: od, owner: Owner{UID: string(od.UID), Namespace: od.Namespace, Name: od.Name}}
	mgmt, err := r.management(od.Namespace)
	if err != nil {
		return ctrl.Result{}, err
	}
	s.t = targets{mgmt: mgmt, runsPods: r.RunsPods}
	sets, err := r.objectSets(ctx, od)
	if err != nil {
		return ctrl.Result{}, err
	}
	s.sets = sets
	if !od.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, s)
	}
	if controllerutil.AddFinalizer(od, Finalizer) {
		if err := r.Client.Update(ctx, od); err != nil {
			return ctrl.Result{}, fmt.Errorf("add finalizer to ObjectDeployment %s: %w", req, err)
		}
	}
	if od.Spec.Paused {
		return ctrl.Result{}, r.updateStatus(ctx, s, nil)
	}
	if s.invalidSelector = selectorMismatch(od); s.invalidSelector != "" {
		return ctrl.Result{}, r.updateStatus(ctx, s, nil)
	}
	newest, err := r.ensureRevision(ctx, s)
	if err != nil {
		return ctrl.Result{}, err
	}
	hctx, cancel := context.WithTimeout(ctx, hostedTimeout)
	defer cancel()
	var res rolloutResult
	if res.hold = changedRevision(od, newest); res.hold == nil {
		r.connectHosted(hctx, s)
		res = rollout(hctx, s.t, newest, s.owner)
	}
	if err := r.updateObjectSetStatus(ctx, newest, res); err != nil {
		return ctrl.Result{}, err
	}
	requeue := heldRecheck
	if res.hold == nil {
		waiting, err := r.supersede(hctx, s, newest)
		switch {
		case err != nil:
			waiting = err.Error()
		case waiting == "":
			requeue = availableRecheck
		}
		if waiting != "" {
			res.superseding = fmt.Sprintf("revision %d is available; older revisions are retired: %s", newest.Spec.Revision, waiting)
		}
	}
	if err := r.updateStatus(ctx, s, &res); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: requeue}, nil
}

func (r *Reconciler) management(namespace string) (client.Client, error) {
	if r.Management == nil {
		return r.Client, nil
	}
	return r.Management(namespace)
}

// changedRevision holds the rollout when newest, the revision of od's
// template, no longer holds that template: someone who may write
// ObjectSets but not the ObjectDeployment changed it after it was made.
// Nothing of it is applied; deleting it makes the revision again.
func changedRevision(od *hypershiftv1alpha1.ObjectDeployment, newest *hypershiftv1alpha1.ObjectSet) *hypershiftv1alpha1.RolloutHold {
	if equality.Semantic.DeepEqual(newest.Spec.ObjectSetTemplateSpec, od.Spec.Template.Spec) {
		return nil
	}
	return hold("", "ObjectSet "+newest.Namespace+"/"+newest.Name, hypershiftv1alpha1.AddonRevisionChangedReason,
		"ObjectSet %s/%s (revision %d) no longer holds the template of ObjectDeployment %s/%s that it was made from (template hash %s): it was changed after it was made, and nothing of it is applied; delete it to have the revision made again",
		newest.Namespace, newest.Name, newest.Spec.Revision, od.Namespace, od.Name, newest.Annotations[TemplateHashAnnotation])
}

// objectSets are od's ObjectSets, oldest revision first.
func (r *Reconciler) objectSets(ctx context.Context, od *hypershiftv1alpha1.ObjectDeployment) ([]*hypershiftv1alpha1.ObjectSet, error) {
	list := &hypershiftv1alpha1.ObjectSetList{}
	if err := r.Client.List(ctx, list, client.InNamespace(od.Namespace), client.MatchingLabels{DeploymentLabel: od.Name}); err != nil {
		return nil, fmt.Errorf("list ObjectSets of %s/%s: %w", od.Namespace, od.Name, err)
	}
	var out []*hypershiftv1alpha1.ObjectSet
	for i := range list.Items {
		if metav1.IsControlledBy(&list.Items[i], od) {
			out = append(out, &list.Items[i])
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Spec.Revision < out[j].Spec.Revision })
	return out, nil
}

// ensureRevision returns the ObjectSet of the current template, making
// revision N+1 when the template changed.
func (r *Reconciler) ensureRevision(ctx context.Context, s *scope) (*hypershiftv1alpha1.ObjectSet, error) {
	hash, err := TemplateHash(&s.od.Spec.Template)
	if err != nil {
		return nil, err
	}
	var revision int64 = 1
	if n := len(s.sets); n > 0 {
		newest := s.sets[n-1]
		if newest.Annotations[TemplateHashAnnotation] == hash && newest.Spec.LifecycleState != hypershiftv1alpha1.ObjectSetArchived {
			return newest, nil
		}
		revision = newest.Spec.Revision + 1
	}
	set := newObjectSet(s.od, revision, hash)
	if err := r.Client.Create(ctx, set); err != nil {
		return nil, fmt.Errorf("create ObjectSet %s/%s (revision %d): %w", set.Namespace, set.Name, revision, err)
	}
	s.sets = append(s.sets, set)
	return set, nil
}

// activeSets are the revisions not archived.
func (s *scope) activeSets() []*hypershiftv1alpha1.ObjectSet {
	var out []*hypershiftv1alpha1.ObjectSet
	for _, set := range s.sets {
		if set.Spec.LifecycleState != hypershiftv1alpha1.ObjectSetArchived {
			out = append(out, set)
		}
	}
	return out
}

func (s *scope) hasHostedPhases(sets []*hypershiftv1alpha1.ObjectSet) bool {
	for _, set := range sets {
		for _, p := range set.Spec.Phases {
			if p.Class == hypershiftv1alpha1.HostedClusterPhaseClass {
				return true
			}
		}
	}
	return false
}

// connectHosted sets s.t.hosted to the connector's client when a revision
// has hosted-cluster phases, first making the connector match the objects
// of every active revision (the older ones' objects are deleted with it).
func (r *Reconciler) connectHosted(ctx context.Context, s *scope) {
	sets := s.activeSets()
	if !s.hasHostedPhases(sets) {
		return
	}
	if err := r.connectAdmin(ctx, s); err != nil {
		s.t.hostedErr = err
		return
	}
	objs, err := hostedObjects(s.hostedAdmin, sets)
	if err != nil {
		s.t.hostedErr = err
		return
	}
	cfg, roles, err := ensureConnector(ctx, r.Client, s.hostedAdmin, s.adminCfg, s.od, s.owner, objs, r.now())
	if err != nil {
		s.t.hostedErr = fmt.Errorf("set up the connector: %w", err)
		return
	}
	c, err := client.New(cfg, client.Options{Scheme: r.Client.Scheme()})
	if err != nil {
		s.t.hostedErr = fmt.Errorf("connector client: %w", err)
		return
	}
	s.t.hosted, s.t.beforeHostedPhase = c, roles
}

func (r *Reconciler) connectAdmin(ctx context.Context, s *scope) error {
	cfg, err := hostedAdminConfig(ctx, r.Client, s.od.Namespace)
	if err != nil {
		return err
	}
	cfg.Timeout = hostedTimeout
	admin, err := client.New(cfg, client.Options{Scheme: r.Client.Scheme()})
	if err != nil {
		return fmt.Errorf("hosted cluster client: %w", err)
	}
	s.hostedAdmin, s.adminCfg = admin, cfg
	return nil
}

// hostedObjects are the hosted-cluster objects of sets with their
// resources, read from the hosted cluster's discovery.
func hostedObjects(admin client.Client, sets []*hypershiftv1alpha1.ObjectSet) ([]hostedObject, error) {
	var out []hostedObject
	for _, set := range sets {
		for _, p := range set.Spec.Phases {
			if p.Class != hypershiftv1alpha1.HostedClusterPhaseClass {
				continue
			}
			for i := range p.Objects {
				u := &p.Objects[i].Object
				gvk := u.GroupVersionKind()
				m, err := admin.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
				if err != nil {
					return nil, fmt.Errorf("phase %s: %s %s: the hosted cluster does not serve this kind: %w", p.Name, gvk.Kind, u.GetName(), err)
				}
				o := hostedObject{resource: m.Resource.Resource, namespaced: m.Scope.Name() == meta.RESTScopeNameNamespace, object: u}
				o.key = objectKey{Hosted: true, Group: gvk.Group, Kind: gvk.Kind, Namespace: u.GetNamespace(), Name: u.GetName()}
				if o.namespaced && o.key.Namespace == "" {
					o.key.Namespace = "default"
				}
				out = append(out, o)
			}
		}
	}
	return out, nil
}

// SetupWithManager registers the controller.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("objectdeployment").
		For(&hypershiftv1alpha1.ObjectDeployment{}).
		Owns(&hypershiftv1alpha1.ObjectSet{}).
		Complete(r)
}
