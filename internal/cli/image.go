package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"hypershift.dev/internal/image"
)

// newImageCommand groups the commands about hypershift's own image.
func newImageCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "image",
		Short: "hypershift's own container image (" + image.Repository + "), built from this binary",
	}
	var out string
	save := &cobra.Command{
		Use:   "save -o FILE.tar",
		Short: "Write the image " + image.Ref() + " as a docker-archive tarball (hypershift join imports it into each node)",
		Long: "save builds the image from this binary: /hypershift (the entrypoint), the host's CA roots, /etc/passwd and\n" +
			"/etc/group (root, nobody), an empty /tmp and /releases/<version>/kubernetes of every release beside the binary\n" +
			"(hypershift version lists them). Load it elsewhere with `hypershift node load-image FILE.tar`,\n" +
			"`ctr images import FILE.tar` or `docker load -i FILE.tar`; pods run it with imagePullPolicy Never.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return errors.New("-o FILE.tar is required")
			}
			dir, err := filepath.Abs(filepath.Dir(out))
			if err != nil {
				return err
			}
			f, err := os.CreateTemp(dir, ".image-*.tar")
			if err != nil {
				return fmt.Errorf("-o %s: %w", out, err)
			}
			defer os.Remove(f.Name())
			if err := image.Write(f, image.Options{}); err != nil {
				_ = f.Close()
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
			if err := os.Chmod(f.Name(), 0o644); err != nil { //nolint:gosec // an image is public
				return err
			}
			if err := os.Rename(f.Name(), out); err != nil {
				return fmt.Errorf("-o %s: %w", out, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s to %s\n", image.Ref(), out)
			return nil
		},
	}
	save.Flags().StringVarP(&out, "output", "o", "", "file to write (docker-archive tarball)")
	cmd.AddCommand(save)
	return cmd
}
