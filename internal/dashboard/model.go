package dashboard

import (
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/dump"
)

// Condition is one condition as the pages show it.
type Condition struct {
	Type    string    `json:"type"`
	Status  string    `json:"status"`
	Reason  string    `json:"reason,omitempty"`
	Message string    `json:"message,omitempty"`
	Since   time.Time `json:"since"`
}

// Row is one hosted cluster in the fleet table.
type Row struct {
	Namespace   string    `json:"namespace"`
	Name        string    `json:"name"`
	Version     string    `json:"version"`
	Available   Condition `json:"available"`
	Progressing Condition `json:"progressing"`
	Degraded    Condition `json:"degraded"`
	Nodes       int32     `json:"nodes"`
	ReadyNodes  int32     `json:"readyNodes"`
	Created     time.Time `json:"created"`
	Endpoint    string    `json:"endpoint"`
	Hibernated  bool      `json:"hibernated"`
	// What the spec asks for: the version and hibernation.
	DesiredVersion     string `json:"desiredVersion"`
	HibernationEnabled bool   `json:"hibernationEnabled"`
}

// Fleet is the table: every hosted cluster, by namespace and name.
type Fleet struct {
	Clusters []Row     `json:"clusters"`
	At       time.Time `json:"at"`
}

// Component is one control-plane instance.
type Component struct {
	Name           string     `json:"name"`
	Component      string     `json:"component"`
	Phase          string     `json:"phase"`
	Restarts       int32      `json:"restarts"`
	LastExitReason string     `json:"lastExitReason,omitempty"`
	Message        string     `json:"message,omitempty"`
	StartedAt      *time.Time `json:"startedAt,omitempty"`
	Version        string     `json:"version,omitempty"`
}

// Pool is one NodePool of the cluster.
type Pool struct {
	Name          string `json:"name"`
	Platform      string `json:"platform"`
	Desired       *int32 `json:"desired,omitempty"` // spec.replicas; nil when autoscaled or as many as join
	Replicas      int32  `json:"replicas"`
	ReadyReplicas int32  `json:"readyReplicas"`
	Version       string `json:"version,omitempty"`
}

// Event is one recent event about the cluster.
type Event struct {
	Time    time.Time `json:"time"`
	Type    string    `json:"type"`
	Reason  string    `json:"reason"`
	Object  string    `json:"object"`
	Message string    `json:"message"`
	Count   int32     `json:"count"`
}

// Detail is the page of one cluster.
type Detail struct {
	Row
	Conditions []Condition `json:"conditions"`
	Components []Component `json:"components"`
	Pools      []Pool      `json:"pools"`
	Events     []Event     `json:"events"`
	History    []Sample    `json:"history"`
}

func condition(conds []metav1.Condition, t hypershiftv1alpha1.ConditionType) Condition {
	c := meta.FindStatusCondition(conds, t.String())
	if c == nil {
		return Condition{Type: t.String(), Status: "Unknown"}
	}
	return Condition{Type: c.Type, Status: string(c.Status), Reason: c.Reason, Message: c.Message, Since: c.LastTransitionTime.Time}
}

// rowOf is the fleet table's row of hc.
func rowOf(hc *hypershiftv1alpha1.HostedCluster) Row {
	conds := hc.Status.Conditions
	return Row{
		Namespace:   hc.Namespace,
		Name:        hc.Name,
		Version:     hc.Status.Version,
		Available:   condition(conds, hypershiftv1alpha1.Available),
		Progressing: condition(conds, hypershiftv1alpha1.Progressing),
		Degraded:    condition(conds, hypershiftv1alpha1.Degraded),
		Nodes:       hc.Status.NodeCount,
		ReadyNodes:  hc.Status.ReadyNodeCount,
		Created:     hc.CreationTimestamp.Time,
		Endpoint:    hc.Status.Endpoint,
		Hibernated:  meta.IsStatusConditionTrue(conds, hypershiftv1alpha1.Hibernated.String()),

		DesiredVersion:     hc.Spec.KubernetesVersion,
		HibernationEnabled: hc.Spec.Hibernation != nil && hc.Spec.Hibernation.Enabled,
	}
}

// fleetOf is the table of clusters, sorted by namespace and name.
func fleetOf(clusters []hypershiftv1alpha1.HostedCluster, now time.Time) Fleet {
	f := Fleet{Clusters: make([]Row, 0, len(clusters)), At: now}
	for i := range clusters {
		f.Clusters = append(f.Clusters, rowOf(&clusters[i]))
	}
	sort.Slice(f.Clusters, func(i, j int) bool {
		a, b := f.Clusters[i], f.Clusters[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	return f
}

// detailOf is the page of one cluster: its row, every condition, its
// components, pools and the last maxEvents events about it.
func detailOf(hc *hypershiftv1alpha1.HostedCluster, hcp *hypershiftv1alpha1.HostedControlPlane, pools []hypershiftv1alpha1.NodePool, events []corev1.Event, history []Sample) Detail {
	d := Detail{Row: rowOf(hc), History: history}
	for _, c := range hc.Status.Conditions {
		d.Conditions = append(d.Conditions, Condition{Type: c.Type, Status: string(c.Status), Reason: c.Reason, Message: c.Message, Since: c.LastTransitionTime.Time})
	}
	if hcp != nil {
		for _, s := range hcp.Status.Components {
			c := Component{Name: s.Name, Component: s.Component, Phase: string(s.Phase), Restarts: s.Restarts, LastExitReason: s.LastExitReason, Message: s.Message, Version: s.Version}
			if s.StartedAt != nil {
				t := s.StartedAt.Time
				c.StartedAt = &t
			}
			d.Components = append(d.Components, c)
		}
	}
	for _, p := range pools {
		if p.Spec.ClusterName != hc.Name {
			continue
		}
		d.Pools = append(d.Pools, Pool{Name: p.Name, Platform: string(p.Spec.Platform.Type), Desired: p.Spec.Replicas, Replicas: p.Status.Replicas, ReadyReplicas: p.Status.ReadyReplicas, Version: p.Status.Version})
	}
	sort.SliceStable(events, func(i, j int) bool { return dump.EventTime(events[i]).After(dump.EventTime(events[j])) })
	for _, e := range events {
		if len(d.Events) == maxEvents {
			break
		}
		d.Events = append(d.Events, Event{
			Time: dump.EventTime(e), Type: e.Type, Reason: e.Reason, Message: e.Message, Count: max(e.Count, 1),
			Object: e.InvolvedObject.Kind + "/" + e.InvolvedObject.Name,
		})
	}
	return d
}

// maxEvents is how many recent events a cluster's page lists.
const maxEvents = 30
