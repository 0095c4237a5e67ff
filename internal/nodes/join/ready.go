package join

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"hypershift.dev/internal/daemon"
	"hypershift.dev/internal/runtime/process"
)

// errDaemonExited ends the wait for a node whose daemon is gone.
var errDaemonExited = errors.New("the node daemon exited")

// WaitReady waits until the kubelet has its client certificate and its
// Node reports Ready, or the node daemon exits, or timeout passes; the
// error names the step it waited for and the last lines of the log that
// explains it.
func WaitReady(ctx context.Context, n *Node, d *daemon.Child, timeout time.Duration) error {
	var kube kubernetes.Interface
	var daemonErr error
	last := "waiting for the kubelet's client certificate"
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, false, func(ctx context.Context) (bool, error) {
		select {
		case daemonErr = <-d.Exited:
			return false, errDaemonExited
		default:
		}
		if kube == nil {
			cfg, err := clientcmd.BuildConfigFromFlags("", n.KubeletKubeconfig())
			if err != nil {
				return false, nil
			}
			if kube, err = kubernetes.NewForConfig(cfg); err != nil {
				return false, err
			}
			last = "waiting for the Node to register"
		}
		node, err := kube.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = "waiting for the Node to be Ready"
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				return true, nil
			}
			if c.Type == corev1.NodeReady && c.Message != "" {
				last = "Node not Ready: " + c.Message
			}
		}
		return false, nil
	})
	switch {
	case err == nil:
		return nil
	case errors.Is(err, errDaemonExited):
		return fmt.Errorf("the node daemon exited (%w); last lines of %s:\n%s", daemonErr, d.LogPath, d.LogTail(15))
	case ctx.Err() != nil:
		return ctx.Err()
	case wait.Interrupted(err):
		return fmt.Errorf("node %s not Ready after %s (%s); last lines of %s:\n%s", n.Name, timeout, last, n.LogPath(Kubelet), process.LogTail(n.LogPath(Kubelet), 15))
	default:
		return err
	}
}
