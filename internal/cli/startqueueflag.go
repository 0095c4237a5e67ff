package cli

import (
	"fmt"
	goruntime "runtime"

	"github.com/spf13/pflag"
)

// maxStartingFlag is --max-starting-control-planes of the process runtime
// (`up`, `operator`): how many hosted control planes start at once.
type maxStartingFlag int

const maxStartingFlagName = "max-starting-control-planes"

func (m *maxStartingFlag) add(f *pflag.FlagSet) {
	f.IntVar((*int)(m), maxStartingFlagName, goruntime.NumCPU(),
		"how many hosted control planes start at once; the others wait in the start queue in order of creation (0: no limit)")
}

func (m maxStartingFlag) validate() error {
	if m < 0 {
		return fmt.Errorf("--%s %d: use a number of control planes, or 0 for no limit", maxStartingFlagName, int(m))
	}
	return nil
}
