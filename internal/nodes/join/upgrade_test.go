package join

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/runtime"
	"hypershift.dev/internal/version"
)

// TestWatchVersion: the node daemon acts on its own Node's annotation
// only, and only when it names another version than the one running.
func TestWatchVersion(t *testing.T) {
	kube := fake.NewClientset(
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "vm"}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "other"}},
	)
	// The fake API server does not replay changes made between the list
	// and the watch (a real one does, from the list's resourceVersion):
	// annotate only once the watch is registered.
	watching := make(chan struct{}, 10)
	kube.PrependWatchReactor("nodes", func(action k8stesting.Action) (bool, watch.Interface, error) {
		w, err := kube.Tracker().Watch(action.GetResource(), action.GetNamespace())
		watching <- struct{}{}
		return true, w, err
	})
	var mu sync.Mutex
	running := "v1.36.3"
	upgrades := make(chan string, 10)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		watchVersion(ctx, kube, "vm", func() string {
			mu.Lock()
			defer mu.Unlock()
			return running
		}, func(_ context.Context, v string) error {
			mu.Lock()
			running = v
			mu.Unlock()
			upgrades <- v
			return nil
		}, logr.Discard())
	}()
	defer func() { cancel(); <-done }()
	annotate := func(name, v string) {
		t.Helper()
		n, err := kube.CoreV1().Nodes().Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n.Annotations = map[string]string{hypershiftv1alpha1.NodeKubernetesVersionAnnotation: v}
		if _, err := kube.CoreV1().Nodes().Update(t.Context(), n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	expect := func(want string) {
		t.Helper()
		select {
		case got := <-upgrades:
			if got != want {
				t.Fatalf("upgraded to %s, want %s", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no upgrade to %s", want)
		}
	}
	select {
	case <-watching:
	case <-time.After(10 * time.Second):
		t.Fatal("the node daemon does not watch its Node")
	}
	annotate("other", "v1.35.0") // another node's annotation
	annotate("vm", "v1.36.3")    // the version it runs
	annotate("vm", "v1.37.1")
	expect("v1.37.1")
	annotate("vm", "v1.37.1") // again: nothing to do
	annotate("vm", "v1.36.3")
	expect("v1.36.3")
	select {
	case v := <-upgrades:
		t.Fatalf("unexpected upgrade to %s", v)
	default:
	}
}

func TestRunRelease(t *testing.T) {
	n := &Node{DataDir: "/var/lib/hypershift-node", Ports: map[string]int{}}
	spec := runtime.Spec{Name: Kubelet, Component: Kubelet, Args: []string{"--config=x"}}
	if got := n.runRelease(spec); got.Command != "" {
		t.Fatalf("compiled-in release runs %q", got.Command)
	}
	n.KubernetesVersion = version.KubernetesVersion
	if got := n.runRelease(spec); got.Command != "" {
		t.Fatalf("the binary's own version runs %q", got.Command)
	}
	n.KubernetesVersion = "v1.36.3"
	got := n.runRelease(spec)
	if got.Command != "/var/lib/hypershift-node/releases/v1.36.3/kubernetes" || len(got.Args) != 2 || got.Args[0] != Kubelet {
		t.Fatalf("release v1.36.3 runs %q %v", got.Command, got.Args)
	}
}
