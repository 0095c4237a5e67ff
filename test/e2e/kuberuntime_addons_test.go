package e2e

import (
	"encoding/base64"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// kubeRuntimeAddonManifest is seed 001's example for the kube runtime's
// cluster inner. Phase 1 puts a namespace into the hosted cluster and a
// Role there that lets the addon's connector hold a Lease in it; phase 2
// runs a pod in the control-plane namespace that uses that Role through
// the connector's kubeconfig: kube-scheduler, compiled into the project's
// own image, whose leader election writes the Lease (it starts nothing
// else until it leads, and serves no port); phase 3 puts a ConfigMap into
// the hosted cluster.
func kubeRuntimeAddonManifest(ns, image, entrypoint string) string {
	return `apiVersion: hypershift.dev/v1alpha1
kind: ObjectDeployment
metadata:
  name: extra
  namespace: ` + ns + `
spec:
  template:
    spec:
      availabilityProbes:
      - selector: {kind: {group: apps, kind: Deployment}}
        probes:
        - condition: {type: Available, status: "True"}
        - fieldsEqual: {fieldA: .status.updatedReplicas, fieldB: .status.replicas}
      phases:
      - name: rbac-and-stuff
        class: hosted-cluster
        objects:
        - object: {apiVersion: v1, kind: Namespace, metadata: {name: extra}}
        - object:
            apiVersion: rbac.authorization.k8s.io/v1
            kind: Role
            metadata: {name: extra-leases, namespace: extra}
            rules: [{apiGroups: [coordination.k8s.io], resources: [leases], verbs: [get, create, update]}]
        - object:
            apiVersion: rbac.authorization.k8s.io/v1
            kind: RoleBinding
            metadata: {name: extra-leases, namespace: extra}
            roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: extra-leases}
            subjects: [{kind: ServiceAccount, name: addon-extra, namespace: hypershift-addons}]
      - name: deploy
        objects:
        - object:
            apiVersion: v1
            kind: ConfigMap
            metadata: {name: extra-operator-config}
            data:
              config.yaml: |
                apiVersion: kubescheduler.config.k8s.io/v1
                kind: KubeSchedulerConfiguration
                clientConnection: {kubeconfig: /connector/kubeconfig}
                delayCacheUntilActive: true
                leaderElection: {leaderElect: true, resourceLock: leases, resourceNamespace: extra, resourceName: extra-operator}
        - object:
            apiVersion: apps/v1
            kind: Deployment
            metadata: {name: extra-operator}
            spec:
              selector: {matchLabels: {app: extra-operator}}
              template:
                metadata: {labels: {app: extra-operator}}
                spec:
                  automountServiceAccountToken: false
                  securityContext: {runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532, seccompProfile: {type: RuntimeDefault}}
                  containers:
                  - name: operator
                    image: ` + image + `
                    imagePullPolicy: IfNotPresent
                    command: [` + entrypoint + `, component, kube-scheduler, --config=/config/config.yaml, --secure-port=0]
                    securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
                    volumeMounts:
                    - {name: connector, mountPath: /connector, readOnly: true}
                    - {name: config, mountPath: /config, readOnly: true}
                  volumes:
                  - {name: connector, secret: {secretName: addon-extra-kubeconfig}}
                  - {name: config, configMap: {name: extra-operator-config}}
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

// kubeRuntimeAddons rolls seed 001's addon out in inner's control-plane
// namespace ns on the kube runtime: the phases in order, the pod of phase 2
// acting in the hosted cluster with the connector's kubeconfig (through
// the API server's Service) and phase 1's Role, and deletion removing
// everything on both sides.
func kubeRuntimeAddons(t *testing.T, mgmt, inner, ns string) {
	exists := func(kc string, args ...string) bool {
		out, err := kubectl(t, kc, append([]string{"get", "--ignore-not-found", "-o", "name"}, args...)...)
		return err == nil && strings.TrimSpace(out) != ""
	}
	get := func(kc string, args ...string) string {
		out, _ := kubectl(t, kc, append([]string{"get"}, args...)...)
		return strings.TrimSpace(out)
	}
	// The project's own image and entrypoint, as the control plane's pods
	// run them: nothing is pulled.
	api := mustKubectl(t, mgmt, "-n", ns, "get", "pods", "-l", "hypershift.dev/component=kube-apiserver",
		"-o", "jsonpath={.items[0].spec.containers[0].image} {.items[0].spec.containers[0].command[0]}")
	image, entrypoint, ok := strings.Cut(strings.TrimSpace(api), " ")
	if !ok || image == "" || entrypoint == "" {
		t.Fatalf("the API server's pod in %s: image and command %q", ns, api)
	}
	manifest := filepath.Join(t.TempDir(), "addon.yaml")
	writeFile(t, manifest, kubeRuntimeAddonManifest(ns, image, entrypoint))

	grantAddons(t, mgmt, ns)
	start := time.Now()
	mustKubectl(t, mgmt, "apply", "-f", manifest)
	// Each look checks the order: phase 3's ConfigMap only once phase 2's
	// Deployment is available, phase 2 only once phase 1's namespace is
	// there (read in that order, so what was seen first was there first).
	looks := 0
	eventually(t, 4*time.Minute, "the addon Available with its pod holding the Lease in the hosted cluster", func() error {
		looks++
		config := exists(inner, "-n", "extra", "configmap", "extra-config")
		available := get(mgmt, "-n", ns, "deployment", "extra-operator", "-o", "jsonpath={.status.availableReplicas}")
		deployment := exists(mgmt, "-n", ns, "deployment", "extra-operator")
		namespace := exists(inner, "namespace", "extra")
		if config && (available == "" || available == "0") {
			t.Fatalf("phase 3's ConfigMap is in the hosted cluster while phase 2's Deployment has %q available replicas", available)
		}
		if deployment && !namespace {
			t.Fatal("phase 2's Deployment is in the management cluster before phase 1's namespace is in the hosted cluster")
		}
		st := get(mgmt, "-n", ns, "objectdeployment", "extra", "-o",
			`jsonpath={.status.conditions[?(@.type=="Available")].status} {.status.holding.phase} {.status.holding.object}: {.status.holding.message}`)
		holder := get(inner, "-n", "extra", "lease", "extra-operator", "-o", "jsonpath={.spec.holderIdentity}")
		if !strings.HasPrefix(st, "True") || !config || holder == "" {
			return errorf("status %q, phase 3's ConfigMap %v, Lease holder %q", st, config, holder)
		}
		return nil
	})
	t.Logf("the addon's three phases Available, its pod holding the Lease in the hosted cluster, in %s (%d looks)", time.Since(start).Round(100*time.Millisecond), looks)
	if looks < 2 {
		t.Errorf("the rollout was complete at the first look: the order of its phases was not observed")
	}
	kc, err := base64.StdEncoding.DecodeString(get(mgmt, "-n", ns, "secret", "addon-extra-kubeconfig", "-o", "jsonpath={.data.kubeconfig}"))
	if err != nil || len(kc) == 0 {
		t.Fatalf("connector kubeconfig Secret %s/addon-extra-kubeconfig: %v", ns, err)
	}
	if want := fmt.Sprintf("server: https://kube-apiserver.%s.svc:", ns); !strings.Contains(string(kc), want) {
		t.Errorf("the connector's kubeconfig does not name the API server's Service (%s…):\n%s", want, redactToken(string(kc)))
	}
	// The Lease was written with the connector's identity, through phase
	// 1's Role: the admin kubeconfig is not in the pod.
	if out, _ := kubectl(t, inner, "auth", "can-i", "update", "leases", "-n", "extra", "--as", "system:serviceaccount:hypershift-addons:addon-extra"); strings.TrimSpace(out) != "yes" {
		t.Errorf("the connector may not update Leases in extra: %q", out)
	}

	start = time.Now()
	mustKubectl(t, mgmt, "-n", ns, "delete", "objectdeployment", "extra", "--timeout=3m")
	t.Logf("deletion on both sides took %s", time.Since(start).Round(100*time.Millisecond))
	for _, o := range [][]string{
		{"-n", "extra", "configmap", "extra-config"},
		{"-n", "extra", "role", "extra-leases"},
		{"-n", "extra", "rolebinding", "extra-leases"},
		{"-n", "hypershift-addons", "serviceaccount", "addon-extra"},
		{"clusterrole", "addon-extra"},
		{"clusterrolebinding", "addon-extra"},
	} {
		if exists(inner, o...) {
			t.Errorf("%v is left in the hosted cluster", o)
		}
	}
	eventually(t, 2*time.Minute, "the addon's namespace (and its Lease) gone from the hosted cluster", func() error {
		if exists(inner, "namespace", "extra") {
			return errorf("namespace extra: %s", get(inner, "namespace", "extra", "-o", "jsonpath={.status.phase}"))
		}
		return nil
	})
	eventually(t, time.Minute, "the addon's objects gone from the management cluster", func() error {
		for _, o := range [][]string{
			{"-n", ns, "deployment", "extra-operator"},
			{"-n", ns, "configmap", "extra-operator-config"},
			{"-n", ns, "secret", "addon-extra-kubeconfig"},
			{"-n", ns, "pods", "-l", "app=extra-operator"},
		} {
			if exists(mgmt, o...) {
				return errorf("%v is left", o)
			}
		}
		return nil
	})
}

// redactToken drops the token lines of a kubeconfig for the log.
func redactToken(kc string) string {
	var out []string
	for _, l := range strings.Split(kc, "\n") {
		if !strings.Contains(l, "token:") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
