package dump

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/hostedref"
)

// hostedView is what the hosted cluster said, for the summary.
type hostedView struct {
	Reached       bool
	Nodes, Ready  int
	NotRunning    []string
	NotReadyNodes []string
}

// hosted collects, through the cluster's admin kubeconfig, its nodes, the
// pods that are not running (or not ready) and the events about them and
// the nodes, and the warnings of the last hour. The kubeconfig is the
// operator's copy in the control-plane namespace, labelled with the
// cluster's UID: the one beside the HostedCluster is its namespace's users'
// to rewrite, and dump runs with the rights of whoever reads the dump.
func (c *collector) hosted(ctx context.Context, hc *hypershiftv1alpha1.HostedCluster, cpNamespace string, secrets map[string]*corev1.Secret) hostedView {
	var view hostedView
	secret := secrets[cpNamespace+"/"+hostedref.AdminKubeconfigSecret]
	if secret == nil {
		c.problem("hosted cluster: admin kubeconfig Secret %s/%s not found", cpNamespace, hostedref.AdminKubeconfigSecret)
		return view
	}
	_, cfg, err := hostedref.AdminKubeconfigOf(secret, hc)
	if err != nil {
		c.problem("hosted cluster: %v", err)
		return view
	}
	cfg.Timeout = c.o.HostedTimeout
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		c.problem("hosted cluster: %v", err)
		return view
	}

	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		c.problem("hosted cluster at %s unreachable: nodes: %v", cfg.Host, err)
		return view
	}
	view.Reached = true
	involved := map[string]bool{}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		clean(n)
		view.Nodes++
		if nodeReady(n) {
			view.Ready++
		} else {
			view.NotReadyNodes = append(view.NotReadyNodes, n.Name)
		}
		involved["Node/"+n.Name] = true
	}
	c.addYAML("hosted/nodes.yaml", list("NodeList", nodes.Items))

	pods, err := cs.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		c.problem("hosted cluster: pods: %v", err)
	} else {
		var bad []corev1.Pod
		for i := range pods.Items {
			p := &pods.Items[i]
			if podHealthy(p) {
				continue
			}
			clean(p)
			redactPodEnv(&p.Spec)
			bad = append(bad, *p)
			view.NotRunning = append(view.NotRunning, fmt.Sprintf("%s/%s (%s)", p.Namespace, p.Name, p.Status.Phase))
			involved["Pod/"+p.Namespace+"/"+p.Name] = true
		}
		c.addYAML("hosted/pods-not-running.yaml", list("PodList", bad))
	}

	events, err := cs.CoreV1().Events(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		c.problem("hosted cluster: events: %v", err)
		return view
	}
	var kept []corev1.Event
	for _, e := range events.Items {
		o := e.InvolvedObject
		key := o.Kind + "/" + o.Name
		if o.Namespace != "" {
			key = o.Kind + "/" + o.Namespace + "/" + o.Name
		}
		if involved[key] || e.Type == corev1.EventTypeWarning {
			clean(&e)
			kept = append(kept, e)
		}
	}
	sortEvents(kept)
	c.addYAML("hosted/events.yaml", list("EventList", kept))
	c.add("hosted/events.txt", eventTable(kept))
	return view
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// podHealthy: succeeded, or running with every container ready.
func podHealthy(p *corev1.Pod) bool {
	switch p.Status.Phase {
	case corev1.PodSucceeded:
		return true
	case corev1.PodRunning:
		for _, st := range p.Status.ContainerStatuses {
			if !st.Ready {
				return false
			}
		}
		return true
	default:
		return false
	}
}
