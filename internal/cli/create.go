package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/clusterclient"
	"hypershift.dev/internal/nodes/join"
	"hypershift.dev/internal/release"
	"hypershift.dev/internal/version"
)

const defaultNamespace = "clusters"

func newCreateCommand(g *clusterclient.Management) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Create hosted clusters and their credentials",
	}
	cmd.AddCommand(newCreateClusterCommand(g), newCreateKubeconfigCommand(g), newCreateJoinCommandCommand(g))
	return cmd
}

type createClusterOptions struct {
	*clusterclient.Management
	name, namespace    string
	kubernetesVersion  string
	serviceCIDR        string
	clusterCIDR        string
	availabilityPolicy string
	wait, render       bool
	timeout            time.Duration
	nodePoolReplicas   int32
	singleProcess      bool
	// How the API server (and the Konnectivity server with it) is
	// published, and etcd's volumes (kube runtime).
	publishing           string
	apiServerAddress     string
	apiServerNodePort    int32
	etcdStorageClass     string
	storageClassMappings []string
	etcdStorageSize      string
	idleAfter            time.Duration
	// The service-account issuer.
	oidcIssuerURL, oidcStorage, oidcCredentialsSecret string
	oidcKeepOnDelete                                  bool
	signingKeySecret                                  string
	workloadIdentityWebhook                           bool
	azureTenantID, awsRegion                          string
	// KubeVirt, AWS and Azure: the cluster's infrastructure and its
	// pool's machines (platforms.go).
	infra   PlatformInfra
	machine PlatformMachine
}

var platforms = map[string]hypershiftv1alpha1.PlatformType{
	"none":      hypershiftv1alpha1.NonePlatform,
	"simulated": hypershiftv1alpha1.SimulatedPlatform,
	"host":      hypershiftv1alpha1.HostPlatform,
	"kubevirt":  hypershiftv1alpha1.KubeVirtPlatform,
	"aws":       hypershiftv1alpha1.AWSPlatform,
	"azure":     hypershiftv1alpha1.AzurePlatform,
}

// platformNames lists the keys of platforms, for help and errors.
const platformNames = "none, simulated, host, kubevirt, aws or azure"

func newCreateClusterCommand(g *clusterclient.Management) *cobra.Command {
	o := &createClusterOptions{Management: g}
	cmd := &cobra.Command{
		Use:   "cluster PLATFORM --name NAME",
		Short: "Create a hosted cluster (PLATFORM: " + platformNames + ")",
		Example: "  hypershift create cluster none --name demo --wait\n" +
			"  hypershift create cluster host --name demo --node-pool-replicas 2 --wait\n" +
			"  hypershift create cluster none --name demo --render > demo.yaml\n" +
			"  hypershift create cluster kubevirt --name demo --node-pool-replicas 2 --containerdisk registry.example.com/nodes/debian:13 --cores 4 --memory 16Gi\n" +
			"  hypershift create cluster aws --name demo --aws-region us-east-1 --aws-vpc vpc-0123456789abcdef0 --aws-credentials-secret aws-creds \\\n" +
			"    --node-pool-replicas 3 --instance-type m6i.large --ami ami-0123456789abcdef0 --subnet-id subnet-0123456789abcdef0\n" +
			"  VNET=/subscriptions/$SUB/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet\n" +
			"  hypershift create cluster azure --name demo --azure-location eastus --azure-subscription-id $SUB --azure-resource-group rg \\\n" +
			"    --azure-vnet-id $VNET --azure-credentials-secret azure-creds \\\n" +
			"    --node-pool-replicas 3 --vm-size Standard_D4s_v5 --marketplace PUBLISHER:OFFER:SKU:VERSION --subnet-id $VNET/subnets/nodes",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return fmt.Errorf("name a platform: `hypershift create cluster none --name NAME` (platforms: %s)", platformNames)
			}
			if _, ok := platforms[args[0]]; !ok {
				return fmt.Errorf("unknown platform %q: use %s", args[0], platformNames)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd, platforms[args[0]])
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.name, "name", "", "name of the hosted cluster (required)")
	f.StringVarP(&o.namespace, "namespace", "n", defaultNamespace, "namespace of the HostedCluster")
	f.StringVar(&o.kubernetesVersion, "kubernetes-version", version.KubernetesVersion, "Kubernetes version of the control plane (this install's releases: "+strings.Join(release.Installed(release.DefaultDir()), ", ")+"; the operator's decide)")
	f.StringVar(&o.serviceCIDR, "service-cidr", hypershiftv1alpha1.DefaultServiceCIDR, "service network range")
	f.StringVar(&o.clusterCIDR, "cluster-cidr", hypershiftv1alpha1.DefaultClusterCIDR, "pod network range")
	f.StringVar(&o.availabilityPolicy, "availability-policy", string(hypershiftv1alpha1.SingleReplica), "SingleReplica or HighlyAvailable")
	f.BoolVar(&o.wait, "wait", false, "wait until the cluster is Available, printing each step")
	f.DurationVar(&o.timeout, "timeout", 10*time.Minute, "with --wait: how long to wait")
	f.BoolVar(&o.render, "render", false, "print the objects that would be created as YAML, and create nothing")
	f.BoolVar(&o.singleProcess, "single-process-control-plane", false, "run kube-apiserver, kube-controller-manager and kube-scheduler as one process (SingleReplica only): less memory, less isolation")
	f.StringVar(&o.publishing, "api-server-publishing", string(hypershiftv1alpha1.HostPort), "how the API server and the Konnectivity server are published: HostPort (a management plane of `hypershift up`), NodePort or LoadBalancer (a management cluster of `hypershift install`)")
	f.StringVar(&o.apiServerAddress, "api-server-address", "", "with NodePort: the address of the management cluster's nodes clients use; with LoadBalancer: the DNS name clients use")
	f.Int32Var(&o.apiServerNodePort, "api-server-node-port", 0, "with NodePort: the node port of the API server (default: the management cluster chooses)")
	f.StringVar(&o.etcdStorageClass, "etcd-storage-class", "", "StorageClass of etcd's volumes (kube runtime; default: the operator's)")
	f.StringArrayVar(&o.storageClassMappings, "storage-class-mapping", nil, "host, kube runtime: GUEST=INFRA, the hosted cluster's StorageClass GUEST whose volumes are claims of the management cluster's StorageClass INFRA, attached to the machine pods that use them (repeatable; docs/volumes.md)")
	f.DurationVar(&o.idleAfter, "idle-hibernate-after", 0, "hibernate the control plane after this long without a client request (at least 10s; the next request wakes it; process runtime only); 0: never")
	f.StringVar(&o.etcdStorageSize, "etcd-storage-size", "", "size of each etcd member's volume, e.g. 8Gi (kube runtime; default: the operator's)")
	f.StringVar(&o.oidcIssuerURL, "oidc-issuer-url", "", "issuer of the cluster's service-account tokens, an https URL where relying parties (cloud identity federation) fetch its discovery document (default: https://kubernetes.default.svc, discovered in-cluster)")
	f.StringVar(&o.oidcStorage, "oidc-storage", "", "bucket URL and prefix the operator publishes the issuer's discovery document and key set to, served at --oidc-issuer-url: s3://BUCKET/PREFIX?region=…, gs://…, azblob://… or file:///DIRECTORY (inside the operator's --backup-file-root)")
	f.StringVar(&o.oidcCredentialsSecret, "oidc-credentials-secret", "", "Secret in the cluster's namespace with the --oidc-storage bucket's credentials, as backups take them (default: anonymous)")
	f.BoolVar(&o.oidcKeepOnDelete, "oidc-keep-on-delete", false, "keep the published documents when the cluster is deleted (for a cluster recreated with the same issuer and key)")
	f.StringVar(&o.signingKeySecret, "service-account-signing-key-secret", "", "Secret in the cluster's namespace whose \"key\" holds the PEM private key to sign service-account tokens with (RSA ≥ 2048 bits, ECDSA P-256 or P-384; default: the operator makes one)")
	f.BoolVar(&o.workloadIdentityWebhook, "workload-identity-webhook", false, "run the webhook that gives pods of ServiceAccounts annotated the Azure Workload Identity or the AWS pod identity way their projected token and environment (process runtime)")
	f.StringVar(&o.azureTenantID, "azure-tenant-id", "", "with --workload-identity-webhook: AZURE_TENANT_ID of Azure pods whose ServiceAccount names none")
	f.StringVar(&o.awsRegion, "aws-region", "", "aws: region of the cluster's VPC, such as us-east-1 (required); with --workload-identity-webhook: AWS_REGION and AWS_DEFAULT_REGION of AWS pods")
	f.Int32Var(&o.nodePoolReplicas, "node-pool-replicas", 0, "also create a NodePool named like the cluster, of this many nodes (simulated: simulated nodes; host: machines of the management plane's host, made by Cluster API; kubevirt, aws, azure: machines of the platform's Cluster API provider, described by the machine flags; none: hosts that join — a none cluster always gets a pool)")
	addPlatformInfraFlags(cmd, &o.infra)
	addPlatformMachineFlags(cmd, &o.machine)
	return cmd
}

// cluster is what the flags describe.
func (o *createClusterOptions) cluster(cmd *cobra.Command, platform hypershiftv1alpha1.PlatformType) *ClusterSpec {
	c := &ClusterSpec{
		Namespace: o.namespace, Name: o.name, Platform: platform,
		KubernetesVersion: o.kubernetesVersion, ServiceCIDR: o.serviceCIDR, ClusterCIDR: o.clusterCIDR,
		AvailabilityPolicy: o.availabilityPolicy, SingleProcess: o.singleProcess, IdleAfter: o.idleAfter,
		Publishing: o.publishing, APIServerAddress: o.apiServerAddress, APIServerNodePort: o.apiServerNodePort,
		EtcdStorageClass: o.etcdStorageClass, EtcdStorageSize: o.etcdStorageSize, StorageClassMappings: o.storageClassMappings,
		OIDCIssuerURL: o.oidcIssuerURL, OIDCStorage: o.oidcStorage, OIDCCredentialsSecret: o.oidcCredentialsSecret,
		OIDCKeepOnDelete: o.oidcKeepOnDelete, SigningKeySecret: o.signingKeySecret,
		WorkloadIdentityWebhook: o.workloadIdentityWebhook, AzureTenantID: o.azureTenantID, AWSRegion: o.awsRegion,
		Infra: o.infra, Machine: o.machine,
	}
	c.Machine.readFlags(cmd)
	if cmd.Flags().Changed("node-pool-replicas") {
		c.NodePoolReplicas = &o.nodePoolReplicas
	}
	return c
}

func (o *createClusterOptions) run(cmd *cobra.Command, platform hypershiftv1alpha1.PlatformType) error {
	if err := o.cluster(cmd, platform).Validate(); err != nil {
		return err
	}
	var c client.Client
	if !o.render {
		var err error
		if c, err = o.connect(cmd); err != nil {
			return err
		}
	}
	spec := o.cluster(cmd, platform) // with the publishing connect chose
	if o.render {
		ns, hc, np := spec.Objects()
		if np != nil {
			return printYAML(cmd, ns, hc, np)
		}
		return printYAML(cmd, ns, hc)
	}
	ctx := cmd.Context()
	hc, np, err := CreateCluster(ctx, c, spec, func(obj client.Object) {
		kind := "hostedcluster"
		if _, ok := obj.(*hypershiftv1alpha1.NodePool); ok {
			kind = "nodepool"
		}
		fmt.Fprintf(cmd.OutOrStdout(), "%s %s/%s created\n", kind, obj.GetNamespace(), obj.GetName())
	})
	if err != nil {
		return err
	}
	if !o.wait {
		return nil
	}
	if err := clusterclient.WaitAvailable(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr(), c, client.ObjectKeyFromObject(hc), o.timeout); err != nil || np == nil {
		return err
	}
	if platform == hypershiftv1alpha1.NonePlatform {
		// Nodes of a None pool join later: print how, instead of waiting.
		line, err := join.Command(ctx, c, client.ObjectKeyFromObject(hc), np.Name, join.TokenOptions{TTL: time.Hour})
		if err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "join hosts to nodepool %s/%s as root with (token valid 1h; more with `hypershift create join-command --name %s`):\n  %s\n", np.Namespace, np.Name, o.name, line)
		return nil
	}
	return clusterclient.WaitNodePoolReady(ctx, cmd.OutOrStdout(), c, client.ObjectKeyFromObject(np), o.timeout)
}

// connect is the management cluster's client, with the publishing it
// implies when the flags do not say (defaultPublishing).
func (o *createClusterOptions) connect(cmd *cobra.Command) (client.Client, error) {
	c, err := o.Client()
	if err != nil {
		return nil, err
	}
	if !cmd.Flags().Changed("api-server-publishing") {
		if err := o.defaultPublishing(cmd.Context(), c, cmd.OutOrStdout()); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func printYAML(cmd *cobra.Command, objs ...any) error {
	for i, obj := range objs {
		data, err := yaml.Marshal(obj)
		if err != nil {
			return err
		}
		if i > 0 {
			fmt.Fprintln(cmd.OutOrStdout(), "---")
		}
		fmt.Fprint(cmd.OutOrStdout(), string(data))
	}
	return nil
}

// validateIdleHibernation checks --idle-hibernate-after.
func (o *ClusterSpec) validateIdleHibernation() error {
	if o.IdleAfter != 0 && o.IdleAfter < 10*time.Second {
		return fmt.Errorf("--idle-hibernate-after %s is too short: give at least 10s, such as 30m", o.IdleAfter)
	}
	if o.IdleAfter > 0 && o.SingleProcess {
		return fmt.Errorf("--idle-hibernate-after cannot be combined with --single-process-control-plane: waking on a request puts the endpoint proxy in front of a separate API server")
	}
	return nil
}

// storageDriver is spec.platform.host.storageDriver of
// --storage-class-mapping; nil without it.
func (o *ClusterSpec) storageDriver() (*hypershiftv1alpha1.HostStorageDriverSpec, error) {
	if len(o.StorageClassMappings) == 0 {
		return nil, nil
	}
	if o.Platform != hypershiftv1alpha1.HostPlatform {
		return nil, fmt.Errorf("--storage-class-mapping is for platform host: its machines are pods of the management cluster, whose storage it maps")
	}
	d, err := hypershiftv1alpha1.ManualStorageDriverOf(o.StorageClassMappings)
	if err != nil {
		return nil, fmt.Errorf("--storage-class-mapping %w", err)
	}
	return d, nil
}
