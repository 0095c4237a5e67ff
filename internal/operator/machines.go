package operator

import (
	ctrl "sigs.k8s.io/controller-runtime"

	"hypershift.dev/internal/nodes/machine"
	"hypershift.dev/internal/runtime"
)

// machines are what the HostMachine provider makes machines through: the
// host's machines directory (`up --machines-dir`), or those the runtime
// makes (the kube runtime's pods, Options.NewMachines); nil: none.
func machines(opts Options, mgr ctrl.Manager) runtime.Machines {
	switch {
	case opts.Machines != nil:
		return machine.Provider{Host: *opts.Machines}
	case opts.NewMachines != nil:
		return opts.NewMachines(mgr)
	}
	return nil
}
