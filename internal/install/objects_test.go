package install_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hypershift.dev/internal/clusterapi"
	"hypershift.dev/internal/install"
)

func names(objs []client.Object) []string {
	out := make([]string, 0, len(objs))
	for _, obj := range objs {
		out = append(out, obj.GetName())
	}
	return out
}

// TestObjectsPerRuntime: `up` gets the API and the process policy only;
// install gets the operator too, configured from its options.
func TestObjectsPerRuntime(t *testing.T) {
	up, err := install.Objects()
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(names(up), install.OperatorName) {
		t.Errorf("up's objects include the operator: %v", names(up))
	}
	api, err := install.APIObjects(install.RuntimeKube, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(api) != len(up) || slices.Contains(names(api), install.OperatorName) {
		t.Errorf("the kube runtime's API objects %v, want the same set as up's %v", names(api), names(up))
	}
	objs, err := install.ObjectsFor(install.Options{Image: "registry.example.com/hs:1", Namespace: "hs", Replicas: 3, StorageClassName: "fast"})
	if err != nil {
		t.Fatal(err)
	}
	var d *appsv1.Deployment
	for _, obj := range objs {
		if obj.GetLabels()[install.ManagedByLabel] != install.ManagedBy {
			t.Errorf("%s lacks the label %s", obj.GetName(), install.ManagedByLabel)
		}
		if dep, ok := obj.(*appsv1.Deployment); ok {
			d = dep
		}
	}
	if d == nil {
		t.Fatalf("no operator Deployment among %v", names(objs))
	}
	if d.Namespace != "hs" || *d.Spec.Replicas != 3 {
		t.Errorf("Deployment %s/%s with %d replicas, want hs/%s with 3", d.Namespace, d.Name, *d.Spec.Replicas, install.OperatorName)
	}
	args := strings.Join(d.Spec.Template.Spec.Containers[0].Args, " ")
	for _, want := range []string{"--runtime=kube", "--image=registry.example.com/hs:1", "--leader-elect", "--install-crds=false", "--etcd-storage-class=fast"} {
		if !strings.Contains(args, want) {
			t.Errorf("operator args %q lack %s", args, want)
		}
	}
	if _, ok := d.Spec.Selector.MatchLabels[install.ManagedByLabel]; ok {
		t.Errorf("the Deployment's immutable selector carries install's label: %v", d.Spec.Selector.MatchLabels)
	}
}

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		opts install.Options
		want string
	}{
		{install.Options{}, ""},
		{install.Options{Runtime: "docker"}, `--runtime "docker": use kube or process`},
		{install.Options{Namespace: "-x"}, `--namespace "-x" is not a valid namespace name`},
		{install.Options{Image: "::"}, `--image "::" is not an image reference`},
		{install.Options{Replicas: -2}, "--replicas -2"},
		{install.Options{StorageClassName: "A"}, `--storage-class "A" is not a valid StorageClass name`},
		{install.Options{AWSProviderNamespace: "CAPA"}, `--aws-provider-namespace "CAPA" is not a valid namespace name`},
	}
	for _, tt := range tests {
		err := tt.opts.Validate()
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("Validate(%+v) = %v, want %q", tt.opts, err, tt.want)
		}
	}
}

// widgetCRD is a Cluster API CRD as `make build` copies them, small.
const widgetCRD = `---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.cluster.x-k8s.io
spec:
  group: cluster.x-k8s.io
  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}
  scope: Namespaced
  versions:
  - name: v1beta2
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`

// clusterAPIDir lays out a Cluster API directory as `make build` does,
// with the CRD files given.
func clusterAPIDir(t *testing.T, crds map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, clusterapi.CRDDirName), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range crds {
		if err := os.WriteFile(filepath.Join(dir, clusterapi.CRDDirName, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// allows says whether rules grant verb on group/resource.
func allows(rules []rbacv1.PolicyRule, group, resource, verb string) bool {
	for _, r := range rules {
		if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb) {
			return true
		}
	}
	return false
}

// TestClusterAPIObjects: with Cluster API's directory, the kube runtime's
// install has its CRDs (after hypershift's, before the policies) and its
// manager: a Deployment of the image's binary with the flags of a pod
// (leader election in the operator's namespace, probes on its health
// port, no metrics, no kubeconfig, no CRD writes), its ServiceAccount
// bound to the aggregation of Cluster API's and hypershift's provider
// rules, and a leader-election Role. Without the directory none of it; a
// directory without CRDs is refused naming it; `up`'s objects never have
// them.
func TestClusterAPIObjects(t *testing.T) {
	dir := clusterAPIDir(t, map[string]string{"cluster.x-k8s.io_widgets.yaml": widgetCRD})
	objs, err := install.ObjectsFor(install.Options{ClusterAPIDir: dir, Namespace: "hs", Image: "registry.example.com/hs:1", Replicas: 1})
	if err != nil {
		t.Fatal(err)
	}
	crd, firstPolicy := -1, -1
	var d *appsv1.Deployment
	roles := map[string]*rbacv1.ClusterRole{}
	var binding *rbacv1.ClusterRoleBinding
	var leaderBinding *rbacv1.RoleBinding
	for i, obj := range objs {
		if obj.GetLabels()[install.ManagedByLabel] != install.ManagedBy {
			t.Errorf("%s lacks the label %s", obj.GetName(), install.ManagedByLabel)
		}
		switch o := obj.(type) {
		case *apiextensionsv1.CustomResourceDefinition:
			if o.Name == "widgets.cluster.x-k8s.io" {
				crd = i
			}
		case *admissionregistrationv1.ValidatingAdmissionPolicy:
			if firstPolicy < 0 {
				firstPolicy = i
			}
		case *appsv1.Deployment:
			if o.Name == install.ClusterAPIName {
				d = o
			}
		case *rbacv1.ClusterRole:
			roles[o.Name] = o
		case *rbacv1.ClusterRoleBinding:
			if o.Subjects[0].Name == install.ClusterAPIName {
				binding = o
			}
		case *rbacv1.RoleBinding:
			if o.Subjects[0].Name == install.ClusterAPIName {
				leaderBinding = o
			}
		}
	}
	if crd < 0 || crd > firstPolicy {
		t.Errorf("Cluster API's CRD at %d, the first policy at %d: want the CRD among the CRDs, before the policies (%v)", crd, firstPolicy, names(objs))
	}
	if d == nil {
		t.Fatalf("no Deployment %s among %v", install.ClusterAPIName, names(objs))
	}
	pod := d.Spec.Template.Spec
	c := pod.Containers[0]
	if d.Namespace != "hs" || *d.Spec.Replicas != 1 || pod.ServiceAccountName != install.ClusterAPIName ||
		c.Image != "registry.example.com/hs:1" || strings.Join(c.Command, " ") != "/clusterapi/cluster-api-manager" {
		t.Errorf("Deployment %s/%s: %d replicas, service account %q, image %s, command %v; want hs, 1, %s, the install's image, /clusterapi/cluster-api-manager",
			d.Namespace, d.Name, *d.Spec.Replicas, pod.ServiceAccountName, c.Image, c.Command, install.ClusterAPIName)
	}
	args := strings.Join(c.Args, " ")
	for _, want := range []string{"--leader-elect", "--leader-elect-namespace=hs", "--health-addr=:9440", "--metrics-addr=0"} {
		if !slices.Contains(c.Args, want) {
			t.Errorf("manager args %q lack %s", args, want)
		}
	}
	for _, unwanted := range []string{"--kubeconfig", "--crd-dir"} {
		if strings.Contains(args, unwanted) {
			t.Errorf("manager args %q have %s: in a pod it uses its service account, and install applies the CRDs", args, unwanted)
		}
	}
	if p := c.ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/readyz" || p.HTTPGet.Port.StrVal != "health" ||
		len(c.Ports) != 1 || c.Ports[0].Name != "health" || c.Ports[0].ContainerPort != 9440 {
		t.Errorf("manager readiness %+v on ports %+v, want /readyz on its one port health 9440", c.ReadinessProbe, c.Ports)
	}
	if leaderBinding == nil || leaderBinding.Namespace != "hs" {
		t.Errorf("no RoleBinding of the manager's leader election in hs: %+v", leaderBinding)
	}
	if binding == nil {
		t.Fatalf("no ClusterRoleBinding for %s among %v", install.ClusterAPIName, names(objs))
	}
	bound := roles[binding.RoleRef.Name]
	if bound == nil || bound.AggregationRule == nil || len(bound.AggregationRule.ClusterRoleSelectors) != 1 {
		t.Fatalf("the manager is bound to %+v, want an aggregated ClusterRole", bound)
	}
	if sel := bound.AggregationRule.ClusterRoleSelectors[0].MatchLabels; len(sel) != 1 || sel["cluster.x-k8s.io/aggregate-to-manager"] != "true" {
		t.Errorf("the manager's ClusterRole aggregates roles labelled %v, want Cluster API's cluster.x-k8s.io/aggregate-to-manager=true only", sel)
	}
	var rules []rbacv1.PolicyRule
	aggregated := labels.SelectorFromSet(bound.AggregationRule.ClusterRoleSelectors[0].MatchLabels)
	for _, r := range roles {
		if aggregated.Matches(labels.Set(r.Labels)) {
			rules = append(rules, r.Rules...)
		}
	}
	for _, tc := range []struct {
		group, resource, verb string
		want                  bool
	}{
		{"cluster.x-k8s.io", "machines", "create", true},
		{"cluster.x-k8s.io", "clusters/finalizers", "update", true},
		{"cluster.x-k8s.io", "machinedeployments/status", "patch", true},
		{"", "secrets", "get", true},
		{"hypershift.dev", "hostmachines", "create", true},
		{"hypershift.dev", "joinconfigs", "delete", true},
		{"hypershift.dev", "hostmachinetemplates", "patch", true},
		{"hypershift.dev", "hostclusters", "delete", true},
		{"hypershift.dev", "joinconfigtemplates", "get", true},
		{"hypershift.dev", "hostedcontrolplanes", "patch", true},
		{"hypershift.dev", "hostedcontrolplanes", "create", false},
		{"hypershift.dev", "hostedclusters", "get", false},
		{"apiextensions.k8s.io", "customresourcedefinitions", "patch", false},
		{"", "configmaps", "get", false},
	} {
		if got := allows(rules, tc.group, tc.resource, tc.verb); got != tc.want {
			t.Errorf("Cluster API's manager may %s %s.%s: %v, want %v", tc.verb, tc.resource, tc.group, got, tc.want)
		}
	}

	missing, err := install.ObjectsFor(install.Options{ClusterAPIDir: filepath.Join(dir, "missing")})
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range missing {
		if strings.Contains(obj.GetName(), "cluster-api") || strings.HasSuffix(obj.GetName(), ".cluster.x-k8s.io") {
			t.Errorf("without Cluster API's directory install has %s", obj.GetName())
		}
	}
	empty := clusterAPIDir(t, nil)
	if _, err := install.ObjectsFor(install.Options{ClusterAPIDir: empty}); err == nil || !strings.Contains(err.Error(), "no Cluster API CRDs in "+filepath.Join(empty, "crds")) {
		t.Errorf("ObjectsFor with an empty Cluster API directory: %v, want an error naming it", err)
	}
	process, err := install.ObjectsFor(install.Options{Runtime: install.RuntimeProcess, ClusterAPIDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(names(process), "widgets.cluster.x-k8s.io") {
		t.Errorf("the process runtime's objects have Cluster API's CRDs (its manager installs them when started): %v", names(process))
	}
}
