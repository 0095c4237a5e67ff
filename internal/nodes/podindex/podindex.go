// Package podindex indexes cached pods by the node they are bound to, for
// the node agent and the NodePool controller alike.
package podindex

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// byNode is the index of pods by spec.nodeName ("" for pending pods).
const byNode = "nodeName"

// AddTo adds the by-node index to a pod informer.
func AddTo(informer cache.SharedIndexInformer) error {
	return informer.AddIndexers(cache.Indexers{byNode: func(obj any) ([]string, error) {
		if p, ok := obj.(*corev1.Pod); ok {
			return []string{p.Spec.NodeName}, nil
		}
		return nil, nil
	}})
}

// On returns the cached pods bound to node ("" for pending pods).
func On(pods cache.Indexer, node string) []*corev1.Pod {
	objs, err := pods.ByIndex(byNode, node)
	if err != nil {
		return nil
	}
	out := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok {
			out = append(out, p)
		}
	}
	return out
}
