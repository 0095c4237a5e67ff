package hostedcluster

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/controller/lifecycle"
	"hypershift.dev/internal/pki"
)

// A root-CA rotation (docs/security.md, "CA rotation") moves through
//
//	(none|Done) --spec.certificates.rotateCA changed--> TrustBoth
//	TrustBoth        --API server trusts the new client CA-->            ReissueLeaves
//	ReissueLeaves    --endpoint serves a leaf of the new root CA,
//	                   the new admin certificate is accepted, etcd
//	                   serves and accepts leaves of the new etcd CA-->   DistributeBundle
//	DistributeBundle --every Node reports the new root CA trusted and
//	                   a client certificate of the new client CA, and
//	                   has a serving certificate of the new kubelet CA--> DropOld
//	DropOld          --a certificate of the old client CA is refused,
//	                   the endpoint serves no chain to the old root,
//	                   etcd, the API servers (etcd and kubelet CAs)
//	                   and the Konnectivity servers restarted, etcd refuses the old CA-->     Done
//
// What the PKI holds in each phase is made before the PKI phase
// (applyCARotation); whether the phase's effect is visible on the running
// cluster is judged after the admin kubeconfig phase (advanceCARotation),
// and only then does the phase change.

// caRotationPoll is how often a running rotation looks at the cluster.
const caRotationPoll = 2 * time.Second

// caRotationOrder is the order of the phases.
var caRotationOrder = []hypershiftv1alpha1.CARotationPhase{
	hypershiftv1alpha1.CARotationTrustBoth,
	hypershiftv1alpha1.CARotationReissueLeaves,
	hypershiftv1alpha1.CARotationDistributeBundle,
	hypershiftv1alpha1.CARotationDropOld,
	hypershiftv1alpha1.CARotationDone,
}

// rotationObservation is what a look at the cluster found for the current
// phase: done, or what it still waits for.
type rotationObservation struct {
	done    bool
	waiting string
}

// nextCARotation is the rotation status after st, given the spec and what
// was observed for st's phase. Pure: the controller's state machine.
func nextCARotation(spec *hypershiftv1alpha1.CertificatesSpec, st *hypershiftv1alpha1.CARotationStatus, obs rotationObservation, now time.Time) *hypershiftv1alpha1.CARotationStatus {
	token := ""
	if spec != nil {
		token = spec.RotateCA
	}
	if st == nil || st.Phase == hypershiftv1alpha1.CARotationDone {
		if token == "" || (st != nil && st.Token == token) {
			return st
		}
		t := metav1.NewTime(now)
		return &hypershiftv1alpha1.CARotationStatus{
			Phase: hypershiftv1alpha1.CARotationTrustBoth, Token: token, StartedAt: t, PhaseSince: t,
			Message: "making the new CAs and adding them to every trust bundle",
		}
	}
	out := st.DeepCopy()
	if !obs.done {
		out.Message = obs.waiting
		return out
	}
	for i, p := range caRotationOrder[:len(caRotationOrder)-1] {
		if p == st.Phase {
			out.Phase = caRotationOrder[i+1]
			break
		}
	}
	out.PhaseSince = metav1.NewTime(now)
	out.Message = ""
	if out.Phase == hypershiftv1alpha1.CARotationDone {
		out.CompletedAt = &out.PhaseSince
		out.Message = "the old CAs were dropped"
	}
	return out
}

func caRotationOf(hc *hypershiftv1alpha1.HostedCluster) *hypershiftv1alpha1.CARotationStatus {
	if hc.Status.Certificates == nil {
		return nil
	}
	return hc.Status.Certificates.CARotation
}

func setCARotation(hc *hypershiftv1alpha1.HostedCluster, st *hypershiftv1alpha1.CARotationStatus) {
	if hc.Status.Certificates == nil {
		hc.Status.Certificates = &hypershiftv1alpha1.CertificatesStatus{}
	}
	hc.Status.Certificates.CARotation = st
}

// applyCARotation starts a requested rotation and makes the PKI what the
// current phase needs; it runs before the PKI phase, which then reissues
// the leaves that no longer fit.
func (r *Reconciler) applyCARotation(ctx context.Context, s *scope) (ctrl.Result, error) {
	st := caRotationOf(s.hc)
	if st == nil || st.Phase == hypershiftv1alpha1.CARotationDone {
		started := nextCARotation(s.hc.Spec.Certificates, st, rotationObservation{}, time.Now())
		if started != st {
			r.recordCARotation(ctx, s, started)
		}
		st = started
	}
	if st == nil {
		return ctrl.Result{}, nil
	}
	setCARotation(s.hc, st)
	store := s.secretStore(ctx, r.Client, false)
	cas := pki.RotatedCANames()
	switch st.Phase {
	case hypershiftv1alpha1.CARotationTrustBoth:
		if err := pki.StartCARotation(store, cas, r.CAValidity, time.Now()); err != nil {
			return ctrl.Result{}, fmt.Errorf("CA rotation: %w", err)
		}
	case hypershiftv1alpha1.CARotationReissueLeaves:
		if err := pki.PromoteNextCAs(store, cas); err != nil {
			return ctrl.Result{}, fmt.Errorf("CA rotation: %w", err)
		}
	case hypershiftv1alpha1.CARotationDropOld:
		// The probes that show the old client and etcd CAs refused are
		// signed before their keys go.
		if err := ensureProbe(store, refusalProbeName, pki.ClientCAName); err != nil {
			return ctrl.Result{}, fmt.Errorf("CA rotation: %w", err)
		}
		if err := ensureProbe(store, etcdRefusalProbeName, pki.EtcdCAName); err != nil {
			return ctrl.Result{}, fmt.Errorf("CA rotation: %w", err)
		}
		if err := pki.DropPreviousCAs(store, cas); err != nil {
			return ctrl.Result{}, fmt.Errorf("CA rotation: %w", err)
		}
	case hypershiftv1alpha1.CARotationDone:
		for _, probe := range []string{refusalProbeName, etcdRefusalProbeName} {
			if err := store.Delete(probe); err != nil {
				return ctrl.Result{}, fmt.Errorf("CA rotation: %w", err)
			}
		}
		// Every consumer of the etcd CA restarted with the new bundle
		// (DropOld saw it): the leaves' chains to the old CA can go.
		if _, err := pki.StripCrossSignedChains(store, pki.ReadOnceCANames()); err != nil {
			return ctrl.Result{}, fmt.Errorf("CA rotation: %w", err)
		}
	}
	return ctrl.Result{}, nil
}

// advanceCARotation looks at the cluster for the current phase's effect
// and moves to the next phase once it is there.
func (r *Reconciler) advanceCARotation(ctx context.Context, s *scope) (ctrl.Result, error) {
	st := caRotationOf(s.hc)
	if st == nil || st.Phase == hypershiftv1alpha1.CARotationDone {
		return ctrl.Result{}, nil
	}
	obs, err := r.observeCARotation(ctx, s, st)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("CA rotation %s: %w", st.Phase, err)
	}
	next := nextCARotation(s.hc.Spec.Certificates, st, obs, time.Now())
	setCARotation(s.hc, next)
	if next.Phase != st.Phase {
		r.recordCARotation(ctx, s, next)
		// The next phase's PKI change is made by the next reconcile.
		return ctrl.Result{RequeueAfter: 100 * time.Millisecond}, nil
	}
	s.requeue = lifecycle.Soonest(s.requeue, ctrl.Result{RequeueAfter: caRotationPoll})
	return ctrl.Result{}, nil
}

// CARotationReason is the reason of the Events a rotation emits.
const CARotationReason = "CARotation"

func (r *Reconciler) recordCARotation(ctx context.Context, s *scope, st *hypershiftv1alpha1.CARotationStatus) {
	ctrl.LoggerFrom(ctx).Info("root-CA rotation", "phase", st.Phase, "token", st.Token)
	if r.Recorder != nil {
		// The phase is the action: Events that differ only in their note
		// would be folded into one series.
		r.Recorder.Eventf(s.hc, nil, corev1.EventTypeNormal, CARotationReason, string(st.Phase), "Root-CA rotation %s: phase %s", st.Token, st.Phase)
	}
}

// reportAuthorities puts each signing CA's expiry into the status.
func reportAuthorities(s *scope) {
	if s.pki == nil {
		return
	}
	var out []hypershiftv1alpha1.CertificateAuthorityStatus
	for _, name := range pki.CANames() {
		cert, err := pki.ParseCertificate(s.pki.Bundle(name))
		if err != nil {
			continue
		}
		out = append(out, hypershiftv1alpha1.CertificateAuthorityStatus{Name: name, NotAfter: metav1.NewTime(cert.NotAfter)})
	}
	if s.hc.Status.Certificates == nil {
		s.hc.Status.Certificates = &hypershiftv1alpha1.CertificatesStatus{}
	}
	s.hc.Status.Certificates.Authorities = out
}
