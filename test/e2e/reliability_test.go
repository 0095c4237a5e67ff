package e2e

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// upWithCluster starts a management plane with one hosted cluster and
// returns the CLI and the cluster's admin kubeconfig path.
func upWithCluster(t *testing.T, name string, createFlags ...string) (*cli, string) {
	t.Helper()
	hs := upCLI(t)
	hs.must(append([]string{"create", "cluster", "none", "--name", name, "--wait", "--timeout", "4m"}, createFlags...)...)
	kc := hs.adminKubeconfig(name)
	return hs, kc
}

// restConfig is the client configuration of a kubeconfig file.
func restConfig(t *testing.T, kubeconfig string) *rest.Config {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// configMapNames are the names of the ConfigMaps in namespace ns.
func configMapNames(t *testing.T, cs *kubernetes.Clientset, ns string) map[string]bool {
	t.Helper()
	list, err := cs.CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, cm := range list.Items {
		names[cm.Name] = true
	}
	return names
}

func createConfigMaps(t *testing.T, cs *kubernetes.Clientset, ns string, n int) {
	t.Helper()
	for i := range n {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i)}, Data: map[string]string{"i": fmt.Sprint(i)}}
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSingleReplicaRecovers kills a single-replica cluster's API server and
// etcd; each comes back on its own with every object.
func TestSingleReplicaRecovers(t *testing.T) {
	ownDirAndPorts(t)
	hs, kc := upWithCluster(t, "r")
	cs := hostedClient(t, kc)
	createConfigMaps(t, cs, "default", 20)

	for _, instance := range []string{"kube-apiserver", "etcd-0"} {
		t.Run(instance, func(t *testing.T) {
			pid := instancePID(t, hs.dataDir, "r", instance)
			start := time.Now()
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			eventually(t, time.Minute, "the hosted API back", func() error {
				list, err := cs.CoreV1().ConfigMaps("default").List(t.Context(), metav1.ListOptions{})
				if err != nil {
					return err
				}
				if n := len(list.Items); n < 20 {
					return fmt.Errorf("%d config maps, want 20", n)
				}
				return nil
			})
			t.Logf("%s killed: API back with every object after %.1fs", instance, time.Since(start).Seconds())
			if instancePID(t, hs.dataDir, "r", instance) == pid {
				t.Error("the pid file still names the killed process")
			}
			// Status follows within a probe interval and a reconcile.
			eventually(t, 30*time.Second, "describe to record the restart", func() error {
				if desc := hs.must("describe", "cluster", "r"); !regexpMatch(desc, instance+` +Running +\d+ +1 +Signaled: killed`) {
					return fmt.Errorf("describe does not record the restart of %s:\n%s", instance, desc)
				}
				return nil
			})
		})
	}
}

// TestManagementPlaneLoss kills `hypershift up` with SIGKILL: the hosted API
// keeps answering for 30 s, a component killed meanwhile is restarted by the
// next `up`, and the others are adopted with their pids.
func TestManagementPlaneLoss(t *testing.T) {
	quiet(t)
	hs, kc := upWithCluster(t, "m")
	cs := hostedClient(t, kc)

	pids := map[string]int{}
	for _, instance := range []string{"etcd-0", "kube-apiserver", "kube-scheduler", "kube-controller-manager"} {
		pids[instance] = instancePID(t, hs.dataDir, "m", instance)
	}
	mgmt := filepath.Join(hs.dataDir, "management.kubeconfig")
	var truthBefore planeTruth
	eventually(t, time.Minute, "every component started", func() error {
		truthBefore = controlPlaneTruth(t, mgmt, "m")
		for instance := range pids {
			if truthBefore.started[instance] == "" {
				return fmt.Errorf("%s has no startedAt yet", instance)
			}
		}
		return nil
	})
	if err := syscall.Kill(upPID(t, hs.dataDir), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// The scheduler dies while nobody supervises it.
	if err := syscall.Kill(pids["kube-scheduler"], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	errs, requests := 0, 0
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		requests++
		if _, err := cs.CoreV1().Namespaces().Get(t.Context(), "default", metav1.GetOptions{}); err != nil {
			errs++
			t.Logf("request failed with the management plane down: %v", err)
		}
	}
	if errs > 0 {
		t.Errorf("%d of %d requests failed while the management plane was down", errs, requests)
	}
	hs.must("up", "--detach", "--metrics-bind-address", "0")
	eventually(t, time.Minute, "the scheduler restarted", func() error {
		if pid := instancePID(t, hs.dataDir, "m", "kube-scheduler"); pid == pids["kube-scheduler"] || syscall.Kill(pid, 0) != nil {
			return fmt.Errorf("scheduler pid %d not a new live process", pid)
		}
		return nil
	})
	for _, instance := range []string{"etcd-0", "kube-apiserver", "kube-controller-manager"} {
		if got := instancePID(t, hs.dataDir, "m", instance); got != pids[instance] {
			t.Errorf("%s: pid %d after up, want the adopted %d", instance, got, pids[instance])
		}
	}
	// Adoption tells the truth: the API never stopped, so Available never
	// went False (no event, no new transition), and the adopted
	// components keep their start times.
	eventually(t, time.Minute, "the scheduler Running again", func() error {
		if got := controlPlaneTruth(t, mgmt, "m").started["kube-scheduler"]; got == "" || got == truthBefore.started["kube-scheduler"] {
			return fmt.Errorf("scheduler startedAt %q", got)
		}
		return nil
	})
	truthAfter := controlPlaneTruth(t, mgmt, "m")
	for _, instance := range []string{"etcd-0", "kube-apiserver", "kube-controller-manager"} {
		if truthAfter.started[instance] == "" || truthAfter.started[instance] != truthBefore.started[instance] {
			t.Errorf("%s: startedAt %q after up, want the original %q", instance, truthAfter.started[instance], truthBefore.started[instance])
		}
	}
	for obj, before := range truthBefore.available {
		if after := truthAfter.available[obj]; after != before {
			t.Errorf("%s Available went from %q to %q across the management plane's restart", obj, before, after)
		}
	}
	if truthAfter.unavailableEvents != truthBefore.unavailableEvents {
		t.Errorf("Available=False events for cluster m: %d before the restart, %d after:\n%s",
			truthBefore.unavailableEvents, truthAfter.unavailableEvents, mustKubectl(t, mgmt, "-n", "clusters", "get", "events"))
	}
	// The STARTED column ("37s ago") of the adopted components is filled in.
	out := hs.must("describe", "cluster", "m")
	for _, instance := range []string{"etcd-0", "kube-apiserver"} {
		if !regexpMatch(out, `(?m)^\s+`+instance+`\s.*\sago\s`) {
			t.Errorf("describe cluster shows no start time for the adopted %s:\n%s", instance, out)
		}
	}
}

// planeTruth is what a hosted control plane reports about itself.
type planeTruth struct {
	// started is each component's startedAt.
	started map[string]string
	// available is "status lastTransitionTime" of the Available condition
	// of the HostedCluster and HostedControlPlane.
	available map[string]string
	// unavailableEvents counts Available=False events of the cluster.
	unavailableEvents int
}

func controlPlaneTruth(t *testing.T, mgmt, name string) planeTruth {
	t.Helper()
	truth := planeTruth{started: map[string]string{}, available: map[string]string{}}
	out := mustKubectl(t, mgmt, "-n", "clusters-"+name, "get", "hostedcontrolplane", name, "-o",
		`jsonpath={range .status.components[*]}{.name}={.startedAt}{"\n"}{end}`)
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			truth.started[k] = v
		}
	}
	condition := `jsonpath={.status.conditions[?(@.type=="Available")].status} {.status.conditions[?(@.type=="Available")].lastTransitionTime}`
	truth.available["hostedcontrolplane"] = mustKubectl(t, mgmt, "-n", "clusters-"+name, "get", "hostedcontrolplane", name, "-o", condition)
	truth.available["hostedcluster"] = mustKubectl(t, mgmt, "-n", "clusters", "get", "hostedcluster", name, "-o", condition)
	events := mustKubectl(t, mgmt, "-n", "clusters", "get", "events", "--field-selector", "involvedObject.name="+name,
		"-o", `jsonpath={range .items[*]}{.message}{"\n"}{end}`)
	truth.unavailableEvents = strings.Count(events, "Available=False")
	return truth
}

// TestHighlyAvailableChaos writes and reads back objects as fast as it can
// while components of a HighlyAvailable cluster are killed one at a time;
// no acknowledged write may be lost and no outage may last over 5 s.
//
// The writer gives up on a request after 3 s and tries again, as a
// controller does: a write that an etcd member forwarded to a leader killed
// at that moment is lost, and etcd answers it only after its own request
// timeout (5 s + two election timeouts), long after a new leader serves.
// The outage measured is the one a retrying client sees.
func TestHighlyAvailableChaos(t *testing.T) {
	quiet(t)
	hs, kc := upWithCluster(t, "ha", "--availability-policy", "HighlyAvailable")
	cs := hostedClientWithTimeout(t, kc, 3*time.Second)
	waitAllRunning(t, hs, "ha")
	if found := wildcardListeners(t, hs.dataDir+"/"); len(found) > 0 {
		t.Errorf("listeners on every interface:\n%s", strings.Join(found, "\n"))
	}

	w := newWriter(cs)
	stop := w.start(t.Context())

	// First the two the promise names, then random ones, one at a time,
	// each after the cluster has healed from the previous.
	victims := []string{"etcd-1", "kube-apiserver-0"}
	pool := []string{"etcd-0", "etcd-1", "etcd-2", "kube-apiserver-0", "kube-apiserver-1", "kube-controller-manager-0", "kube-scheduler-1"}
	for range 3 {
		victims = append(victims, pool[rand.IntN(len(pool))])
	}
	for _, v := range victims {
		time.Sleep(2 * time.Second)
		pid := instancePID(t, hs.dataDir, "ha", v)
		t.Logf("%s killing %s (pid %d)", time.Now().Format("15:04:05.000"), v, pid)
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		waitAllRunning(t, hs, "ha")
	}
	time.Sleep(2 * time.Second)
	// How many writes fit in the kills' window depends on the machine and
	// on which components were drawn (an etcd member's restart slows
	// writes): the writer gets up to a minute more to show progress.
	for deadline := time.Now().Add(time.Minute); w.count() < 50 && time.Now().Before(deadline); {
		time.Sleep(200 * time.Millisecond)
	}
	stop()
	w.verify(t, cs, 50)
}

// waitAllRunning waits until describe shows every component Running.
func waitAllRunning(t *testing.T, hs *cli, name string) {
	t.Helper()
	eventually(t, 2*time.Minute, name+" fully running", func() error {
		desc := hs.must("describe", "cluster", name)
		if !regexpMatch(desc, `(?m)^ +Progressing +False`) {
			return fmt.Errorf("not all components running")
		}
		return nil
	})
}
