package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hypershift.dev/internal/clusterclient"
	"hypershift.dev/internal/dump"
)

// newDumpCommand is `hypershift dump cluster NAME`: one archive with what
// is needed to debug a hosted cluster, every secret value redacted.
func newDumpCommand(g *clusterclient.Management) *cobra.Command {
	cmd := &cobra.Command{Use: "dump", Short: "Collect what is needed to debug a hosted cluster"}
	var namespace, name, output string
	var logLines int
	var hostedTimeout time.Duration
	cluster := &cobra.Command{
		Use:   "cluster [NAME]",
		Short: "Write a hosted cluster's objects, component status and logs, events, nodes and failing pods to one archive, secrets redacted",
		Args: func(_ *cobra.Command, args []string) error {
			switch {
			case len(args) > 1:
				return fmt.Errorf("name one cluster: `hypershift dump cluster NAME`")
			case len(args) == 1 && name != "" && args[0] != name:
				return fmt.Errorf("the cluster is named twice (%q and --name %q): name it once", args[0], name)
			case len(args) == 0 && name == "":
				return fmt.Errorf("name the cluster: `hypershift dump cluster NAME` (or --name)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				name = args[0]
			}
			if logLines < 1 {
				return fmt.Errorf("--log-lines %d: want at least 1", logLines)
			}
			now := time.Now()
			if output == "" {
				output = fmt.Sprintf("hypershift-dump-%s-%s.tar.gz", name, now.UTC().Format("20060102T150405Z"))
			}
			if _, err := os.Lstat(output); err == nil {
				return fmt.Errorf("-o %s exists: name a new file (.tar.gz) or directory", output)
			}
			if dir := filepath.Dir(output); dir != "." {
				if _, err := os.Stat(dir); err != nil {
					return fmt.Errorf("-o %s: %w", output, err)
				}
			}
			cfg, err := g.RESTConfig()
			if err != nil {
				return err
			}
			c, err := g.Client()
			if err != nil {
				return err
			}
			cs, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				return err
			}
			key := client.ObjectKey{Namespace: namespace, Name: name}
			b, err := dump.Collect(cmd.Context(), dump.Options{
				Client: c, Clientset: cs, Cluster: key,
				ProcessRoot: g.LocalProcessRoot(), LogLines: logLines, HostedTimeout: hostedTimeout,
			})
			if apierrors.IsNotFound(err) {
				return clusterclient.NotFound(key)
			}
			if err != nil {
				return err
			}
			if err := b.Write(output, now); err != nil {
				return fmt.Errorf("write the dump: %w", err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s (%d files; read summary.txt first)\n", output, len(b.Files))
			for _, p := range b.Problems {
				fmt.Fprintf(cmd.ErrOrStderr(), "not collected: %s\n", p)
			}
			return nil
		},
	}
	f := cluster.Flags()
	f.StringVar(&name, "name", "", "name of the hosted cluster (or as the argument)")
	f.StringVarP(&namespace, "namespace", "n", defaultNamespace, "namespace of the HostedCluster")
	f.StringVarP(&output, "output", "o", "", "where to write: FILE.tar.gz (or .tgz), else a new directory (default hypershift-dump-NAME-TIME.tar.gz)")
	f.IntVar(&logLines, "log-lines", 200, "last lines of each component log to keep")
	f.DurationVar(&hostedTimeout, "hosted-timeout", 10*time.Second, "bound on each request to the hosted cluster (it may be down)")
	cmd.AddCommand(cluster)
	return cmd
}
