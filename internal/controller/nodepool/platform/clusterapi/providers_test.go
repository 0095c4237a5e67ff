package clusterapi_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/controller/nodepool/platform/aws"
	"hypershift.dev/internal/controller/nodepool/platform/azure"
	"hypershift.dev/internal/controller/nodepool/platform/clusterapi"
	"hypershift.dev/internal/controller/nodepool/platform/kubevirt"
	"hypershift.dev/internal/golden"
	"hypershift.dev/internal/kubeconfig"
	"hypershift.dev/internal/testenv"
	"hypershift.dev/internal/version"
)

const (
	subscription = "00000000-0000-0000-0000-0000000000aa"
	vnetID       = "/subscriptions/" + subscription + "/resourceGroups/net/providers/Microsoft.Network/virtualNetworks/nodes"
)

// provider is one platform of a Cluster API infrastructure provider, as
// the contract test drives it.
type provider struct {
	name  string
	crds  string   // testenv provider
	files []string // its CRDs' plurals
	// cluster and pool fill the HostedCluster's and NodePool's platform
	// blocks; secrets are what the user made in the cluster's namespace.
	cluster func(hc *hypershiftv1alpha1.HostedCluster)
	pool    func(np *hypershiftv1alpha1.NodePool)
	secrets func(t *testing.T) map[string]map[string][]byte
	// change edits the pool's machines (a new template rolls out).
	change func(np *hypershiftv1alpha1.NodePool)
	// badSecret makes the user's credentials wrong; wantProblem is what
	// the pool then reports.
	badSecret   func(s map[string]map[string][]byte)
	wantProblem string
	// reported is an infrastructure machine's status as the provider
	// reports it, and nodeName the Node name the platform derives from it.
	reported func(u *unstructured.Unstructured)
	nodeName string
	platform func(c client.Client) *clusterapi.Platform
}

func infraKubeconfig(t *testing.T) []byte {
	t.Helper()
	kc, err := kubeconfig.Render(kubeconfig.Params{Name: "infra", Server: "https://10.1.0.1:6443", CAPEM: []byte("infra CA"), Token: "infra-token"})
	must(t, err)
	return kc
}

var providers = []provider{
	{
		name: "kubevirt", crds: testenv.ProviderKubeVirt,
		files: []string{"kubevirtclusters", "kubevirtmachines", "kubevirtmachinetemplates"},
		cluster: func(hc *hypershiftv1alpha1.HostedCluster) {
			hc.Spec.Platform.KubeVirt = &hypershiftv1alpha1.KubeVirtPlatformSpec{Credentials: &hypershiftv1alpha1.KubeVirtPlatformCredentials{
				InfraKubeConfigSecret: hypershiftv1alpha1.KubeconfigSecretRef{Name: "infra", Key: "kubeconfig"}, InfraNamespace: "guests",
			}}
		},
		pool: func(np *hypershiftv1alpha1.NodePool) {
			np.Spec.Platform.KubeVirt = &hypershiftv1alpha1.KubeVirtNodePoolPlatform{
				RootVolume: hypershiftv1alpha1.KubeVirtRootVolume{
					DiskImage:  hypershiftv1alpha1.KubeVirtDiskImage{ContainerDiskImage: "registry.example.com/nodes/debian:13"},
					Persistent: &hypershiftv1alpha1.KubeVirtPersistentVolume{StorageClass: "fast"},
				},
				AdditionalNetworks: []hypershiftv1alpha1.KubeVirtNetwork{{Name: "guests/vlan10"}},
			}
		},
		secrets: func(t *testing.T) map[string]map[string][]byte {
			return map[string]map[string][]byte{"infra": {"kubeconfig": infraKubeconfig(t)}}
		},
		change: func(np *hypershiftv1alpha1.NodePool) { np.Spec.Platform.KubeVirt.Compute.Cores = 4 },
		badSecret: func(s map[string]map[string][]byte) {
			s["infra"]["kubeconfig"] = []byte(strings.Replace(string(s["infra"]["kubeconfig"]), "    token: infra-token", "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: /bin/sh", 1))
		},
		wantProblem: "spec.platform.kubevirt.credentials.infraKubeConfigSecret: kubeconfig: users[].user.exec",
		reported: func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "kubevirt://"+u.GetName(), "spec", "providerID")
		},
		nodeName: "MACHINE",
		platform: func(c client.Client) *clusterapi.Platform { return kubevirt.New(c, started) },
	},
	{
		name: "aws", crds: testenv.ProviderAWS,
		files: []string{"awsclusters", "awsmachines", "awsmachinetemplates", "awsclusterstaticidentities"},
		cluster: func(hc *hypershiftv1alpha1.HostedCluster) {
			hc.Spec.Platform.AWS = &hypershiftv1alpha1.AWSPlatformSpec{
				Region: "eu-west-1", VPC: "vpc-0123456789abcdef0",
				CredentialsSecret: hypershiftv1alpha1.SecretReference{Name: "aws-keys"},
				ResourceTags:      []hypershiftv1alpha1.AWSResourceTag{{Key: "team", Value: "platform"}},
			}
		},
		pool: func(np *hypershiftv1alpha1.NodePool) {
			np.Spec.Platform.AWS = &hypershiftv1alpha1.AWSNodePoolPlatform{
				InstanceType: "m6i.large", AMI: "ami-0123456789abcdef0",
				Subnet:          hypershiftv1alpha1.AWSResourceReference{ID: "subnet-0123456789abcdef0"},
				SecurityGroups:  []hypershiftv1alpha1.AWSResourceReference{{ID: "sg-0123456789abcdef0"}},
				InstanceProfile: "nodes", RootVolume: hypershiftv1alpha1.AWSVolume{Size: 64, Type: "io2", IOPS: 3000},
			}
		},
		secrets: func(*testing.T) map[string]map[string][]byte {
			return map[string]map[string][]byte{"aws-keys": {aws.AccessKeyIDKey: []byte("AKIAEXAMPLE"), aws.SecretAccessKeyKey: []byte("c2VjcmV0")}}
		},
		change:      func(np *hypershiftv1alpha1.NodePool) { np.Spec.Platform.AWS.InstanceType = "m6i.xlarge" },
		badSecret:   func(s map[string]map[string][]byte) { delete(s["aws-keys"], aws.SecretAccessKeyKey) },
		wantProblem: "named by spec.platform.aws.credentialsSecret, has no key SecretAccessKey",
		reported: func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "aws:///eu-west-1a/i-0123456789abcdef0", "spec", "providerID")
			_ = unstructured.SetNestedSlice(u.Object, []any{
				map[string]any{"type": "InternalIP", "address": "10.0.1.7"},
				map[string]any{"type": "InternalDNS", "address": "ip-10-0-1-7.eu-west-1.compute.internal"},
			}, "status", "addresses")
		},
		nodeName: "ip-10-0-1-7.eu-west-1.compute.internal",
		platform: func(c client.Client) *clusterapi.Platform { return aws.New(c, started, "") },
	},
	{
		name: "azure", crds: testenv.ProviderAzure,
		files: []string{"azureclusters", "azuremachines", "azuremachinetemplates", "azureclusteridentities"},
		cluster: func(hc *hypershiftv1alpha1.HostedCluster) {
			hc.Spec.Platform.Azure = &hypershiftv1alpha1.AzurePlatformSpec{
				Location: "westeurope", SubscriptionID: subscription, ResourceGroup: "nodes", VnetID: vnetID,
				CredentialsSecret: hypershiftv1alpha1.SecretReference{Name: "sp"},
			}
		},
		pool: func(np *hypershiftv1alpha1.NodePool) {
			np.Spec.Platform.Azure = &hypershiftv1alpha1.AzureNodePoolPlatform{
				VMSize: "Standard_D4s_v5", SubnetID: vnetID + "/subnets/workers", AvailabilityZone: "2",
				Image: hypershiftv1alpha1.AzureVMImage{Type: "AzureMarketplace", AzureMarketplace: &hypershiftv1alpha1.AzureMarketplaceImage{
					Publisher: "example", Offer: "nodes", SKU: "debian-13", Version: "1.0.0",
				}},
			}
		},
		secrets: func(*testing.T) map[string]map[string][]byte {
			return map[string]map[string][]byte{"sp": {
				azure.ClientIDKey: []byte("11111111-1111-1111-1111-111111111111"), azure.TenantIDKey: []byte("22222222-2222-2222-2222-222222222222"),
				azure.ClientSecretKey: []byte("s3cret"),
			}}
		},
		change:      func(np *hypershiftv1alpha1.NodePool) { np.Spec.Platform.Azure.VMSize = "Standard_D8s_v5" },
		badSecret:   func(s map[string]map[string][]byte) { s["sp"][azure.TenantIDKey] = []byte("contoso") },
		wantProblem: "named by spec.platform.azure.credentialsSecret: AZURE_TENANT_ID is not a tenant ID",
		reported: func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "azure:///subscriptions/"+subscription+"/resourceGroups/nodes/providers/Microsoft.Compute/virtualMachines/"+u.GetName(), "spec", "providerID")
		},
		nodeName: "MACHINE",
		platform: func(c client.Client) *clusterapi.Platform { return azure.New(c, started) },
	},
}

// TestProviderContract renders each provider platform's objects for a
// pool and checks them against the provider's own CRDs in a real API
// server: every object is accepted with strict field validation and
// stored as rendered (nothing pruned); the infrastructure cluster is
// marked as managed by hypershift and ready; the credentials reach the
// provider as it reads them, and wrong ones are reported naming the
// field; a change of the pool's machines is a new template; a machine's
// provider ID and addresses, as the provider reports them, name its
// Node, and a failure it reports reaches the pool; the cluster's objects
// outside its control-plane namespace go with it. The rendered objects
// are golden files (testdata/PROVIDER.yaml).
func TestProviderContract(t *testing.T) {
	f := setUp(t)
	testenv.InstallClusterAPICRDs(t, f.c, "machinesets")
	must(t, f.c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: aws.DefaultProviderNamespace}}))
	dirs := map[string]string{}
	for _, p := range providers {
		dir := testenv.ProviderCRDDir(t, p.crds)
		if dir == "" {
			continue
		}
		dirs[p.name] = dir
		var files []string
		for _, plural := range p.files {
			files = append(files, filepath.Join(dir, "infrastructure.cluster.x-k8s.io_"+plural+".yaml"))
		}
		testenv.InstallCRDFiles(t, f.c, files...)
	}
	for _, p := range providers {
		t.Run(p.name, func(t *testing.T) {
			if dirs[p.name] == "" {
				t.Skipf("no CRDs of %s in this checkout (bin/provider-crds from `make build`, or ../shared/crds beside the repository): its contract is not checked here", p.crds)
			}
			t.Parallel()
			contract(t, f, p)
		})
	}
}

func contract(t *testing.T, f *fixture, p provider) {
	ctx := t.Context()
	typ := map[string]hypershiftv1alpha1.PlatformType{"kubevirt": hypershiftv1alpha1.KubeVirtPlatform, "aws": hypershiftv1alpha1.AWSPlatform, "azure": hypershiftv1alpha1.AzurePlatform}[p.name]
	cl := f.clusterOf(t, "contract-"+p.name, "dev", func(hc *hypershiftv1alpha1.HostedCluster) {
		hc.Spec.Platform.Type = typ
		p.cluster(hc)
	})
	cl.hc.Status.ControlPlaneEndpoint = hypershiftv1alpha1.APIEndpoint{Host: "api.dev.example.com", Port: 443}
	secrets := p.secrets(t)
	writeSecrets := func() {
		for name, data := range secrets {
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: cl.hc.Namespace, Name: name}}
			if err := f.c.Get(ctx, client.ObjectKeyFromObject(s), s); err == nil {
				s.Data = data
				must(t, f.c.Update(ctx, s))
				continue
			}
			s.Data = data
			must(t, f.c.Create(ctx, s))
		}
	}
	writeSecrets()
	np := f.nodePool(t, cl, "workers", func(np *hypershiftv1alpha1.NodePool) {
		np.Spec.Platform.Type = typ
		p.pool(np)
	})
	m := p.platform(f.c)
	pp := poolOf(cl, np, version.KubernetesVersion)
	if err := m.Validate(pp.Pool); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if r := reconcile(t, m, pp, 2); r.Problem != "" {
		t.Fatalf("report: problem %q", r.Problem)
	}

	infra := m.Infra
	templateGVK := schema.GroupVersionKind{Group: infra.Group, Version: infra.Version, Kind: infra.MachineTemplateKind}
	clusterGVKOf := schema.GroupVersionKind{Group: infra.Group, Version: infra.Version, Kind: infra.ClusterKind}
	spec := infra.MachineSpec(pp.Pool)
	tmplName := clusterapi.TemplateName(np.Name, spec)

	// Stored as rendered: nothing pruned by the provider's schema.
	tmpl := f.get(t, templateGVK, cl.ns, tmplName)
	wantOwner(t, tmpl, np.UID)
	if path := missing(normalize(t, field(tmpl, "spec", "template", "spec")), normalize(t, spec), "spec.template.spec"); path != "" {
		t.Errorf("%s %s: %s was rendered but not stored as rendered: the provider's schema dropped or changed it", templateGVK.Kind, tmplName, path)
	}
	md := f.get(t, machineDeploymentGVK, cl.ns, np.Name)
	wantField(t, md, map[string]any{"apiGroup": infra.Group, "kind": infra.MachineTemplateKind, "name": tmplName}, "spec", "template", "spec", "infrastructureRef")

	// Strictly valid: a dry-run create with strict field validation is
	// accepted; the same with one field the provider does not know is not
	// (the check can fail).
	strict := func(obj *unstructured.Unstructured) error {
		obj = obj.DeepCopy()
		obj.SetName(obj.GetName() + "-strict")
		obj.SetResourceVersion("")
		obj.SetUID("")
		return f.c.Create(ctx, obj, client.DryRunAll, client.FieldValidation("Strict"))
	}
	rendered := clusterapi.Object(templateGVK, cl.ns, tmplName, cl.hc.Name, map[string]any{"spec": map[string]any{"template": map[string]any{"spec": spec}}})
	if err := strict(rendered); err != nil {
		t.Errorf("strict create of the rendered %s: %v", templateGVK.Kind, err)
	}
	planted := rendered.DeepCopy()
	must(t, unstructured.SetNestedField(planted.Object, "x", "spec", "template", "spec", "notAField"))
	if err := strict(planted); err == nil || !strings.Contains(err.Error(), "notAField") {
		t.Errorf("strict create with an unknown field: %v, want it refused naming notAField", err)
	}

	// The infrastructure cluster: managed by hypershift, ready, its
	// endpoint the cluster's; strictly valid as rendered.
	ic := f.get(t, clusterGVKOf, cl.ns, cl.hc.Name)
	wantOwner(t, ic, cl.hc.UID)
	if ic.GetAnnotations()[clusterapi.ManagedByAnnotation] == "" {
		t.Errorf("%s: no %s annotation", infra.ClusterKind, clusterapi.ManagedByAnnotation)
	}
	wantField(t, ic, true, "status", "ready")
	wantField(t, ic, map[string]any{"host": "api.dev.example.com", "port": int64(443)}, "spec", "controlPlaneEndpoint")
	if err := strict(ic); err != nil {
		t.Errorf("strict create of the stored %s: %v", infra.ClusterKind, err)
	}

	// The credentials, as the provider reads them.
	objs, err := infra.ClusterObjects(ctx, f.c, pp.Pool)
	must(t, err)
	var goldenObjs []any
	for _, o := range objs {
		stored := f.get(t, o.GroupVersionKind(), o.GetNamespace(), o.GetName())
		wantOwner(t, stored, cl.hc.UID)
		if o.GetKind() != "Secret" {
			if err := strict(stored); err != nil {
				t.Errorf("strict create of the stored %s: %v", o.GetKind(), err)
			}
			goldenObjs = append(goldenObjs, map[string]any{"kind": o.GetKind(), "namespace": o.GetNamespace(), "name": o.GetName(), "spec": field(stored, "spec")})
			continue
		}
		keys := []string{}
		for k := range field(stored, "data").(map[string]any) {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		goldenObjs = append(goldenObjs, map[string]any{"kind": "Secret", "namespace": o.GetNamespace(), "name": o.GetName(), "keys": keys})
	}
	checkCredentials(t, f, p, cl)

	goldenObjs = append([]any{
		map[string]any{"kind": infra.ClusterKind, "spec": field(ic, "spec")},
		map[string]any{"kind": infra.MachineTemplateKind, "name": tmplName, "spec": field(tmpl, "spec")},
	}, goldenObjs...)
	out, err := yaml.Marshal(goldenObjs)
	must(t, err)
	// What differs from run to run: the cluster's UID, and the template's
	// hash, which covers it on KubeVirt.
	out = []byte(strings.NewReplacer(string(cl.hc.UID), "HOSTEDCLUSTER-UID", tmplName, np.Name+"-HASH").Replace(string(out)))
	golden.Check(t, filepath.Join("testdata", p.name+".yaml"), out)

	// An infrastructure machine as the provider reports it names its
	// Node; Cluster API's failure of its Machine reaches the pool.
	im := clusterapi.Object(schema.GroupVersionKind{Group: infra.Group, Version: infra.Version, Kind: infra.MachineKind}, cl.ns, "workers-abc12-xyz34", cl.hc.Name, map[string]any{"spec": spec})
	im.SetLabels(map[string]string{clusterapi.ClusterNameLabel: cl.hc.Name, clusterapi.DeploymentNameLabel: np.Name})
	p.reported(im)
	status, _, _ := unstructured.NestedMap(im.Object, "status")
	must(t, f.c.Create(ctx, im, client.FieldValidation("Strict")))
	if status != nil {
		im.Object["status"] = status
		must(t, f.c.Status().Update(ctx, im))
	}
	names, err := m.Machines(pp.Pool)
	must(t, err)
	wantName := strings.ReplaceAll(p.nodeName, "MACHINE", im.GetName())
	if !reflect.DeepEqual(names, []string{wantName}) {
		t.Errorf("Machines() = %v, want [%s]: the Node name of the machine the provider reports", names, wantName)
	}
	// Cluster API copies the provider's ID and addresses to the Machine.
	providerID, _, _ := unstructured.NestedString(im.Object, "spec", "providerID")
	addresses, _, _ := unstructured.NestedSlice(im.Object, "status", "addresses")
	failed := f.machine(t, cl, np.Name, "workers-abc12-xyz34", version.KubernetesVersion, "", func(u *unstructured.Unstructured) {
		must(t, unstructured.SetNestedField(u.Object, providerID, "spec", "providerID"))
	})
	failed = f.get(t, machineGVK, cl.ns, failed.GetName())
	must(t, unstructured.SetNestedMap(failed.Object, map[string]any{"v1beta1": map[string]any{
		"failureReason": "CreateError", "failureMessage": "InsufficientInstanceCapacity: no capacity in the zone",
	}}, "status", "deprecated"))
	if addresses != nil {
		must(t, unstructured.SetNestedSlice(failed.Object, addresses, "status", "addresses"))
	}
	must(t, f.c.Status().Update(ctx, failed))
	r := reconcile(t, m, pp, 2)
	if !strings.Contains(r.Problem, "Machine workers-abc12-xyz34: failed: CreateError: InsufficientInstanceCapacity") {
		t.Errorf("report problem %q, want the provider's failure of the machine", r.Problem)
	}
	if got := r.MachineStatus.Machines; len(got) != 1 || got[0].Name != failed.GetName() || got[0].ProviderID != providerID ||
		len(got[0].Addresses) != len(addresses) || !strings.Contains(got[0].Failure, "InsufficientInstanceCapacity") || got[0].Ready {
		t.Errorf("machines reported %+v, want %s with provider ID %s, its %d addresses and its failure", got, failed.GetName(), providerID, len(addresses))
	}
	must(t, f.c.Delete(ctx, failed))

	// A change of the pool's machines is a new template, which the
	// MachineDeployment names; the old one, which no MachineSet names, goes.
	f.update(t, np, p.change)
	pp = poolOf(cl, np, version.KubernetesVersion)
	reconcile(t, m, pp, 2)
	next := clusterapi.TemplateName(np.Name, infra.MachineSpec(pp.Pool))
	if next == tmplName {
		t.Fatalf("changed machines, same template name %s", next)
	}
	f.get(t, templateGVK, cl.ns, next)
	wantField(t, f.get(t, machineDeploymentGVK, cl.ns, np.Name), next, "spec", "template", "spec", "infrastructureRef", "name")
	// The template the MachineDeployment named until now is kept one
	// pass (Cluster API may not have made its MachineSet yet), then as
	// long as a MachineSet names it.
	f.get(t, templateGVK, cl.ns, tmplName)
	ms := clusterapi.Object(gvk("MachineSet"), cl.ns, np.Name+"-old", cl.hc.Name, map[string]any{"spec": map[string]any{
		"clusterName": cl.hc.Name,
		"selector":    map[string]any{"matchLabels": map[string]any{clusterapi.DeploymentNameLabel: np.Name}},
		"template": map[string]any{
			"metadata": map[string]any{"labels": map[string]any{clusterapi.DeploymentNameLabel: np.Name}},
			"spec": map[string]any{
				"clusterName":       cl.hc.Name,
				"bootstrap":         map[string]any{"dataSecretName": "x"},
				"infrastructureRef": map[string]any{"apiGroup": infra.Group, "kind": infra.MachineTemplateKind, "name": tmplName},
			},
		},
	}})
	ms.SetLabels(map[string]string{clusterapi.ClusterNameLabel: cl.hc.Name, clusterapi.DeploymentNameLabel: np.Name})
	must(t, f.c.Create(ctx, ms))
	reconcile(t, m, pp, 2)
	f.get(t, templateGVK, cl.ns, tmplName)
	must(t, f.c.Delete(ctx, ms))
	testenv.Eventually(t, 10*time.Second, "the old template removed once no MachineSet names it", func() (bool, error) {
		reconcile(t, m, pp, 2)
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(templateGVK)
		err := f.c.Get(ctx, client.ObjectKey{Namespace: cl.ns, Name: tmplName}, u)
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})

	// Wrong credentials are the pool's problem, naming the field.
	p.badSecret(secrets)
	writeSecrets()
	testenv.Eventually(t, 10*time.Second, "the pool reports the credentials", func() (bool, error) {
		r, err := m.Reconcile(ctx, pp.Pool, 2)
		return err == nil && strings.Contains(r.Problem, p.wantProblem), err
	})

	// The cluster's last pool goes: its objects outside the control-plane
	// namespace go with it once its machines are gone — not while another
	// pool of the cluster may still need them.
	must(t, f.c.Delete(ctx, im))
	spare := f.nodePool(t, cl, "spare", func(np *hypershiftv1alpha1.NodePool) {
		np.Spec.Platform.Type = typ
		p.pool(np)
	})
	testenv.Eventually(t, 10*time.Second, "the pool deleted", func() (bool, error) {
		return m.Delete(ctx, pp.Pool) == nil, nil
	})
	if infra.Outside != nil {
		for _, o := range infra.Outside(pp.Pool) {
			f.get(t, o.GVK, o.Namespace, o.Name)
		}
		must(t, f.c.Delete(ctx, spare))
		must(t, m.Delete(ctx, pp.Pool))
		for _, o := range infra.Outside(pp.Pool) {
			f.absent(t, o.GVK, o.Namespace, o.Name)
		}
	}
}

// checkCredentials checks what the provider reads of the user's
// credentials.
func checkCredentials(t *testing.T, f *fixture, p provider, cl *cluster) {
	t.Helper()
	secret := func(ns, name string) map[string][]byte {
		s := &corev1.Secret{}
		must(t, f.c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, s))
		return s.Data
	}
	switch p.name {
	case "kubevirt":
		data := secret(cl.ns, kubevirt.InfraKubeconfigSecret(cl.hc.Name))
		cfg, err := kubeconfig.Parse(data["kubeconfig"])
		if err != nil || cfg.Host != "https://10.1.0.1:6443" || cfg.BearerToken != "infra-token" || string(data["namespace"]) != "guests" {
			t.Errorf("infra kubeconfig Secret: %+v (%v), namespace %q", cfg, err, data["namespace"])
		}
		ic := f.get(t, schema.GroupVersionKind{Group: kubevirt.Group, Version: kubevirt.Version, Kind: "KubevirtCluster"}, cl.ns, cl.hc.Name)
		wantField(t, ic, map[string]any{"apiVersion": "v1", "kind": "Secret", "namespace": cl.ns, "name": kubevirt.InfraKubeconfigSecret(cl.hc.Name)}, "spec", "infraClusterSecretRef")
	case "aws":
		name := aws.IdentityName(cl.ns)
		data := secret(aws.DefaultProviderNamespace, name)
		if string(data[aws.AccessKeyIDKey]) != "AKIAEXAMPLE" || string(data[aws.SecretAccessKeyKey]) != "c2VjcmV0" || len(data) != 2 {
			t.Errorf("CAPA identity Secret: %v", data)
		}
		id := f.get(t, schema.GroupVersionKind{Group: aws.Group, Version: aws.Version, Kind: "AWSClusterStaticIdentity"}, "", name)
		wantField(t, id, []any{cl.ns}, "spec", "allowedNamespaces", "list")
	case "azure":
		data := secret(cl.ns, azure.CredentialsSecret(cl.hc.Name))
		if string(data["clientSecret"]) != "s3cret" || len(data) != 1 {
			t.Errorf("CAPZ client secret: %v", data)
		}
	}
}

// normalize is v as JSON reads it back (numbers float64), for comparing
// what was rendered with what was stored.
func normalize(t *testing.T, v any) any {
	t.Helper()
	data, err := json.Marshal(v)
	must(t, err)
	var out any
	must(t, json.Unmarshal(data, &out))
	return out
}

// missing is the path of the first field of want that got does not have
// with want's value (got may have more: the schema's defaults); "" when
// none is.
func missing(got, want any, path string) string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return path
		}
		for k, v := range w {
			if p := missing(g[k], v, path+"."+k); p != "" {
				return p
			}
		}
		return ""
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return path
		}
		for i := range w {
			if p := missing(g[i], w[i], fmt.Sprintf("%s[%d]", path, i)); p != "" {
				return p
			}
		}
		return ""
	default:
		if !reflect.DeepEqual(got, want) {
			return path
		}
		return ""
	}
}

func gvk(kind string) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: clusterapi.Group, Version: clusterapi.Version, Kind: kind}
}
