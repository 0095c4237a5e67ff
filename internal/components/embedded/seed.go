package embedded

import (
	"context"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	flowcontrolbootstrap "k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
	"k8s.io/klog/v2"
	schedulingapiv1 "k8s.io/kubernetes/pkg/apis/scheduling/v1"
	"k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac/bootstrappolicy"

	"hypershift.dev/internal/components/apiseed"
)

// seedTimeout bounds a seed: past it the API server starts and creates the
// objects itself, as it would without one.
const seedTimeout = 10 * time.Second

// seed fills an empty etcd with the API server's bootstrap objects while
// the API server starts (internal/components/apiseed): both wait for etcd's
// first leader, then the seed writes its two transactions while the API
// server still initializes — it served 1.3 s after the seed ended in the
// creates looked at (docs/performance.md). It never holds the start back:
// what it did not write (it found a key, it timed out), the hooks create.
func seed(ctx context.Context, apiserverArgs []string) {
	if os.Getenv(apiseed.DisableEnv) == "off" {
		klog.InfoS("Bootstrap objects not seeded", "reason", apiseed.DisableEnv+"=off")
		return
	}
	target, reason, err := apiseed.Parse(apiserverArgs)
	if err != nil || reason != "" {
		klog.InfoS("Bootstrap objects not seeded", "reason", reason, "err", err)
		return
	}
	ctx, cancel := context.WithTimeout(ctx, seedTimeout)
	defer cancel()
	start := time.Now()
	res, err := apiseed.Seed(ctx, target, bootstrapObjects(target))
	if err != nil {
		klog.ErrorS(err, "Seeding bootstrap objects failed; the API server creates the rest", "written", res.Written)
		return
	}
	if res.Skipped != "" {
		klog.InfoS("Bootstrap objects not seeded", "reason", res.Skipped, "written", res.Written, "duration", time.Since(start))
		return
	}
	klog.InfoS("Seeded bootstrap objects", "written", res.Written, "duration", time.Since(start))
}

// bootstrapObjects are the objects the API server's post-start hooks create
// in an empty etcd, from the same upstream functions: the system
// namespaces (bootstrap controller and system namespaces controller), the
// RBAC bootstrap policy (rbac/bootstrap-roles), the system priority
// classes (scheduling/bootstrap-system-priority-classes) and the mandatory
// and suggested API Priority and Fairness configuration
// (priority-and-fairness-config-producer).
func bootstrapObjects(t apiseed.Target) []apiseed.Object {
	core := corev1.SchemeGroupVersion
	var out []apiseed.Object
	for _, name := range []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic, corev1.NamespaceNodeLease} {
		out = append(out, apiseed.Object{Resource: "namespaces", GroupVersion: core, Object: &corev1.Namespace{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelMetadataName: name}},
			Spec:       corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}},
			Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceActive},
		}})
	}
	if t.RBAC {
		rbac := rbacv1.SchemeGroupVersion
		for _, r := range append(bootstrappolicy.ClusterRoles(), bootstrappolicy.ControllerRoles()...) {
			out = append(out, apiseed.Object{Resource: "clusterroles", GroupVersion: rbac, Object: &r})
		}
		for _, b := range append(bootstrappolicy.ClusterRoleBindings(), bootstrappolicy.ControllerRoleBindings()...) {
			out = append(out, apiseed.Object{Resource: "clusterrolebindings", GroupVersion: rbac, Object: &b})
		}
		for _, roles := range bootstrappolicy.NamespaceRoles() {
			for _, r := range roles {
				out = append(out, apiseed.Object{Resource: "roles", GroupVersion: rbac, Object: &r})
			}
		}
		for _, bindings := range bootstrappolicy.NamespaceRoleBindings() {
			for _, b := range bindings {
				out = append(out, apiseed.Object{Resource: "rolebindings", GroupVersion: rbac, Object: &b})
			}
		}
	}
	for _, pc := range schedulingapiv1.SystemPriorityClasses() {
		pc.Generation = 1 // as the API server's create sets it
		out = append(out, apiseed.Object{Resource: "priorityclasses", GroupVersion: schedulingv1.SchemeGroupVersion, Object: pc})
	}
	if t.APF {
		fc := flowcontrolv1.SchemeGroupVersion
		for _, levels := range [][]*flowcontrolv1.PriorityLevelConfiguration{flowcontrolbootstrap.MandatoryPriorityLevelConfigurations, flowcontrolbootstrap.SuggestedPriorityLevelConfigurations} {
			for _, l := range levels {
				l := l.DeepCopy()
				l.Generation = 1 // as the API server's create sets it
				out = append(out, apiseed.Object{Resource: "prioritylevelconfigurations", GroupVersion: fc, Object: l})
			}
		}
		for _, schemas := range [][]*flowcontrolv1.FlowSchema{flowcontrolbootstrap.MandatoryFlowSchemas, flowcontrolbootstrap.SuggestedFlowSchemas} {
			for _, s := range schemas {
				s := s.DeepCopy()
				s.Generation = 1
				out = append(out, apiseed.Object{Resource: "flowschemas", GroupVersion: fc, Object: s})
			}
		}
	}
	return out
}
