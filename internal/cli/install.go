package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"hypershift.dev/internal/clusterclient"
	"hypershift.dev/internal/install"
	"hypershift.dev/internal/release"
)

func newInstallCommand(g *clusterclient.Management) *cobra.Command {
	var opts install.Options
	var releases release.DirFlag
	var render, wait bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "install",
		Short: "Install hypershift into an existing Kubernetes cluster",
		Long: "Install the hypershift.dev API, its admission policies and the operator, which runs hosted control planes\n" +
			"as pods of the cluster of --kubeconfig (the kube runtime). See docs/install.md for what the cluster needs.",
		Example: "  hypershift install --render > hypershift.yaml\n" +
			"  hypershift install --kubeconfig ~/.kube/config --storage-class fast",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// The control planes run the releases of this install (the
			// image carries them): the admission policy admits those.
			catalog, err := releases.Load()
			if err != nil {
				return err
			}
			opts.Versions = catalog.Versions()
			// Validated before anything is read or made.
			objs, err := install.ObjectsFor(opts)
			if err != nil {
				return err
			}
			if render {
				out, err := install.Render(objs)
				if err != nil {
					return err
				}
				_, err = cmd.OutOrStdout().Write(out)
				return err
			}
			c, err := g.Client()
			if err != nil {
				return err
			}
			err = install.Apply(cmd.Context(), c, objs, func(kind, key string, r install.Result) {
				fmt.Fprintf(cmd.OutOrStdout(), "%s %s %s\n", kind, key, r)
			})
			if err != nil {
				return err
			}
			if !wait {
				return nil
			}
			start := time.Now()
			if err := install.WaitCRDs(cmd.Context(), c, objs); err != nil {
				return err
			}
			if err := install.WaitPoliciesEnforced(cmd.Context(), c, install.RuntimeKube, opts.Versions); err != nil {
				return err
			}
			if err := install.WaitOperator(cmd.Context(), c, objs, timeout); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "hypershift installed: the API is served and the operator available after %.1fs\n", time.Since(start).Seconds())
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&render, "render", false, "print the objects as YAML and create nothing")
	f.StringVar(&opts.Image, "image", "", "image of the operator and the control planes (default: this version's image, which hypershift image save writes)")
	f.StringVar(&opts.AWSProviderNamespace, "aws-provider-namespace", "", "namespace cluster-api-provider-aws runs in, where the operator writes the Secrets of AWS clusters' identities (default: capa-system)")
	f.StringVar(&opts.KubeletDir, "kubelet-dir", "", "the kubelet's root directory on the cluster's nodes, where machine pods get the hot-plug directories volumes are attached in (docs/volumes.md; default "+install.DefaultKubeletDir+")")
	f.StringVar(&opts.MachineImage, "machine-image", "", "image of the machines of Host NodePools, privileged pods of the cluster (default: this version's machine image, which hypershift image save --machine writes)")
	f.StringVar(&opts.Namespace, "namespace", install.DefaultNamespace, "namespace of the operator")
	f.StringVar(&opts.StorageClassName, "storage-class", "", "StorageClass of etcd's volumes (default: the cluster's default StorageClass)")
	f.Int32Var(&opts.Replicas, "replicas", 2, "replicas of the operator (one leads, the others stand by)")
	releases.AddFlag(f)
	f.BoolVar(&wait, "wait", true, "wait until the CRDs are served, the admission policies enforced and the operator Deployment available")
	f.DurationVar(&timeout, "timeout", 5*time.Minute, "with --wait: how long to wait for the operator")
	return cmd
}
