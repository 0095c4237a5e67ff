package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"hypershift.dev/internal/release"
	"hypershift.dev/internal/version"
)

func newVersionCommand() *cobra.Command {
	var releases release.DirFlag
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print hypershift's version and the Kubernetes releases it can run",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "hypershift %s\nkubernetes %s\n", version.Version, version.KubernetesVersion)
			catalog, err := releases.Load()
			if err != nil {
				return err
			}
			fmt.Fprintln(out, "releases:")
			for _, r := range catalog.Releases() {
				fmt.Fprintf(out, "  %s\t%s\n", r.Version, describeRelease(r))
			}
			return nil
		},
	}
	releases.AddFlag(cmd.Flags())
	return cmd
}

// describeRelease says where a release's components come from.
func describeRelease(r release.Release) string {
	if r.CompiledIn() {
		return "compiled in"
	}
	return fmt.Sprintf("%s (sha256 %s)", r.Binary, r.SHA256)
}
