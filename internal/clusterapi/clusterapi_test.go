package clusterapi_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hypershift.dev/internal/clusterapi"
	"hypershift.dev/internal/datadir"
	"hypershift.dev/internal/testenv"
)

const (
	// fixtureGroup holds the fixture providers' kinds below.
	fixtureGroup = "fixture.test.hypershift.dev"
	namespace    = "capi-test"
	clusterName  = "dev"
	deployment   = "workers"

	clusterNameLabel    = "cluster.x-k8s.io/cluster-name"
	deploymentNameLabel = "cluster.x-k8s.io/deployment-name"
	clonedFromName      = "cluster.x-k8s.io/cloned-from-name"
)

var (
	clusterGV = schema.GroupVersion{Group: "cluster.x-k8s.io", Version: "v1beta2"}
	fixtureGV = schema.GroupVersion{Group: fixtureGroup, Version: "v1alpha1"}
)

// TestManager runs the built Cluster API manager against a real API server
// (the management plane, with the hypershift.dev API): it installs Cluster
// API's CRDs, then
//   - its controllers turn a MachineDeployment of 2 replicas into a
//     MachineSet and 2 Machines whose bootstrap and infrastructure objects
//     are cloned from the MachineDeployment's templates, and delete one
//     Machine (and its objects) when it is scaled to 1;
//   - a Cluster whose control plane is a HostedControlPlane reads it
//     through Cluster API's control-plane contract;
//   - a Machine of that Cluster whose bootstrap config is a JoinConfig
//     takes its data Secret through the bootstrap contract.
//
// Nothing but the manager creates or updates these objects: the test fails
// if its controllers do not run.
func TestManager(t *testing.T) {
	m := clusterapi.Manager{Dir: filepath.Join(filepath.Dir(testenv.Binary(t)), clusterapi.DirName)}
	if err := m.Check(); err != nil {
		t.Fatal(err)
	}
	env := testenv.Start(t)
	c := env.Client
	ctx := t.Context()

	mgr := startManager(t, m, datadir.Layout{Root: env.DataDir}.ManagementKubeconfig())

	// The manager installs Cluster API's CRDs; the providers' kinds are
	// the fixtures'.
	for _, crd := range fixtureCRDs() {
		if err := c.Create(ctx, crd); err != nil {
			t.Fatal(err)
		}
	}
	mgr.eventually(t, 45*time.Second, "Cluster API's and the fixtures' CRDs Established", func() (bool, error) {
		for _, name := range []string{
			"clusters.cluster.x-k8s.io", "machines.cluster.x-k8s.io", "machinesets.cluster.x-k8s.io",
			"machinedeployments.cluster.x-k8s.io", "machinehealthchecks.cluster.x-k8s.io", "machinedrainrules.cluster.x-k8s.io",
			"fixtureinframachinetemplates." + fixtureGroup, "fixtureinframachines." + fixtureGroup,
			"fixturebootstrapconfigtemplates." + fixtureGroup, "fixturebootstrapconfigs." + fixtureGroup,
		} {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
				return false, err
			}
			if !established(crd) {
				return false, fmt.Errorf("%s not Established", name)
			}
		}
		return true, nil
	})

	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
		t.Fatal(err)
	}
	t.Run("a MachineDeployment becomes Machines and scales", func(t *testing.T) { machineDeploymentScales(t, c, mgr) })
	t.Run("a Cluster takes a HostedControlPlane as its control plane", func(t *testing.T) { hostedControlPlaneContract(t, c, mgr) })
	t.Run("a Machine takes its userdata from a JoinConfig", func(t *testing.T) { joinConfigContract(t, c, mgr) })
}

// machineDeploymentScales: a MachineDeployment of fixture templates becomes
// a MachineSet and 2 Machines with cloned objects; scaled to 1, one Machine
// goes with its objects.
func machineDeploymentScales(t *testing.T, c client.Client, mgr *manager) {
	ctx := t.Context()
	infraSpec := map[string]any{"size": "small"}
	bootstrapSpec := map[string]any{"userdata": "#!/bin/sh\necho join\n"}
	objects := []*unstructured.Unstructured{
		object(fixtureGV, "FixtureInfraMachineTemplate", deployment, map[string]any{
			"spec": map[string]any{"template": map[string]any{"spec": infraSpec}},
		}),
		object(fixtureGV, "FixtureBootstrapConfigTemplate", deployment, map[string]any{
			"spec": map[string]any{"template": map[string]any{"spec": bootstrapSpec}},
		}),
		// No infrastructure or control plane reference: the Cluster
		// controller counts its infrastructure as provisioned.
		object(clusterGV, "Cluster", clusterName, map[string]any{
			"spec": map[string]any{"clusterNetwork": map[string]any{
				"pods":     map[string]any{"cidrBlocks": []any{"10.244.0.0/16"}},
				"services": map[string]any{"cidrBlocks": []any{"10.96.0.0/12"}},
			}},
		}),
		machineDeployment(2),
	}
	for _, o := range objects {
		mgr.eventually(t, 10*time.Second, "create "+o.GetKind(), func() (bool, error) {
			// Retried while the client's REST mapper learns the new kinds.
			err := c.Create(ctx, o.DeepCopy())
			return err == nil, err
		})
	}

	mgr.eventually(t, 30*time.Second, "the Cluster controller to mark the Cluster's infrastructure provisioned", func() (bool, error) {
		cl := named(clusterGV, "Cluster", clusterName)
		if err := c.Get(ctx, client.ObjectKeyFromObject(cl), cl); err != nil {
			return false, err
		}
		ok, _, _ := unstructured.NestedBool(cl.Object, "status", "initialization", "infrastructureProvisioned")
		return ok, nil
	})

	mgr.eventually(t, 30*time.Second, "a MachineSet and 2 Machines with their cloned objects", func() (bool, error) {
		sets, err := listN(ctx, c, clusterGV, "MachineSet", 1)
		if err != nil {
			return false, err
		}
		if !controlledBy(&sets[0], "MachineDeployment", deployment) {
			return false, errors.New("the MachineSet is not controlled by the MachineDeployment")
		}
		machines, err := listN(ctx, c, clusterGV, "Machine", 2)
		if err != nil {
			return false, err
		}
		for i := range machines {
			if err := checkMachine(ctx, c, &machines[i], sets[0].GetName(), infraSpec, bootstrapSpec); err != nil {
				return false, err
			}
		}
		return true, nil
	})

	// Scale to 1: the MachineSet deletes a Machine, the Machine controller
	// its objects, then the Machine itself.
	md := named(clusterGV, "MachineDeployment", deployment)
	if err := c.Get(ctx, client.ObjectKeyFromObject(md), md); err != nil {
		t.Fatal(err)
	}
	scaled := md.DeepCopy()
	if err := unstructured.SetNestedField(scaled.Object, int64(1), "spec", "replicas"); err != nil {
		t.Fatal(err)
	}
	if err := c.Patch(ctx, scaled, client.MergeFrom(md)); err != nil {
		t.Fatal(err)
	}
	mgr.eventually(t, 30*time.Second, "one Machine deleted with its objects", func() (bool, error) {
		for _, kind := range []struct {
			gv   schema.GroupVersion
			kind string
		}{{clusterGV, "Machine"}, {fixtureGV, "FixtureInfraMachine"}, {fixtureGV, "FixtureBootstrapConfig"}} {
			if _, err := listN(ctx, c, kind.gv, kind.kind, 1); err != nil {
				return false, err
			}
		}
		return true, nil
	})
}

// manager is a running cluster-api-manager.
type manager struct {
	log  *testenv.SyncBuffer
	done chan struct{}
	err  error
}

func startManager(t *testing.T, m clusterapi.Manager, kubeconfig string) *manager {
	t.Helper()
	cmd := m.Command(kubeconfig, m.CRDDir(),
		"--health-addr", fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t)), "--v", "2")
	r := &manager{log: &testenv.SyncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = r.log, r.log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.err = cmd.Wait(); close(r.done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-r.done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-r.done
		}
		if t.Failed() || os.Getenv("HYPERSHIFT_TEST_LOG") != "" {
			t.Logf("cluster-api-manager's log:\n%s", r.log.String())
		}
	})
	return r
}

// eventually is testenv.Eventually that fails at once when the manager has
// exited.
func (r *manager) eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	testenv.Eventually(t, timeout, what, func() (bool, error) {
		select {
		case <-r.done:
			t.Fatalf("cluster-api-manager exited (%v) while waiting for %s", r.err, what)
		default:
		}
		return cond()
	})
}

// checkMachine: the Machine is the MachineSet's, and its bootstrap and
// infrastructure objects are clones of the templates that the Machine
// controller took ownership of.
func checkMachine(ctx context.Context, c client.Client, m *unstructured.Unstructured, set string, infraSpec, bootstrapSpec map[string]any) error {
	if !controlledBy(m, "MachineSet", set) {
		return fmt.Errorf("Machine %s is not controlled by MachineSet %s", m.GetName(), set)
	}
	for _, ref := range []struct {
		path []string
		kind string
		spec map[string]any
	}{
		{[]string{"spec", "infrastructureRef"}, "FixtureInfraMachine", infraSpec},
		{[]string{"spec", "bootstrap", "configRef"}, "FixtureBootstrapConfig", bootstrapSpec},
	} {
		kind, _, _ := unstructured.NestedString(m.Object, append(ref.path, "kind")...)
		name, _, _ := unstructured.NestedString(m.Object, append(ref.path, "name")...)
		if kind != ref.kind || name == "" {
			return fmt.Errorf("Machine %s: %s is %s %q", m.GetName(), strings.Join(ref.path, "."), kind, name)
		}
		o := named(fixtureGV, kind, name)
		if err := c.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
			return err
		}
		if o.GetAnnotations()[clonedFromName] != deployment {
			return fmt.Errorf("%s %s is not cloned from template %s: annotations %v", kind, name, deployment, o.GetAnnotations())
		}
		spec, _, _ := unstructured.NestedMap(o.Object, "spec")
		if fmt.Sprint(spec) != fmt.Sprint(ref.spec) {
			return fmt.Errorf("%s %s: spec %v, want the template's %v", kind, name, spec, ref.spec)
		}
		if !controlledBy(o, "Machine", m.GetName()) {
			return fmt.Errorf("%s %s is not controlled by Machine %s yet", kind, name, m.GetName())
		}
	}
	return nil
}

// machineDeployment is the MachineDeployment complete, as the project
// writes it: no webhook defaults it (the labels and the rollout strategy are
// what upstream's defaulting webhook would add).
func machineDeployment(replicas int64) *unstructured.Unstructured {
	labels := map[string]any{clusterNameLabel: clusterName, deploymentNameLabel: deployment}
	return object(clusterGV, "MachineDeployment", deployment, map[string]any{
		"metadata": map[string]any{"labels": map[string]any{clusterNameLabel: clusterName}},
		"spec": map[string]any{
			"clusterName": clusterName,
			"replicas":    replicas,
			"selector":    map[string]any{"matchLabels": labels},
			"rollout": map[string]any{"strategy": map[string]any{
				"type":          "RollingUpdate",
				"rollingUpdate": map[string]any{"maxSurge": int64(1), "maxUnavailable": int64(0)},
			}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": labels},
				"spec": map[string]any{
					"clusterName": clusterName,
					"bootstrap": map[string]any{"configRef": map[string]any{
						"apiGroup": fixtureGroup, "kind": "FixtureBootstrapConfigTemplate", "name": deployment,
					}},
					"infrastructureRef": map[string]any{
						"apiGroup": fixtureGroup, "kind": "FixtureInfraMachineTemplate", "name": deployment,
					},
				},
			},
		},
	})
}

// fixtureCRDs stand in for the providers that later work builds: an
// infrastructure provider's machine and machine template kinds and a
// bootstrap provider's config and config template kinds, in a test group.
// The label `cluster.x-k8s.io/v1beta2: v1alpha1` is Cluster API's contract:
// it finds a provider kind's version by its CRD's label. No controller
// reconciles them: what a provider would set in their status, none of
// which this test needs, stays unset.
func fixtureCRDs() []*apiextensionsv1.CustomResourceDefinition {
	open := &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: new(true)}
	schemaProps := &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"spec": *open, "status": *open,
	}}
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, kind := range []string{"FixtureInfraMachine", "FixtureInfraMachineTemplate", "FixtureBootstrapConfig", "FixtureBootstrapConfigTemplate"} {
		plural := strings.ToLower(kind) + "s"
		crds = append(crds, &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{
				Name:   plural + "." + fixtureGroup,
				Labels: map[string]string{"cluster.x-k8s.io/v1beta2": fixtureGV.Version},
			},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{
				Group: fixtureGroup,
				Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: kind, ListKind: kind + "List", Plural: plural, Singular: strings.ToLower(kind)},
				Scope: apiextensionsv1.NamespaceScoped,
				Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
					Name: fixtureGV.Version, Served: true, Storage: true,
					Schema:       &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: schemaProps},
					Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				}},
			},
		})
	}
	return crds
}

func object(gv schema.GroupVersion, kind, name string, content map[string]any) *unstructured.Unstructured {
	o := &unstructured.Unstructured{Object: content}
	o.SetGroupVersionKind(gv.WithKind(kind))
	o.SetNamespace(namespace)
	o.SetName(name)
	return o
}

// named is an object of the kind with only a name, for client.Get.
func named(gv schema.GroupVersion, kind, name string) *unstructured.Unstructured {
	return object(gv, kind, name, map[string]any{})
}

func list(ctx context.Context, c client.Client, gv schema.GroupVersion, kind string) ([]unstructured.Unstructured, error) {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(gv.WithKind(kind + "List"))
	if err := c.List(ctx, l, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	return l.Items, nil
}

// listN lists the kind's objects, an error unless there are want of them.
func listN(ctx context.Context, c client.Client, gv schema.GroupVersion, kind string, want int) ([]unstructured.Unstructured, error) {
	items, err := list(ctx, c, gv, kind)
	if err != nil {
		return nil, err
	}
	if len(items) != want {
		return nil, fmt.Errorf("%d %ss, want %d", len(items), kind, want)
	}
	return items, nil
}

func controlledBy(o *unstructured.Unstructured, kind, name string) bool {
	ref := metav1.GetControllerOf(o)
	return ref != nil && ref.Kind == kind && ref.Name == name
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}
