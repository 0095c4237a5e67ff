package entrypoint

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"hypershift.dev/internal/hotplug"
	"hypershift.dev/internal/nodes/machine"
)

// newMachineCommand is `hypershift machine`: machines on this host, each
// in namespaces of its own, that userdata turns into real nodes.
func newMachineCommand() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "machine",
		Short: "Machines on this host (network, mount and UTS namespaces of their own) that userdata turns into real nodes (run as root)",
		Long: "A machine is a network, mount and UTS namespace of its own on this host, with an address on the host's machine bridge, " +
			"its name as hostname and private /run, /var/lib and /var/log. Its userdata, a shell script such as the output of " +
			"`hypershift create join-command`, runs in it at creation: several real nodes, of one cluster or of several, on one host. " +
			"Start the management plane with --endpoint-host at the machine network's address so that the machines reach it.",
		Example: "  hypershift machine network                       # bridge with 10.210.0.1/24\n" +
			"  hypershift up --detach --endpoint-host 10.210.0.1\n" +
			"  hypershift create cluster none --name dev --wait\n" +
			"  hypershift create join-command --name dev > join.sh\n" +
			"  hypershift machine create m1 --userdata join.sh   # a Ready node named m1\n" +
			"  hypershift machine delete m1",
	}
	cmd.PersistentFlags().StringVar(&dir, "machines-dir", machine.DefaultDir, "directory of this host's machines")
	host := func() (machine.Host, error) {
		if os.Geteuid() != 0 {
			return machine.Host{}, errors.New("machines need root: namespaces, mounts and links")
		}
		abs, err := filepath.Abs(dir)
		if err != nil {
			return machine.Host{}, fmt.Errorf("--machines-dir %s: %w", dir, err)
		}
		// Mount points are read as real paths: compare with one.
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			abs = real
		}
		return machine.Host{Dir: abs}, nil
	}
	cmd.AddCommand(newMachineNetworkCommand(host), newMachineCreateCommand(host), newMachineListCommand(host),
		newMachineDeleteCommand(host), newMachineExecCommand(host), newMachineBootCommand(), newMachineAttachCommand())
	return cmd
}

// newMachineBootCommand is the first process of a machine that is a pod
// (the kube runtime's machines): not a command people run.
func newMachineBootCommand() *cobra.Command {
	var o machine.BootOptions
	var check bool
	cmd := &cobra.Command{
		Use:    "boot --userdata FILE",
		Short:  "Run a pod machine: its userdata, then keep it until stopped, when its node is reset (the first process of a machine pod)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if check {
				return machine.CheckBooted(o.Booted, cmd.OutOrStdout())
			}
			if o.Userdata == "" {
				return errors.New("--userdata is required")
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			return machine.Boot(ctx, o)
		},
	}
	cmd.Flags().StringVar(&o.Userdata, "userdata", "", "the userdata, run with sh")
	cmd.Flags().StringVar(&o.Booted, "booted-file", machine.BootedFile, "where the userdata's success is recorded")
	cmd.Flags().DurationVar(&o.ResetTimeout, "reset-timeout", machine.DefaultResetTimeout, "bound of the node's reset when the machine stops")
	cmd.Flags().BoolVar(&check, "check", false, "only say whether the userdata succeeded (the pod's readiness probe)")
	return cmd
}

// newMachineAttachCommand is the process of an attachment pod
// (docs/volumes.md): it holds a bind mount of the pod's claim in the
// machine's hot-plug directory until stopped. Not a command people run.
func newMachineAttachCommand() *cobra.Command {
	var source, dir, name string
	var check bool
	cmd := &cobra.Command{
		Use:    "attach --source DIR --hotplug-dir DIR --name HANDLE",
		Short:  "Hold a volume in a pod machine's hot-plug directory until stopped (the process of an attachment pod)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" || name == "" {
				return errors.New("--hotplug-dir and --name are required")
			}
			if check {
				held, err := hotplug.Held(dir, name)
				if err != nil {
					return err
				}
				if !held {
					return fmt.Errorf("%s is not held yet", filepath.Join(dir, name))
				}
				return nil
			}
			if source == "" {
				return errors.New("--source is required")
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			return hotplug.Hold(ctx, source, dir, name)
		},
	}
	cmd.Flags().StringVar(&source, "source", "", "the volume's mount in this pod")
	cmd.Flags().StringVar(&dir, "hotplug-dir", "", "the machine's hot-plug directory, mounted with bidirectional propagation")
	cmd.Flags().StringVar(&name, "name", "", "the volume's name there (its handle)")
	cmd.Flags().BoolVar(&check, "check", false, "only say whether the volume is held (the pod's readiness probe)")
	return cmd
}

type machineHost func() (machine.Host, error)

func newMachineNetworkCommand(host machineHost) *cobra.Command {
	var cidr string
	var del bool
	cmd := &cobra.Command{
		Use:   "network",
		Short: "Make (or show) the machine network: a bridge on this host whose first address is the machines' gateway",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			h, err := host()
			if err != nil {
				return err
			}
			if del {
				if err := h.DeleteNetwork(); err != nil {
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout(), "machine network deleted")
				return nil
			}
			n, err := h.EnsureNetwork(cidr)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "machine network %s on bridge %s; this host is %s (use it as up's --endpoint-host)\n", n.CIDR, n.Bridge, n.Gateway)
			return nil
		},
	}
	cmd.Flags().StringVar(&cidr, "cidr", "", "IPv4 range of the network, /16 to /29 (default: the existing network's, or "+machine.DefaultCIDR+")")
	cmd.Flags().BoolVar(&del, "delete", false, "delete the network (no machine may be left)")
	return cmd
}

func newMachineCreateCommand(host machineHost) *cobra.Command {
	var userdata string
	cmd := &cobra.Command{
		Use:   "create NAME --userdata FILE",
		Short: "Make a machine and run its userdata in it (a script that runs `hypershift join` makes it a node named NAME)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if err := machine.ValidateName(name); err != nil {
				return err
			}
			if userdata == "" {
				return errors.New("--userdata is required: a shell script, e.g. the output of `hypershift create join-command`")
			}
			data, err := readUserdata(userdata)
			if err != nil {
				return err
			}
			h, err := host()
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			r, err := h.Create(ctx, name, data, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "machine %s (%s) created; its userdata finished\n", r.Name, r.Address)
			return nil
		},
	}
	cmd.Flags().StringVar(&userdata, "userdata", "", "shell script to run in the machine once it exists (- reads standard input)")
	return cmd
}

// readUserdata reads the script, at most 64 KiB (a cloud's limit is 16–64).
func readUserdata(path string) ([]byte, error) {
	const limit = 64 << 10
	var r io.Reader = os.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("--userdata: %w", err)
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("--userdata %s: %w", path, err)
	case len(data) > limit:
		return nil, fmt.Errorf("--userdata %s: larger than 64 KiB", path)
	case len(data) == 0:
		return nil, fmt.Errorf("--userdata %s is empty", path)
	}
	return data, nil
}

func newMachineListCommand(host machineHost) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the machines: name, address, provider ID, processes running in them",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			h, err := host()
			if err != nil {
				return err
			}
			ms, err := h.List()
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tADDRESS\tPROVIDER ID\tPROCESSES\tCREATED")
			for _, r := range ms {
				procs := 0
				if r.NetnsInode != 0 {
					procs = len(machine.Processes(r.NetnsInode))
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\n", r.Name, r.Address, r.ProviderID(), procs, r.Created.Format("2006-01-02 15:04:05"))
			}
			return w.Flush()
		},
	}
}

func newMachineDeleteCommand(host machineHost) *cobra.Command {
	return &cobra.Command{
		Use:   "delete NAME...",
		Short: "Reset the node in each machine and remove the machine: nothing of it is left on the host",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			h, err := host()
			if err != nil {
				return err
			}
			var errs []error
			for _, name := range args {
				if err := h.Delete(cmd.Context(), name, cmd.ErrOrStderr()); err != nil {
					errs = append(errs, err)
					continue
				}
				fmt.Fprintf(cmd.OutOrStdout(), "machine %s deleted\n", name)
			}
			return errors.Join(errs...)
		},
	}
}

func newMachineExecCommand(host machineHost) *cobra.Command {
	return &cobra.Command{
		Use:     "exec NAME -- COMMAND [ARG...]",
		Short:   "Run a command in a machine",
		Example: "  hypershift machine exec m1 -- hypershift node load-image hello.tar\n  hypershift machine exec m1 -- ip addr",
		Args:    cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			h, err := host()
			if err != nil {
				return err
			}
			if _, err := h.Get(args[0]); err != nil {
				return err
			}
			c := h.Command(args[0], args[1], args[2:]...)
			c.Stdin, c.Stdout, c.Stderr = cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr()
			return c.Run()
		},
	}
}
