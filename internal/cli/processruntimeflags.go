package cli

import (
	"fmt"
	goruntime "runtime"

	"github.com/spf13/pflag"
)

// processRuntimeFlags are the process runtime's flags (`up`, `operator`):
// how many hosted control planes start at once, and the CPU priority of
// their processes.
type processRuntimeFlags struct {
	maxStarting int
	nice        int
}

const (
	maxStartingFlagName = "max-starting-control-planes"
	niceFlagName        = "control-plane-nice"
	// defaultControlPlaneNice keeps the management plane and the operator
	// ahead of the hosted control planes when the CPU is short (a burst of
	// starts), and changes nothing while it is not.
	defaultControlPlaneNice = 10
)

// processOnlyFlags mean something only with the process runtime.
var processOnlyFlags = []string{maxStartingFlagName, niceFlagName}

func (p *processRuntimeFlags) add(f *pflag.FlagSet) {
	f.IntVar(&p.maxStarting, maxStartingFlagName, goruntime.NumCPU(),
		"how many hosted control planes start at once; the others wait in the start queue in order of creation (0: no limit)")
	f.IntVar(&p.nice, niceFlagName, defaultControlPlaneNice,
		"nice value (0-19) of hosted control-plane processes, so the management plane and operator stay responsive when the CPU is short (0: same priority)")
}

func (p processRuntimeFlags) validate() error {
	if p.maxStarting < 0 {
		return fmt.Errorf("--%s %d: use a number of control planes, or 0 for no limit", maxStartingFlagName, p.maxStarting)
	}
	if p.nice < 0 || p.nice > 19 {
		return fmt.Errorf("--%s %d: use a nice value from 0 (same priority as the management plane) to 19 (lowest)", niceFlagName, p.nice)
	}
	return nil
}
