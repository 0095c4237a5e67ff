package e2e

import (
	"encoding/base64"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// addonManifest is seed 001's example as a user writes it: phase 1 puts a
// namespace and RBAC into the hosted cluster, phase 2 an operator (a
// Deployment and its ConfigMap) into the control-plane namespace, phase 3
// configuration into the hosted cluster. A probe gates phase 2 on its
// ConfigMap's ready; withRBAC false drops the ClusterRole and its binding.
func addonManifest(ready string, withRBAC bool) string {
	rbac := ""
	if withRBAC {
		rbac = `
        - object:
            apiVersion: rbac.authorization.k8s.io/v1
            kind: ClusterRole
            metadata: {name: extra-reader}
            rules: [{apiGroups: [""], resources: [configmaps], verbs: [get]}]
        - object:
            apiVersion: rbac.authorization.k8s.io/v1
            kind: RoleBinding
            metadata: {name: extra-reader, namespace: extra}
            roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: extra-reader}
            subjects: [{kind: ServiceAccount, name: default, namespace: extra}]`
	}
	return `apiVersion: hypershift.dev/v1alpha1
kind: ObjectDeployment
metadata:
  name: extra
  namespace: clusters-a
spec:
  template:
    spec:
      availabilityProbes:
      - selector:
          kind: {group: "", kind: ConfigMap}
          selector: {matchLabels: {gate: "true"}}
        probes:
        - cel: {rule: 'self.data.ready == "yes"', message: operator-config is not ready}
      phases:
      - name: rbac-and-stuff
        class: hosted-cluster
        objects:
        - object:
            apiVersion: v1
            kind: Namespace
            metadata: {name: extra}` + rbac + `
      - name: deploy
        objects:
        - object:
            apiVersion: v1
            kind: ConfigMap
            metadata: {name: operator-config, labels: {gate: "true"}}
            data: {ready: "` + ready + `"}
        - object:
            apiVersion: apps/v1
            kind: Deployment
            metadata: {name: extra-operator}
            spec:
              selector: {matchLabels: {app: extra}}
              template:
                metadata: {labels: {app: extra}}
                spec:
                  containers: [{name: operator, image: hypershift.dev/extra-operator:1}]
      - name: configure
        class: hosted-cluster
        objects:
        - object:
            apiVersion: v1
            kind: ConfigMap
            metadata: {name: extra-config, namespace: extra}
            data: {level: debug}
`
}

// grantAddons gives namespace ns of the management cluster kc the
// ServiceAccount that applies its ObjectDeployments' management-side
// phases, with the cluster's edit role there (docs/addons.md).
func grantAddons(t *testing.T, kc, ns string) {
	t.Helper()
	mustKubectl(t, kc, "-n", ns, "create", "serviceaccount", "hypershift-addons")
	mustKubectl(t, kc, "-n", ns, "create", "rolebinding", "hypershift-addons", "--clusterrole=edit", "--serviceaccount="+ns+":hypershift-addons")
}

// TestAddons rolls seed 001's addon out on the embedded management plane
// with a hosted cluster: phases in order, a probe that holds phase 3 and
// says so, the plain word that this plane runs no pods, connector
// credentials that cannot read an undeclared Secret, revision 2 removing
// what it dropped, and deletion on both sides.
func TestAddons(t *testing.T) {
	ownDirAndPorts(t)
	hs := upCLI(t)
	hs.must("create", "cluster", "none", "--name", "a", "--wait", "--timeout", "4m")
	mgmt := filepath.Join(hs.dataDir, "management.kubeconfig")
	hosted := hs.adminKubeconfig("a")
	apply := func(manifest string) {
		t.Helper()
		path := filepath.Join(t.TempDir(), "addon.yaml")
		writeFile(t, path, manifest)
		mustKubectl(t, mgmt, "apply", "-f", path)
	}
	get := func(kc string, args ...string) string {
		out, _ := kubectl(t, kc, append([]string{"get"}, args...)...)
		return out
	}
	exists := func(kc string, args ...string) bool {
		out, err := kubectl(t, kc, append([]string{"get", "--ignore-not-found", "-o", "name"}, args...)...)
		return err == nil && strings.TrimSpace(out) != ""
	}

	grantAddons(t, mgmt, "clusters-a")
	start := time.Now()
	apply(addonManifest("no", true))
	eventually(t, 2*time.Minute, "phase deploy holds the rollout on its probe", func() error {
		h := get(mgmt, "-n", "clusters-a", "objectdeployment", "extra", "-o", "jsonpath={.status.holding.phase} {.status.holding.reason} {.status.holding.object}: {.status.holding.message}")
		if !strings.HasPrefix(h, "deploy ProbeFailed ConfigMap clusters-a/operator-config") || !strings.Contains(h, "operator-config is not ready") {
			return errorf("holding: %q", h)
		}
		return nil
	})
	t.Logf("revision 1 applied up to its held phase in %s", time.Since(start).Round(100*time.Millisecond))
	if out := hs.must("get", "addons"); !regexpMatch(out, `(?m)^clusters-a\s+extra\s+1\s+False\s+True\s+phase deploy: ConfigMap clusters-a/operator-config \(management cluster\) \(ProbeFailed\)`) {
		t.Fatalf("get addons:\n%s", out)
	}
	if out := hs.must("describe", "addon", "extra", "-n", "clusters-a"); !regexpMatch(out, `(?m)^\s+configure\s+hosted cluster\s+Pending\s+waits for phase deploy`) {
		t.Fatalf("describe addon:\n%s", out)
	}
	pods := get(mgmt, "-n", "clusters-a", "objectdeployment", "extra", "-o", `jsonpath={.status.conditions[?(@.type=="PodsRunnable")].message}`)
	if !strings.Contains(pods, "runs no pods") || !strings.Contains(pods, "Deployment clusters-a/extra-operator") {
		t.Fatalf("the status does not say the Deployment's pods cannot run here: %q", pods)
	}
	for _, o := range [][]string{{"namespace", "extra"}, {"clusterrole", "extra-reader"}, {"-n", "extra", "rolebinding", "extra-reader"}} {
		if !exists(hosted, o...) {
			t.Fatalf("phase 1: %v is not in the hosted cluster", o)
		}
	}
	if !exists(mgmt, "-n", "clusters-a", "deployment", "extra-operator") {
		t.Fatal("phase 2: the Deployment is not in the control-plane namespace")
	}
	if exists(hosted, "-n", "extra", "configmap", "extra-config") {
		t.Fatal("phase 3 was applied while phase 2 is held")
	}

	t.Run("connector credentials cannot read an undeclared Secret", func(t *testing.T) {
		mustKubectl(t, hosted, "-n", "kube-system", "create", "secret", "generic", "undeclared", "--from-literal=k=v")
		mustKubectl(t, hosted, "-n", "extra", "create", "secret", "generic", "undeclared", "--from-literal=k=v")
		enc := get(mgmt, "-n", "clusters-a", "secret", "addon-extra-kubeconfig", "-o", "jsonpath={.data.kubeconfig}")
		kc, err := base64.StdEncoding.DecodeString(enc)
		if err != nil || len(kc) == 0 {
			t.Fatalf("connector kubeconfig Secret clusters-a/addon-extra-kubeconfig: %q %v", enc, err)
		}
		conn := filepath.Join(t.TempDir(), "connector.kubeconfig")
		writeFile(t, conn, string(kc))
		for _, args := range [][]string{
			{"-n", "kube-system", "get", "secret", "undeclared"},
			{"-n", "extra", "get", "secret", "undeclared"},
			{"-n", "extra", "get", "secrets"},
		} {
			out, err := kubectl(t, conn, args...)
			if err == nil || !strings.Contains(out, "Forbidden") {
				t.Fatalf("kubectl %v with the connector's credentials: err %v, want Forbidden:\n%s", args, err, out)
			}
		}
		if out, err := kubectl(t, conn, "get", "namespace", "extra"); err != nil {
			t.Fatalf("the connector cannot read the namespace it declared: %v\n%s", err, out)
		}
	})

	start = time.Now()
	apply(addonManifest("yes", false))
	eventually(t, 2*time.Minute, "revision 2 available, revision 1 archived", func() error {
		st := get(mgmt, "-n", "clusters-a", "objectdeployment", "extra", "-o", `jsonpath={.status.revision} {.status.conditions[?(@.type=="Available")].status} {.status.conditions[?(@.type=="Progressing")].status}`)
		old := get(mgmt, "-n", "clusters-a", "objectset", "extra-1", "-o", "jsonpath={.spec.lifecycleState}")
		if st != "2 True False" || old != "Archived" {
			return errorf("status %q, revision 1 %q", st, old)
		}
		return nil
	})
	t.Logf("revision 2 available and revision 1 retired in %s", time.Since(start).Round(100*time.Millisecond))
	if !exists(hosted, "-n", "extra", "configmap", "extra-config") {
		t.Fatal("phase 3 of revision 2 is not in the hosted cluster")
	}
	for _, o := range [][]string{{"clusterrole", "extra-reader"}, {"-n", "extra", "rolebinding", "extra-reader"}} {
		if exists(hosted, o...) {
			t.Fatalf("%v, dropped by revision 2, is still in the hosted cluster", o)
		}
	}

	start = time.Now()
	mustKubectl(t, mgmt, "-n", "clusters-a", "delete", "objectdeployment", "extra", "--timeout=2m")
	t.Logf("deletion on both sides took %s", time.Since(start).Round(100*time.Millisecond))
	for _, o := range [][]string{{"-n", "extra", "configmap", "extra-config"}, {"-n", "hypershift-addons", "serviceaccount", "addon-extra"}, {"clusterrole", "addon-extra"}} {
		if exists(hosted, o...) {
			t.Errorf("%v is left in the hosted cluster", o)
		}
	}
	eventually(t, time.Minute, "the addon's namespace gone from the hosted cluster", func() error {
		if exists(hosted, "namespace", "extra") {
			return errorf("namespace extra: %s", get(hosted, "namespace", "extra", "-o", "jsonpath={.status.phase}"))
		}
		return nil
	})
	for _, o := range [][]string{{"-n", "clusters-a", "deployment", "extra-operator"}, {"-n", "clusters-a", "configmap", "operator-config"}} {
		if exists(mgmt, o...) {
			t.Errorf("%v is left in the management cluster", o)
		}
	}
	// The ObjectSets and the connector's Secret go with their owner (the
	// garbage collector).
	eventually(t, time.Minute, "the ObjectSets and the connector Secret gone", func() error {
		for _, o := range [][]string{{"-n", "clusters-a", "objectsets"}, {"-n", "clusters-a", "secret", "addon-extra-kubeconfig"}} {
			if exists(mgmt, o...) {
				return errorf("%v is left", o)
			}
		}
		return nil
	})

	// An addon does not hold its hosted cluster's deletion up: the
	// control-plane namespace terminating takes the hosted side with it.
	apply(addonManifest("no", true))
	eventually(t, 2*time.Minute, "the addon applied again", func() error {
		if !exists(mgmt, "-n", "clusters-a", "deployment", "extra-operator") {
			return errorf("no Deployment yet")
		}
		return nil
	})
	start = time.Now()
	hs.must("destroy", "cluster", "--name", "a", "--wait", "--timeout", "3m")
	eventually(t, time.Minute, "the control-plane namespace gone", func() error {
		if exists(mgmt, "namespace", "clusters-a") {
			return errorf("namespace clusters-a: %s", get(mgmt, "namespace", "clusters-a", "-o", "jsonpath={.status.conditions}"))
		}
		return nil
	})
	t.Logf("destroying the cluster with its addon took %s", time.Since(start).Round(100*time.Millisecond))
}
