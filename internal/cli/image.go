package cli

import (
	"errors"
	"fmt"
	"io"
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
	var machine bool
	save := &cobra.Command{
		Use:   "save [--machine] -o FILE.tar",
		Short: "Write the image " + image.Ref() + " as a docker-archive tarball (hypershift join imports it into each node)",
		Long: "save builds the image from this binary: /hypershift (the entrypoint), the host's CA roots, /etc/passwd and\n" +
			"/etc/group (root, nobody), an empty /tmp, /releases/<version>/kubernetes of every release beside the binary\n" +
			"(hypershift version lists them) and Cluster API's manager with its CRDs in " + image.ClusterAPIDir + " (from\n" +
			"clusterapi beside the binary, `make build`). Load it elsewhere with `hypershift node load-image FILE.tar`,\n" +
			"`ctr images import FILE.tar` or `docker load -i FILE.tar`; pods run it with imagePullPolicy Never.\n\n" +
			"With --machine it writes " + image.MachineRef() + " instead, the image of the kube runtime's\n" +
			"machines (each a privileged pod of the management cluster whose userdata runs `hypershift join`):\n" +
			"the layer above, the same bytes, and one layer of this host's Debian packages — dash, coreutils, mount,\n" +
			"iproute2, iptables, containerd, runc, containernetworking-plugins — with the shared libraries they load,\n" +
			"/etc/alternatives' links to iptables and " + image.MachineCommand + ". It is built from the files dpkg lists\n" +
			"as installed here (Debian 12 or later), which any user can read: building it does not need root.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return errors.New("-o FILE.tar is required")
			}
			opts := image.Options{RequireClusterAPI: true}
			ref, write := image.Ref(), func(w io.Writer) error { return image.Write(w, opts) }
			if machine {
				ref, write = image.MachineRef(), func(w io.Writer) error { return image.WriteMachine(w, image.MachineOptions{Image: opts}) }
			}
			if err := writeTarball(out, write); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s to %s\n", ref, out)
			return nil
		},
	}
	save.Flags().StringVarP(&out, "output", "o", "", "file to write (docker-archive tarball)")
	save.Flags().BoolVar(&machine, "machine", false, "write the machine image "+image.MachineRepository+" (this host's Debian packages added)")
	cmd.AddCommand(save)
	return cmd
}

// writeTarball writes out through a temporary file beside it, so that out
// is whole or absent.
func writeTarball(out string, write func(io.Writer) error) error {
	dir, err := filepath.Abs(filepath.Dir(out))
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".image-*.tar")
	if err != nil {
		return fmt.Errorf("-o %s: %w", out, err)
	}
	defer os.Remove(f.Name())
	if err := write(f); err != nil {
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
	return nil
}
