package e2e

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// dataPlaneEntry is one element of HostedControlPlane status.dataPlane.
type dataPlaneEntry struct {
	Kind, Namespace, Name, Ready, Message string
	Healthy                               bool
}

// corednsStatus reads the coredns Deployment's entry of status.dataPlane.
func corednsStatus(t *testing.T, mgmt, cluster string) (*dataPlaneEntry, error) {
	out, err := kubectl(t, mgmt, "-n", "clusters-"+cluster, "get", "hostedcontrolplane", cluster, "-o", "jsonpath={.status.dataPlane}")
	if err != nil {
		return nil, fmt.Errorf("%w: %s", err, out)
	}
	var entries []dataPlaneEntry
	if strings.TrimSpace(out) != "" {
		if err := json.Unmarshal([]byte(out), &entries); err != nil {
			return nil, fmt.Errorf("status.dataPlane %s: %w", out, err)
		}
	}
	for i, e := range entries {
		if e.Kind == "Deployment" && e.Namespace == "kube-system" && e.Name == "coredns" {
			return &entries[i], nil
		}
	}
	return nil, fmt.Errorf("status.dataPlane of HostedControlPlane clusters-%s/%s has no Deployment kube-system/coredns: %s", cluster, cluster, out)
}

// describeShowsCoreDNS finds the coredns Deployment's line in `describe
// cluster` with the ready count want.
func describeShowsCoreDNS(desc, want string) bool {
	for _, line := range strings.Split(desc, "\n") {
		f := strings.Fields(line)
		if strings.Contains(line, "Deployment") && strings.Contains(line, "coredns") && containsPrefix(f, want) {
			return true
		}
	}
	return false
}

// describeShowsRestore finds the event the control plane records when it
// puts back an object changed in the hosted cluster (docs/hosted-clusters.md).
func describeShowsRestore(desc string) bool {
	for _, line := range strings.Split(desc, "\n") {
		if strings.Contains(line, "DataPlaneRestored") && strings.Contains(line, "Deployment kube-system/coredns") {
			return true
		}
	}
	return false
}

// checkDataPlaneRestored: the control plane reports the in-cluster
// objects it applies (condition, status.dataPlane, describe), they carry
// its label and field manager, and the DNS Deployment scaled to 0 by hand
// comes back to 2 ready replicas, which describe reports (the object's
// line, and a DataPlaneRestored event).
func checkDataPlaneRestored(t *testing.T, hs *cli, cluster, kc, dnsServer string) {
	mgmt := filepath.Join(hs.dataDir, "management.kubeconfig")
	healthy := func() error {
		cond, _ := kubectl(t, mgmt, "-n", "clusters", "get", "hostedcluster", cluster, "-o", `jsonpath={.status.conditions[?(@.type=="DataPlaneAvailable")].status}`)
		if strings.TrimSpace(cond) != "True" {
			return fmt.Errorf("HostedCluster clusters/%s condition DataPlaneAvailable = %q, want True", cluster, cond)
		}
		e, err := corednsStatus(t, mgmt, cluster)
		if err != nil {
			return err
		}
		if !e.Healthy || e.Ready != "2/2" {
			return fmt.Errorf("status.dataPlane reports coredns %+v, want healthy 2/2", *e)
		}
		if desc := hs.run("describe", "cluster", cluster).stdout; !describeShowsCoreDNS(desc, "2/2") {
			return fmt.Errorf("describe cluster %s shows no line for Deployment coredns with 2/2:\n%s", cluster, desc)
		}
		_, err = lookupAt(dnsServer, "kubernetes.default.svc.cluster.local.")
		return err
	}
	eventually(t, 2*time.Minute, "the data plane reported healthy", healthy)

	meta := mustKubectl(t, kc, "-n", "kube-system", "get", "deployment", "coredns", "-o", "jsonpath={.metadata.labels} {.metadata.managedFields[*].manager}")
	if !strings.Contains(meta, `"hypershift.dev/managed-by":"control-plane"`) || !strings.Contains(meta, "hypershift.dev/hosted-cluster-config") {
		t.Errorf("Deployment kube-system/coredns labels and field managers: %s\nwant hypershift.dev/managed-by=control-plane and manager hypershift.dev/hosted-cluster-config", meta)
	}

	mustKubectl(t, kc, "-n", "kube-system", "scale", "deployment", "coredns", "--replicas=0")
	scaled := time.Now()
	seenDown := "(not seen: restored between two polls)"
	eventually(t, 3*time.Minute, "Deployment coredns scaled to 0 by hand restored to 2 ready replicas, reported by describe", func() error {
		if e, err := corednsStatus(t, mgmt, cluster); err == nil && !e.Healthy && strings.HasPrefix(seenDown, "(") {
			seenDown = fmt.Sprintf("%s healthy=false %q", e.Ready, e.Message)
		}
		got, _ := kubectl(t, kc, "-n", "kube-system", "get", "deployment", "coredns", "-o", "jsonpath={.spec.replicas}/{.status.readyReplicas}")
		if got != "2/2" {
			return fmt.Errorf("Deployment kube-system/coredns replicas/ready = %q, want 2/2", got)
		}
		if desc := hs.run("describe", "cluster", cluster).stdout; !describeShowsRestore(desc) {
			return fmt.Errorf("describe cluster %s shows no DataPlaneRestored event for Deployment kube-system/coredns:\n%s", cluster, desc)
		}
		return healthy()
	})
	t.Logf("coredns scaled to 0 → restored and reported 2/2: %.1fs; status.dataPlane while it was down: %s", time.Since(scaled).Seconds(), seenDown)
}
