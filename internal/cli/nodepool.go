package cli

import (
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/clusterclient"
)

// addNodePoolCommands adds `create nodepool` and `get nodepools`.
func addNodePoolCommands(root *cobra.Command, g *clusterclient.Management) {
	for _, c := range root.Commands() {
		switch c.Name() {
		case "create":
			c.AddCommand(newCreateNodePoolCommand(g))
		case "get":
			c.AddCommand(newGetNodePoolsCommand(g))
		}
	}
}

type createNodePoolOptions struct {
	*clusterclient.Management
	name, namespace, cluster, platform string
	replicas, autoMin, autoMax         int32
	labels, taints                     []string
	drainTimeout                       time.Duration
	autoRepair, wait, render           bool
	timeout                            time.Duration
	kubernetesVersion, upgradeType     string
	maxUnavailable, maxSurge           string
	machine                            PlatformMachine // kubevirt, aws, azure
}

func newCreateNodePoolCommand(g *clusterclient.Management) *cobra.Command {
	o := &createNodePoolOptions{Management: g}
	cmd := &cobra.Command{
		Use:   "nodepool --cluster-name CLUSTER --name NAME --replicas N [--platform PLATFORM]",
		Short: "Create a pool of nodes for a hosted cluster (PLATFORM: " + platformNames + ")",
		Example: "  hypershift create nodepool --cluster-name demo --name workers --replicas 3 --wait\n" +
			"  hypershift create nodepool --cluster-name demo --name gpu --replicas 2 --node-labels gpu=true --taints gpu=true:NoSchedule\n" +
			"  hypershift create nodepool --platform kubevirt --cluster-name demo --name big --replicas 2 --containerdisk registry.example.com/nodes/debian:13 \\\n" +
			"    --cores 8 --memory 32Gi --root-volume-size 64Gi --additional-network vms/storage\n" +
			"  hypershift create nodepool --platform aws --cluster-name demo --name workers --replicas 3 --instance-type m6i.large \\\n" +
			"    --ami ami-0123456789abcdef0 --subnet-id subnet-0123456789abcdef0 --security-group-id sg-0123456789abcdef0\n" +
			"  VNET=/subscriptions/$SUB/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet\n" +
			"  hypershift create nodepool --platform azure --cluster-name demo --name workers --replicas 3 --vm-size Standard_D4s_v5 \\\n" +
			"    --image-id /subscriptions/$SUB/resourceGroups/rg/providers/Microsoft.Compute/images/node --subnet-id $VNET/subnets/nodes --availability-zone 1",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	f := cmd.Flags()
	f.StringVar(&o.cluster, "cluster-name", "", "hosted cluster the nodes join (required)")
	f.StringVar(&o.name, "name", "", "name of the NodePool (default: the cluster's name)")
	f.StringVarP(&o.namespace, "namespace", "n", defaultNamespace, "namespace of the HostedCluster and NodePool")
	f.Int32Var(&o.replicas, "replicas", 1, "number of nodes")
	f.StringVar(&o.platform, "platform", "simulated", "where nodes come from, the cluster's platform: simulated (an agent plays them), host (machines of the management plane's host, made by Cluster API), none (you join them), or kubevirt, aws or azure (machines of the platform's Cluster API provider, described by the machine flags)")
	f.StringSliceVar(&o.labels, "node-labels", nil, "labels of every node, KEY=VALUE (repeat or comma-separate)")
	f.StringSliceVar(&o.taints, "taints", nil, "taints of every node, KEY[=VALUE]:EFFECT (repeat or comma-separate)")
	f.DurationVar(&o.drainTimeout, "node-drain-timeout", 0, "how long a node is drained before removal (0: until drained)")
	f.BoolVar(&o.autoRepair, "auto-repair", false, "replace nodes that stay NotReady")
	f.Int32Var(&o.autoMin, "autoscaling-min", 0, "with --autoscaling-max: autoscale the pool between these sizes (instead of --replicas)")
	f.Int32Var(&o.autoMax, "autoscaling-max", 0, "largest size of an autoscaled pool")
	f.StringVar(&o.kubernetesVersion, "kubernetes-version", "", "Kubernetes version of the nodes, e.g. v1.36.3 (default: the control plane's, pinned at creation)")
	f.StringVar(&o.upgradeType, "upgrade-type", string(hypershiftv1alpha1.UpgradeTypeReplace), "how nodes move to a new version: Replace (new node first, then drain the old) or InPlace (drain, restart at the new version, uncordon)")
	f.StringVar(&o.maxUnavailable, "max-unavailable", "", "nodes (or a percentage, e.g. 25%) that may be unavailable at once during an upgrade (default: Replace 0, InPlace 1)")
	f.StringVar(&o.maxSurge, "max-surge", "", "Replace only: extra nodes (or a percentage) made at once during an upgrade (default 1)")
	f.BoolVar(&o.wait, "wait", false, "wait until every node is Ready, printing each step")
	f.DurationVar(&o.timeout, "timeout", 5*time.Minute, "with --wait: how long to wait")
	f.BoolVar(&o.render, "render", false, "print the NodePool as YAML, and create nothing")
	addPlatformMachineFlags(cmd, &o.machine)
	return cmd
}

func (o *createNodePoolOptions) run(cmd *cobra.Command) error {
	if o.cluster == "" {
		return fmt.Errorf("--cluster-name is required: `hypershift create nodepool --cluster-name CLUSTER --replicas N`")
	}
	if o.name == "" {
		o.name = o.cluster
	}
	platform, ok := platforms[o.platform]
	if !ok {
		return fmt.Errorf("unknown platform %q: use %s", o.platform, platformNames)
	}
	np := NewNodePool(o.namespace, o.name, o.cluster, platform, o.replicas)
	o.machine.readFlags(cmd)
	var err error
	if np.Spec.Platform, err = o.machine.NodePoolPlatform(platform); err != nil {
		return err
	}
	if platform == hypershiftv1alpha1.NonePlatform && !cmd.Flags().Changed("replicas") {
		np.Spec.Replicas = nil // as many nodes as join
	}
	if np.Spec.NodeLabels, err = parseLabels(o.labels); err != nil {
		return err
	}
	if np.Spec.Taints, err = parseTaints(o.taints); err != nil {
		return err
	}
	if o.drainTimeout > 0 {
		np.Spec.NodeDrainTimeout = &metav1.Duration{Duration: o.drainTimeout}
	}
	np.Spec.Management.AutoRepair = o.autoRepair
	np.Spec.KubernetesVersion = o.kubernetesVersion
	if np.Spec.Management, err = o.management(np.Spec.Management); err != nil {
		return err
	}
	if cmd.Flags().Changed("autoscaling-max") {
		if cmd.Flags().Changed("replicas") {
			return fmt.Errorf("--replicas and --autoscaling-max are mutually exclusive")
		}
		np.Spec.Replicas = nil
		np.Spec.AutoScaling = &hypershiftv1alpha1.NodePoolAutoScaling{Min: o.autoMin, Max: o.autoMax}
	}
	if o.render {
		return printYAML(cmd, np)
	}
	c, err := o.Client()
	if err != nil {
		return err
	}
	if err := createNodePool(cmd, c, np); err != nil {
		return err
	}
	if !o.wait {
		return nil
	}
	return clusterclient.WaitNodePoolReady(cmd.Context(), cmd.OutOrStdout(), c, client.ObjectKeyFromObject(np), o.timeout)
}

// management reads --upgrade-type, --max-unavailable and --max-surge.
func (o *createNodePoolOptions) management(m hypershiftv1alpha1.NodePoolManagement) (hypershiftv1alpha1.NodePoolManagement, error) {
	var unavailable, surge *intstr.IntOrString
	for _, f := range []struct {
		flag, value string
		out         **intstr.IntOrString
	}{{"--max-unavailable", o.maxUnavailable, &unavailable}, {"--max-surge", o.maxSurge, &surge}} {
		if f.value == "" {
			continue
		}
		v := intstr.Parse(f.value)
		if v.Type == intstr.String && !percentage.MatchString(v.StrVal) {
			return m, fmt.Errorf("%s %q: want a number of nodes or a percentage such as 25%%", f.flag, f.value)
		}
		*f.out = &v
	}
	switch strings.ToLower(o.upgradeType) {
	case "replace":
		m.UpgradeType = hypershiftv1alpha1.UpgradeTypeReplace
		if unavailable != nil || surge != nil {
			m.Replace = &hypershiftv1alpha1.ReplaceUpgrade{RollingUpdate: &hypershiftv1alpha1.RollingUpdate{MaxUnavailable: unavailable, MaxSurge: surge}}
		}
	case "inplace":
		m.UpgradeType = hypershiftv1alpha1.UpgradeTypeInPlace
		if surge != nil {
			return m, fmt.Errorf("--max-surge applies only to --upgrade-type Replace: InPlace upgrades make no extra nodes")
		}
		if unavailable != nil {
			m.InPlace = &hypershiftv1alpha1.InPlaceUpgrade{MaxUnavailable: unavailable}
		}
	default:
		return m, fmt.Errorf("--upgrade-type %q: use Replace or InPlace", o.upgradeType)
	}
	return m, nil
}

var percentage = regexp.MustCompile(`^[0-9]+%$`)

func createNodePool(cmd *cobra.Command, c client.Client, np *hypershiftv1alpha1.NodePool) error {
	if err := CreateNodePool(cmd.Context(), c, np); err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "nodepool %s/%s created\n", np.Namespace, np.Name)
	return nil
}

func parseLabels(in []string) (map[string]string, error) {
	if len(in) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	for _, kv := range in {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("node label %q: want KEY=VALUE", kv)
		}
		out[k] = v
	}
	return out, nil
}

func parseTaints(in []string) ([]hypershiftv1alpha1.Taint, error) {
	var out []hypershiftv1alpha1.Taint
	for _, s := range in {
		kv, effect, ok := strings.Cut(s, ":")
		if !ok {
			return nil, fmt.Errorf("taint %q: want KEY[=VALUE]:EFFECT", s)
		}
		k, v, _ := strings.Cut(kv, "=")
		switch e := corev1.TaintEffect(effect); e {
		case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
			out = append(out, hypershiftv1alpha1.Taint{Key: k, Value: v, Effect: e})
		default:
			return nil, fmt.Errorf("taint %q: effect must be NoSchedule, PreferNoSchedule or NoExecute", s)
		}
	}
	return out, nil
}

func newGetNodePoolsCommand(g *clusterclient.Management) *cobra.Command {
	return newListCommand(g, &cobra.Command{
		Use:     "nodepools",
		Aliases: []string{"nodepool", "np"},
		Short:   "List NodePools of every namespace (or of --namespace) with their node counts",
	},
		"No node pools. Create one with `hypershift create nodepool --cluster-name CLUSTER --replicas N`.",
		"NAMESPACE\tNAME\tCLUSTER\tDESIRED\tCURRENT\tREADY\tVERSION\tAGE\tMESSAGE",
		func(w io.Writer, list *hypershiftv1alpha1.NodePoolList) {
			for i := range list.Items {
				printNodePool(w, &list.Items[i])
			}
		})
}

// printNodePool writes the table row of a NodePool: desired replicas (or
// the autoscaling range), and the message of a pool not Ready or upgrading.
func printNodePool(w io.Writer, np *hypershiftv1alpha1.NodePool) {
	desired := "-"
	switch {
	case np.Spec.Replicas != nil:
		desired = fmt.Sprint(*np.Spec.Replicas)
	case np.Spec.AutoScaling != nil:
		desired = fmt.Sprintf("%d-%d", np.Spec.AutoScaling.Min, np.Spec.AutoScaling.Max)
	}
	msg := ""
	if cond := meta.FindStatusCondition(np.Status.Conditions, hypershiftv1alpha1.NodePoolReady.String()); cond != nil && cond.Status != metav1.ConditionTrue {
		msg = cond.Message
	}
	if cond := meta.FindStatusCondition(np.Status.Conditions, hypershiftv1alpha1.NodePoolUpdatingVersion); msg == "" && cond != nil && cond.Status == metav1.ConditionTrue {
		msg = cond.Message
	}
	fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\n", np.Namespace, np.Name, np.Spec.ClusterName, desired,
		np.Status.Replicas, np.Status.ReadyReplicas, orDash(np.Status.Version), duration.HumanDuration(time.Since(np.CreationTimestamp.Time)), msg)
}
