package e2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
)

// TestDataPlane: a simulated cluster gets cluster DNS in its kube-system,
// applied and watched by the control plane: DataPlaneAvailable turns True
// once the simulated pods run, describe lists the objects, and a Deployment
// scaled to zero by hand or a deleted kube-dns Service comes back. A
// cluster without nodes serves its API but says its DNS pods wait for one.
func TestDataPlane(t *testing.T) {
	ownDirAndPorts(t)
	hs := upCLI(t)
	mgmt := filepath.Join(hs.dataDir, "management.kubeconfig")

	hs.must("create", "cluster", "simulated", "--name", "d", "--node-pool-replicas", "2", "--wait", "--timeout", "3m")
	availableAt := time.Now()
	kc := hs.adminKubeconfig("d")

	waitDataPlane(t, mgmt, "d", metav1.ConditionTrue, hypershiftv1alpha1.AsExpectedReason)
	t.Logf("DataPlaneAvailable=True %.1fs after create --wait returned Available", time.Since(availableAt).Seconds())

	t.Run("describe lists the objects and their health", func(t *testing.T) {
		desc := hs.must("describe", "cluster", "d")
		for _, pattern := range []string{
			`DataPlaneAvailable +True`,
			`Deployment +kube-system +coredns +2/2 +yes`,
			`Service +kube-system +kube-dns +- +yes`,
			`ConfigMap +kube-system +coredns`,
			`ClusterRoleBinding +- +hypershift:node-proxier`,
			`EndpointSlice +default +kubernetes`,
		} {
			if !regexpMatch(desc, pattern) {
				t.Errorf("describe cluster does not match %q:\n%s", pattern, desc)
			}
		}
	})

	t.Run("kube-dns at the 10th service address, coredns on the nodes", func(t *testing.T) {
		var svc corev1.Service
		getJSON(t, kc, &svc, "-n", "kube-system", "get", "service", "kube-dns")
		if svc.Spec.ClusterIP != "172.31.0.10" {
			t.Errorf("kube-dns clusterIP %s, want 172.31.0.10 (10th address of 172.31.0.0/16)", svc.Spec.ClusterIP)
		}
		var pods corev1.PodList
		getJSON(t, kc, &pods, "-n", "kube-system", "get", "pods", "-l", "k8s-app=kube-dns")
		if len(pods.Items) != 2 {
			t.Fatalf("%d coredns pods, want 2", len(pods.Items))
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName == "" || p.Status.Phase != corev1.PodRunning {
				t.Errorf("pod %s: node %q phase %s, want Running on a simulated node", p.Name, p.Spec.NodeName, p.Status.Phase)
			}
			if c := p.Spec.Containers[0]; strings.Join(c.Command, " ") != "/hypershift component coredns" {
				t.Errorf("pod %s runs %v, want /hypershift component coredns", p.Name, c.Command)
			}
		}
	})

	t.Run("a Deployment scaled to zero by hand is restored", func(t *testing.T) {
		mustKubectl(t, kc, "-n", "kube-system", "scale", "deployment", "coredns", "--replicas=0")
		eventually(t, time.Minute, "coredns scaled back to 2", func() error {
			var d appsv1.Deployment
			getJSON(t, kc, &d, "-n", "kube-system", "get", "deployment", "coredns")
			if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 || d.Status.AvailableReplicas != 2 {
				return errorf("replicas %v, available %d", d.Spec.Replicas, d.Status.AvailableReplicas)
			}
			return nil
		})
		waitDataPlane(t, mgmt, "d", metav1.ConditionTrue, hypershiftv1alpha1.AsExpectedReason)
		waitDescribe(t, hs, "d", `DataPlaneRestored +HostedControlPlane +Deployment kube-system/coredns was changed in the hosted cluster`)
	})

	t.Run("a deleted kube-dns Service is restored", func(t *testing.T) {
		var before corev1.Service
		getJSON(t, kc, &before, "-n", "kube-system", "get", "service", "kube-dns")
		mustKubectl(t, kc, "-n", "kube-system", "delete", "service", "kube-dns")
		eventually(t, time.Minute, "kube-dns back", func() error {
			var svc corev1.Service
			out, err := kubectl(t, kc, "-n", "kube-system", "get", "service", "kube-dns", "-o", "json")
			if err != nil {
				return errorf("%v: %s", err, out)
			}
			if err := json.Unmarshal([]byte(out), &svc); err != nil {
				return err
			}
			if svc.UID == before.UID || svc.Spec.ClusterIP != "172.31.0.10" {
				return errorf("uid %s (before %s), clusterIP %s", svc.UID, before.UID, svc.Spec.ClusterIP)
			}
			return nil
		})
		waitDataPlane(t, mgmt, "d", metav1.ConditionTrue, hypershiftv1alpha1.AsExpectedReason)
		waitDescribe(t, hs, "d", `DataPlaneRestored +HostedControlPlane +Service kube-system/kube-dns was deleted in the hosted cluster; created again`)
	})

	t.Run("no nodes: API available, DNS pods wait for one", func(t *testing.T) {
		hs.must("create", "cluster", "none", "--name", "n", "--wait", "--timeout", "3m")
		hc := waitDataPlane(t, mgmt, "n", metav1.ConditionFalse, hypershiftv1alpha1.NoNodesReason)
		if !meta.IsStatusConditionTrue(hc.Status.Conditions, hypershiftv1alpha1.Available.String()) {
			t.Errorf("a cluster without nodes is not Available: %+v", hc.Status.Conditions)
		}
		desc := hs.must("describe", "cluster", "n")
		if !regexpMatch(desc, `DataPlaneAvailable +False +NoNodes`) || !regexpMatch(desc, `Deployment +kube-system +coredns +0/2 +no`) {
			t.Errorf("describe cluster n does not say the DNS pods wait for a node:\n%s", desc)
		}
	})
}

// waitDescribe waits until describe cluster matches pattern (events are
// written asynchronously).
func waitDescribe(t *testing.T, hs *cli, name, pattern string) {
	t.Helper()
	eventually(t, 30*time.Second, "describe cluster "+name+" to match "+pattern, func() error {
		if desc := hs.must("describe", "cluster", name); !regexpMatch(desc, pattern) {
			return errorf("describe cluster %s:\n%s", name, desc)
		}
		return nil
	})
}

// waitDataPlane waits until the HostedCluster reports DataPlaneAvailable
// with status and reason, and returns it.
func waitDataPlane(t *testing.T, mgmt, name string, status metav1.ConditionStatus, reason hypershiftv1alpha1.ConditionReason) *hypershiftv1alpha1.HostedCluster {
	t.Helper()
	hc := &hypershiftv1alpha1.HostedCluster{}
	eventually(t, 2*time.Minute, name+" DataPlaneAvailable="+string(status), func() error {
		getJSON(t, mgmt, hc, "-n", "clusters", "get", "hostedclusters.hypershift.dev", name)
		c := meta.FindStatusCondition(hc.Status.Conditions, hypershiftv1alpha1.DataPlaneAvailable.String())
		if c == nil || c.Status != status || c.Reason != reason.String() {
			return errorf("DataPlaneAvailable %+v", c)
		}
		return nil
	})
	return hc
}

func getJSON(t *testing.T, kubeconfig string, into any, args ...string) {
	t.Helper()
	out := mustKubectl(t, kubeconfig, append(args, "-o", "json")...)
	if err := json.Unmarshal([]byte(out), into); err != nil {
		t.Fatalf("kubectl %v: %v", args, err)
	}
}
