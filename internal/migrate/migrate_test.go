package migrate

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/scheme"
)

var cluster = types.NamespacedName{Namespace: "clusters", Name: "a"}

// plane is a management plane's API: its kube-system namespace (whose UID
// tells planes apart) and objs. operator, when set, plays the plane's
// operator: it sees each HostedCluster after a patch and may answer in its
// status.
func plane(t *testing.T, uid types.UID, operator func(hc *hypershiftv1alpha1.HostedCluster), objs ...client.Object) client.Client {
	t.Helper()
	objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: metav1.NamespaceSystem, UID: uid}})
	b := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(objs...)
	if operator != nil {
		b = b.WithInterceptorFuncs(interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if err := c.Patch(ctx, obj, patch, opts...); err != nil {
				return err
			}
			hc, ok := obj.(*hypershiftv1alpha1.HostedCluster)
			if !ok {
				return nil
			}
			operator(hc)
			return c.Update(ctx, hc)
		}})
	}
	return b.Build()
}

// available is the source's cluster, serving.
func available() *hypershiftv1alpha1.HostedCluster {
	hc := hypershiftv1alpha1.NewHostedCluster(cluster.Namespace, cluster.Name, hypershiftv1alpha1.NonePlatform, "")
	hc.UID = "source-uid"
	hc.Status.Conditions = []metav1.Condition{{Type: hypershiftv1alpha1.Available.String(), Status: metav1.ConditionTrue, Reason: "AsExpected"}}
	hc.Status.ControlPlaneEndpoint = hypershiftv1alpha1.APIEndpoint{Host: "127.0.0.1", Port: 6443}
	return hc
}

func options(src, dst client.Client) Options {
	return Options{
		Source: src, Target: dst, TargetKubeconfig: "target.kubeconfig", Cluster: cluster,
		Via: "file:///var/backups/a.bak", Key: bytes.Repeat([]byte{1}, 32), Timeout: 5 * time.Second,
	}
}

func setCondition(hc *hypershiftv1alpha1.HostedCluster, typ hypershiftv1alpha1.ConditionType, status metav1.ConditionStatus, reason hypershiftv1alpha1.ConditionReason, msg string) {
	meta.SetStatusCondition(&hc.Status.Conditions, metav1.Condition{Type: typ.String(), Status: status, Reason: reason.String(), Message: msg})
}

// TestMigrateRefusesBeforeAnythingChanges: a target that is the source
// itself, a sleeping cluster, one with a backup under way and a target that
// has the cluster already are refused, and neither plane is written to.
func TestMigrateRefusesBeforeAnythingChanges(t *testing.T) {
	hibernated := available()
	hibernated.Spec.Hibernation = &hypershiftv1alpha1.HibernationSpec{Enabled: true}
	busy := available()
	busy.Annotations = map[string]string{hypershiftv1alpha1.BackupRequestAnnotation: `{"id":"r1","url":"file:///b","secret":"s"}`}
	for _, tc := range []struct {
		name     string
		src, dst func(t *testing.T) client.Client
		want     string
	}{
		{
			name: "the same plane",
			src:  func(t *testing.T) client.Client { return plane(t, "one", nil, available()) },
			dst:  func(t *testing.T) client.Client { return plane(t, "one", nil) },
			want: "--to-kubeconfig target.kubeconfig is this management plane",
		},
		{
			name: "no such cluster",
			src:  func(t *testing.T) client.Client { return plane(t, "one", nil) },
			dst:  func(t *testing.T) client.Client { return plane(t, "two", nil) },
			want: "hosted cluster clusters/a not found",
		},
		{
			name: "hibernated",
			src:  func(t *testing.T) client.Client { return plane(t, "one", nil, hibernated) },
			dst:  func(t *testing.T) client.Client { return plane(t, "two", nil) },
			want: "is hibernated",
		},
		{
			name: "backup under way",
			src:  func(t *testing.T) client.Client { return plane(t, "one", nil, busy) },
			dst:  func(t *testing.T) client.Client { return plane(t, "two", nil) },
			want: "has a backup under way",
		},
		{
			name: "the target has it",
			src:  func(t *testing.T) client.Client { return plane(t, "one", nil, available()) },
			dst:  func(t *testing.T) client.Client { return plane(t, "two", nil, available()) },
			want: "exists on the target management plane (--to-kubeconfig target.kubeconfig)",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, dst := tc.src(t), tc.dst(t)
			var out bytes.Buffer
			err := Migrate(t.Context(), options(src, dst), &out)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to say %q", err, tc.want)
			}
			if out.Len() != 0 {
				t.Errorf("a refused migration said steps:\n%s", out.String())
			}
			hc := &hypershiftv1alpha1.HostedCluster{}
			if err := src.Get(t.Context(), cluster, hc); err == nil && hc.Annotations[hypershiftv1alpha1.FencedAnnotation] != "" {
				t.Error("a refused migration fenced the source")
			}
			if err := dst.Get(t.Context(), client.ObjectKey{Name: cluster.Namespace}, &corev1.Namespace{}); !apierrors.IsNotFound(err) && tc.name != "the target has it" {
				t.Errorf("a refused migration left namespace %s on the target (err %v)", cluster.Namespace, err)
			}
		})
	}
}

// TestMigrateRollsBack: a failure before the target serves undoes what the
// run did — the fence it set is lifted and the namespace it made on the
// target removed — and says so; a fence that was there before stays.
func TestMigrateRollsBack(t *testing.T) {
	refuseFence := func(hc *hypershiftv1alpha1.HostedCluster) {
		if hc.Annotations[hypershiftv1alpha1.FencedAnnotation] == "true" {
			setCondition(hc, hypershiftv1alpha1.Fenced, metav1.ConditionFalse, hypershiftv1alpha1.FenceRefusedReason, "a restore is under way")
		}
	}
	failBackup := func(hc *hypershiftv1alpha1.HostedCluster) {
		if hc.Annotations[hypershiftv1alpha1.FencedAnnotation] == "true" {
			setCondition(hc, hypershiftv1alpha1.Fenced, metav1.ConditionTrue, "Fenced", "only etcd runs")
		}
		var req hypershiftv1alpha1.BackupRequest
		if raw, ok := hc.Annotations[hypershiftv1alpha1.BackupRequestAnnotation]; ok && json.Unmarshal([]byte(raw), &req) == nil {
			hc.Status.Backup = &hypershiftv1alpha1.BackupStatus{FailedRequestID: req.ID}
			setCondition(hc, hypershiftv1alpha1.BackupSucceeded, metav1.ConditionFalse, "WriteFailed", "bucket unreachable")
		}
	}
	fencedBefore := available()
	fencedBefore.Annotations = map[string]string{hypershiftv1alpha1.FencedAnnotation: "true"}
	setCondition(fencedBefore, hypershiftv1alpha1.Fenced, metav1.ConditionTrue, "Fenced", "only etcd runs")
	for _, tc := range []struct {
		name       string
		source     *hypershiftv1alpha1.HostedCluster
		operator   func(*hypershiftv1alpha1.HostedCluster)
		want       []string
		staysFence bool
	}{
		{
			name: "fence refused", source: available(), operator: refuseFence,
			want: []string{"the operator refused the fence: a restore is under way", "rolled back: lifted the fence on the source"},
		},
		{
			name: "backup failed", source: available(), operator: failBackup,
			want: []string{"backup of hosted cluster clusters/a failed: WriteFailed: bucket unreachable", "rolled back: lifted the fence on the source"},
		},
		{
			name: "backup failed, fenced before", source: fencedBefore, operator: failBackup, staysFence: true,
			want: []string{"backup of hosted cluster clusters/a failed", "rolled back: nothing had changed"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := plane(t, "one", tc.operator, tc.source)
			dst := plane(t, "two", nil)
			var out bytes.Buffer
			err := Migrate(t.Context(), options(src, dst), &out)
			if err == nil {
				t.Fatalf("the migration succeeded:\n%s", out.String())
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			if !strings.Contains(out.String(), "rolling back") {
				t.Errorf("the steps do not say the rollback:\n%s", out.String())
			}
			hc := &hypershiftv1alpha1.HostedCluster{}
			if err := src.Get(t.Context(), cluster, hc); err != nil {
				t.Fatalf("the source cluster is gone: %v", err)
			}
			if fenced := hc.Annotations[hypershiftv1alpha1.FencedAnnotation] == "true"; fenced != tc.staysFence {
				t.Errorf("source fenced %v after the rollback, want %v", fenced, tc.staysFence)
			}
			if err := dst.Get(t.Context(), client.ObjectKey{Name: cluster.Namespace}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
				t.Errorf("the rollback left namespace %s on the target (err %v)", cluster.Namespace, err)
			}
		})
	}
}
