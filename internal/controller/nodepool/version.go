package nodepool

import (
	"context"
	"fmt"

	utilversion "k8s.io/apimachinery/pkg/util/version"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nodeplatform "hypershift.dev/internal/controller/nodepool/platform"
)

// maxMinorSkew is how many minors a kubelet may lag its API server
// (upstream's version skew policy since v1.28).
const maxMinorSkew = 3

// reconcileVersion pins spec.kubernetesVersion to the control plane's when
// it is empty — once, so a later control-plane upgrade leaves the nodes
// where they are — and decides the version the pool's nodes move to. A
// version outside the skew policy (stored before the admission policy
// existed, or left behind by a control-plane upgrade) is not rolled out:
// the nodes keep theirs and UpdatingVersion says why.
func (r *Reconciler) reconcileVersion(ctx context.Context, s *scope) (ctrl.Result, error) {
	np := s.np
	cp := nodeplatform.ControlPlaneVersion(s.hc)
	if np.Spec.KubernetesVersion == "" {
		pinned := np.DeepCopy()
		pinned.Spec.KubernetesVersion = cp
		if err := r.Client.Patch(ctx, pinned, client.MergeFrom(np)); err != nil {
			return ctrl.Result{}, fmt.Errorf("pin spec.kubernetesVersion to the control plane's %s: %w", cp, err)
		}
		// The status patch at the end of the pass builds on np.
		np.Spec.KubernetesVersion, np.Generation, np.ResourceVersion = cp, pinned.Generation, pinned.ResourceVersion
		s.log.Info("pinned the pool's Kubernetes version to the control plane's", "version", cp)
	}
	s.version, s.versionProblem = np.Spec.KubernetesVersion, ""
	if err := checkSkew(np.Spec.KubernetesVersion, cp); err != nil {
		s.versionProblem = err.Error()
		s.version = np.Status.Version
		if s.version == "" {
			s.version = cp
		}
	}
	return ctrl.Result{}, nil
}

// checkSkew says why kubelets of version pool cannot serve a control plane
// of version cp: newer than it, or more than maxMinorSkew minors older.
func checkSkew(pool, cp string) error {
	pv, err := utilversion.ParseSemantic(pool)
	if err != nil {
		return fmt.Errorf("spec.kubernetesVersion %q is not a version like v1.37.1", pool)
	}
	cv, err := utilversion.ParseSemantic(cp)
	if err != nil {
		return fmt.Errorf("the control plane's version %q is not a version like v1.37.1", cp)
	}
	switch {
	case pv.Major() != cv.Major() || pv.Minor() > cv.Minor():
		return fmt.Errorf("spec.kubernetesVersion %s is newer than the control plane's %s (a kubelet may not be newer than its API server): set v1.%d.x or older, or upgrade the HostedCluster first; the nodes keep the version they run",
			pool, cp, cv.Minor())
	case cv.Minor()-pv.Minor() > maxMinorSkew:
		return fmt.Errorf("spec.kubernetesVersion %s is more than %d minors older than the control plane's %s: set v1.%d.x or newer; the nodes keep the version they run",
			pool, maxMinorSkew, cp, cv.Minor()-maxMinorSkew)
	}
	return nil
}
