package install_test

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
	}
	for _, tt := range tests {
		err := tt.opts.Validate()
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("Validate(%+v) = %v, want %q", tt.opts, err, tt.want)
		}
	}
}
