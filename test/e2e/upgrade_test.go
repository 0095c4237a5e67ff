package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/scheme"
	"hypershift.dev/internal/testenv"
	"hypershift.dev/internal/version"
)

// managementClient is a client of the management plane of hs.
func managementClient(t *testing.T, hs *cli) client.Client {
	t.Helper()
	// controller-runtime's client logs through its own logger; without one
	// it warns with a stack trace.
	ctrllog.SetLogger(testenv.Logger())
	c, err := client.New(restConfig(t, filepath.Join(hs.dataDir, "management.kubeconfig")), client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// upgrade patches the cluster's spec.kubernetesVersion as a user would.
func upgrade(t *testing.T, hs *cli, name, to string) {
	t.Helper()
	mustKubectl(t, filepath.Join(hs.dataDir, "management.kubeconfig"), "-n", "clusters", "patch", "hostedcluster", name,
		"--type", "merge", "-p", fmt.Sprintf(`{"spec":{"kubernetesVersion":%q}}`, to))
}

// waitVersion waits until the cluster reports every component at version
// (ClusterVersionProgressing False) and returns it.
func waitVersion(t *testing.T, c client.Client, name, v string, timeout time.Duration) *hypershiftv1alpha1.HostedCluster {
	t.Helper()
	hc := &hypershiftv1alpha1.HostedCluster{}
	eventually(t, timeout, name+" running "+v, func() error {
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: "clusters", Name: name}, hc); err != nil {
			return err
		}
		cond := meta.FindStatusCondition(hc.Status.Conditions, hypershiftv1alpha1.ClusterVersionProgressing.String())
		if hc.Status.Version != v || cond == nil || cond.Status != metav1.ConditionFalse {
			return fmt.Errorf("status.version %q, ClusterVersionProgressing %+v", hc.Status.Version, cond)
		}
		return nil
	})
	return hc
}

// waitVersionCondition waits until the cluster's ClusterVersionProgressing
// reads want ("Status/Reason: message").
func waitVersionCondition(t *testing.T, c client.Client, name, want string) {
	t.Helper()
	eventually(t, time.Minute, name+"'s ClusterVersionProgressing "+want, func() error {
		hc := &hypershiftv1alpha1.HostedCluster{}
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: "clusters", Name: name}, hc); err != nil {
			return err
		}
		cond := meta.FindStatusCondition(hc.Status.Conditions, hypershiftv1alpha1.ClusterVersionProgressing.String())
		if cond == nil {
			return errorf("no condition")
		}
		if got := fmt.Sprintf("%s/%s: %s", cond.Status, cond.Reason, cond.Message); got != want {
			return errorf("%s", got)
		}
		return nil
	})
}

// checkHistory checks that the history is Completed at to, then at from.
func checkHistory(t *testing.T, hc *hypershiftv1alpha1.HostedCluster, to, from string) {
	t.Helper()
	h := hc.Status.VersionHistory
	if len(h) != 2 || h[0].Version != to || h[1].Version != from {
		t.Fatalf("version history %+v, want %s then %s", h, to, from)
	}
	for _, e := range h {
		if e.State != hypershiftv1alpha1.CompletedVersion || e.CompletionTime == nil || e.CompletionTime.Before(&e.StartedTime) {
			t.Errorf("history entry %+v, want Completed with a completion time after its start", e)
		}
	}
	if !h[1].CompletionTime.Before(&h[0].StartedTime) && !h[1].CompletionTime.Equal(&h[0].StartedTime) {
		t.Errorf("the upgrade to %s started at %s, before %s completed at %s", to, h[0].StartedTime, from, h[1].CompletionTime)
	}
}

// TestControlPlaneUpgrade creates a cluster at the release built beside the
// binary, writes objects, and upgrades it to the compiled-in version by
// changing spec.kubernetesVersion: the API serves the new version, every
// object is still there, and the version history records both versions as
// Completed.
func TestControlPlaneUpgrade(t *testing.T) {
	ownDirAndPorts(t)
	hs, kc := upWithCluster(t, "u", "--kubernetes-version", releaseVersion)
	c := managementClient(t, hs)
	waitVersion(t, c, "u", releaseVersion, 2*time.Minute)
	cs := hostedClient(t, kc)
	mustKubectl(t, kc, "create", "namespace", "data")
	createConfigMaps(t, cs, "data", 20)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}, StringData: map[string]string{"k": "kept"}}
	if _, err := cs.CoreV1().Secrets("data").Create(t.Context(), secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	upgrade(t, hs, "u", version.KubernetesVersion)
	hc := waitVersion(t, c, "u", version.KubernetesVersion, 4*time.Minute)
	t.Logf("upgraded from %s to %s in %.1fs", releaseVersion, version.KubernetesVersion, time.Since(start).Seconds())

	if v := mustKubectl(t, kc, "get", "--raw", "/version"); !strings.Contains(v, `"gitVersion": "`+version.KubernetesVersion+`"`) {
		t.Errorf("/version does not report %s:\n%s", version.KubernetesVersion, v)
	}
	have := configMapNames(t, cs, "data")
	for i := range 20 {
		if name := fmt.Sprintf("cm-%d", i); !have[name] {
			t.Errorf("config map data/%s is gone after the upgrade", name)
		}
	}
	got, err := cs.CoreV1().Secrets("data").Get(t.Context(), "s", metav1.GetOptions{})
	if err != nil || string(got.Data["k"]) != "kept" {
		t.Errorf("secret data/s after the upgrade: %v %v", got, err)
	}
	checkHistory(t, hc, version.KubernetesVersion, releaseVersion)

	// No process of the old release is left; every versioned component
	// reports the new version.
	releaseBinary := filepath.Join(filepath.Dir(hs.bin), "releases", releaseVersion, "kubernetes")
	for name := range pidsUnder(t, filepath.Join(hs.dataDir, "clusters", "clusters-u")) {
		if strings.HasPrefix(name, releaseBinary) {
			t.Errorf("a process of the old release is still running: %s", name)
		}
	}
	desc := hs.must("describe", "cluster", "u")
	for _, pattern := range []string{
		`Version history:\n +VERSION +STATE +STARTED +COMPLETED\n +` + version.KubernetesVersion + ` +Completed .*\n +` + releaseVersion + ` +Completed `,
		`kube-apiserver +Running .* ` + version.KubernetesVersion + `\n`,
		`kube-controller-manager +Running .* ` + version.KubernetesVersion + `\n`,
		`kube-scheduler +Running .* ` + version.KubernetesVersion + `\n`,
		`UpgradeStarted +HostedControlPlane +Upgrading the control plane from ` + releaseVersion + ` to ` + version.KubernetesVersion,
		`UpgradeCompleted +HostedControlPlane +The control plane runs ` + version.KubernetesVersion,
		`ClusterVersionProgressing +False +AsExpected +Running ` + version.KubernetesVersion,
	} {
		if !regexpMatch(desc, pattern) {
			t.Errorf("describe cluster does not match %q:\n%s", pattern, desc)
		}
	}
}

// apiServerSample is one look at the API servers during an upgrade.
type apiServerSample struct {
	at time.Time
	// byName: phase, version and pid of each versioned instance.
	byName map[string]hypershiftv1alpha1.ComponentStatus
}

// sampleComponents records the control plane's components until ctx ends.
func sampleComponents(ctx context.Context, c client.Client, ns, name string) func() []apiServerSample {
	var mu sync.Mutex
	var samples []apiServerSample
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			hcp := &hypershiftv1alpha1.HostedControlPlane{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, hcp); err == nil {
				s := apiServerSample{at: time.Now(), byName: map[string]hypershiftv1alpha1.ComponentStatus{}}
				for _, comp := range hcp.Status.Components {
					s.byName[comp.Name] = comp
				}
				mu.Lock()
				samples = append(samples, s)
				mu.Unlock()
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	return func() []apiServerSample {
		<-done
		mu.Lock()
		defer mu.Unlock()
		return samples
	}
}

// firstAt is the index of the first sample where instance runs v and is
// Running; -1 if none.
func firstAt(samples []apiServerSample, instance, v string) int {
	for i, s := range samples {
		if c, ok := s.byName[instance]; ok && c.Version == v && c.Phase == hypershiftv1alpha1.ComponentRunning {
			return i
		}
	}
	return -1
}

// firstMoved is the index of the first sample where instance reports v in
// any phase; -1 if none.
func firstMoved(samples []apiServerSample, instance, v string) int {
	for i, s := range samples {
		if c, ok := s.byName[instance]; ok && c.Version == v {
			return i
		}
	}
	return -1
}

// TestHighlyAvailableUpgrade upgrades a HighlyAvailable cluster while a
// client writes and reads back config maps: no acknowledged write is lost,
// requests never fail for over 5 s in a row, and the API servers are
// restarted one at a time (never both down), before the controller
// managers and schedulers.
func TestHighlyAvailableUpgrade(t *testing.T) {
	quiet(t)
	hs, kc := upWithCluster(t, "hau", "--availability-policy", "HighlyAvailable", "--kubernetes-version", releaseVersion)
	c := managementClient(t, hs)
	waitAllRunning(t, hs, "hau")
	waitVersion(t, c, "hau", releaseVersion, 2*time.Minute)
	cs := hostedClientWithTimeout(t, kc, 3*time.Second)
	apiServers := []string{"kube-apiserver-0", "kube-apiserver-1"}
	pidsBefore := map[string]int{}
	for _, name := range apiServers {
		pidsBefore[name] = instancePID(t, hs.dataDir, "hau", name)
	}

	w := newWriter(cs)
	stopWriter := w.start(t.Context())
	sampleCtx, stopSampling := context.WithCancel(t.Context())
	samples := sampleComponents(sampleCtx, c, "clusters-hau", "hau")
	time.Sleep(2 * time.Second) // writes before the upgrade too

	start := time.Now()
	upgrade(t, hs, "hau", version.KubernetesVersion)
	hc := waitVersion(t, c, "hau", version.KubernetesVersion, 5*time.Minute)
	t.Logf("upgraded from %s to %s in %.1fs", releaseVersion, version.KubernetesVersion, time.Since(start).Seconds())
	time.Sleep(2 * time.Second) // and after
	for deadline := time.Now().Add(time.Minute); w.count() < 50 && time.Now().Before(deadline); {
		time.Sleep(200 * time.Millisecond)
	}
	stopSampling()
	stopWriter()
	w.verify(t, cs, 50)
	checkHistory(t, hc, version.KubernetesVersion, releaseVersion)

	// One API server at a time: never a look with both of them not
	// Running, and the second moves only once the first runs the new
	// version; then the controller managers and schedulers.
	seen := samples()
	t.Logf("%d looks at the control plane during the upgrade", len(seen))
	for _, s := range seen {
		var down []string
		for _, name := range apiServers {
			if comp, ok := s.byName[name]; !ok || comp.Phase != hypershiftv1alpha1.ComponentRunning {
				down = append(down, fmt.Sprintf("%s %s", name, comp.Phase))
			}
		}
		if len(down) == len(apiServers) {
			t.Errorf("%s: no API server running: %v", s.at.Format("15:04:05.000"), down)
		}
	}
	first, second := firstAt(seen, apiServers[0], version.KubernetesVersion), firstMoved(seen, apiServers[1], version.KubernetesVersion)
	if first < 0 || second < 0 || second < first {
		t.Errorf("%s ran %s at look %d, %s moved at look %d: want the second to move after the first runs", apiServers[0], version.KubernetesVersion, first, apiServers[1], second)
	}
	bothAPIs := firstAt(seen, apiServers[1], version.KubernetesVersion)
	for _, name := range []string{"kube-controller-manager-0", "kube-controller-manager-1", "kube-scheduler-0", "kube-scheduler-1"} {
		if moved := firstMoved(seen, name, version.KubernetesVersion); moved < 0 || bothAPIs < 0 || moved < bothAPIs {
			t.Errorf("%s moved at look %d, the API servers ran %s from look %d: want it after them", name, moved, version.KubernetesVersion, bothAPIs)
		}
	}
	// Each API server is a new process.
	for _, name := range apiServers {
		if pid := instancePID(t, hs.dataDir, "hau", name); pid == pidsBefore[name] {
			t.Errorf("%s still runs pid %d: it was not restarted", name, pid)
		}
	}
}

// TestUpgradeWhileHibernated: a cluster of another release hibernates and
// resumes at its own release (a resume restarts nothing at another
// version); a version changed while it sleeps is rolled out when it
// resumes, with every object kept.
func TestUpgradeWhileHibernated(t *testing.T) {
	ownDirAndPorts(t)
	hs, kc := upWithCluster(t, "hu", "--kubernetes-version", releaseVersion)
	c := managementClient(t, hs)
	waitVersion(t, c, "hu", releaseVersion, 2*time.Minute)
	mustKubectl(t, kc, "create", "namespace", "kept")

	hs.must("hibernate", "cluster", "hu", "--wait", "--timeout", "2m")
	hs.must("resume", "cluster", "hu", "--wait", "--timeout", "3m")
	hc := waitVersion(t, c, "hu", releaseVersion, 2*time.Minute)
	if h := hc.Status.VersionHistory; len(h) != 1 || h[0].Version != releaseVersion {
		t.Errorf("version history after a resume %+v, want only %s", h, releaseVersion)
	}
	if v := mustKubectl(t, kc, "get", "--raw", "/version"); !strings.Contains(v, `"gitVersion": "`+releaseVersion+`"`) {
		t.Errorf("/version after a resume does not report %s:\n%s", releaseVersion, v)
	}

	hs.must("hibernate", "cluster", "hu", "--wait", "--timeout", "2m")
	waitVersionCondition(t, c, "hu", "False/AsExpected: At "+releaseVersion+" (hibernated)")
	upgrade(t, hs, "hu", version.KubernetesVersion)
	// Nothing rolls while it sleeps, and the condition says so.
	waitVersionCondition(t, c, "hu", "True/Upgrading: Hibernated at "+releaseVersion+": the upgrade to "+version.KubernetesVersion+" continues when the control plane wakes")
	hs.must("resume", "cluster", "hu", "--wait", "--timeout", "3m")
	hc = waitVersion(t, c, "hu", version.KubernetesVersion, 4*time.Minute)
	checkHistory(t, hc, version.KubernetesVersion, releaseVersion)
	if v := mustKubectl(t, kc, "get", "--raw", "/version"); !strings.Contains(v, `"gitVersion": "`+version.KubernetesVersion+`"`) {
		t.Errorf("/version does not report %s:\n%s", version.KubernetesVersion, v)
	}
	mustKubectl(t, kc, "get", "namespace", "kept")
}
