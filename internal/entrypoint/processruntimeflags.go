package entrypoint

import (
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"

	"github.com/spf13/pflag"

	"hypershift.dev/internal/datadir"
)

// processRuntimeFlags are the process runtime's flags (`up`, `operator`):
// how many hosted control planes start at once, the CPU priority of their
// processes, and the directory file:// archives are kept in.
type processRuntimeFlags struct {
	maxStarting    int
	nice           int
	backupFileRoot string
	maxMachines    int
}

const (
	maxStartingFlagName = "max-starting-control-planes"
	niceFlagName        = "control-plane-nice"
	backupRootFlagName  = "backup-file-root"
	maxMachinesFlagName = "max-machines"
	// defaultControlPlaneNice keeps the management plane and the operator
	// ahead of the hosted control planes when the CPU is short (a burst of
	// starts), and changes nothing while it is not.
	defaultControlPlaneNice = 10
)

// processOnlyFlags mean something only with the process runtime.
var processOnlyFlags = []string{maxStartingFlagName, niceFlagName, backupRootFlagName}

func (p *processRuntimeFlags) add(f *pflag.FlagSet) {
	f.IntVar(&p.maxStarting, maxStartingFlagName, goruntime.NumCPU(),
		"how many hosted control planes start at once; the others wait in the start queue in order of creation (0: no limit)")
	f.IntVar(&p.nice, niceFlagName, defaultControlPlaneNice,
		"nice value (0-19) of hosted control-plane processes, so the management plane and operator stay responsive when the CPU is short (0: same priority)")
	f.StringVar(&p.backupFileRoot, backupRootFlagName, "",
		"directory the operator reads and writes file:// archives in; a file:// backup or restore URL elsewhere is refused (default: DATA_DIR/backups, which down --purge removes)")
	f.IntVar(&p.maxMachines, maxMachinesFlagName, 4*goruntime.NumCPU(),
		"the most machines there are: with --machines-dir, in the machines directory; with --runtime=kube and --machine-image, machine pods in the cluster (default there: 32); HostMachines beyond wait (MachineLimitReached) (0: no limit)")
}

// backupRoot is the directory of file:// archives: the flag's, or
// DATA_DIR/backups; made (0700) when missing, symbolic links resolved.
func (p processRuntimeFlags) backupRoot(layout datadir.Layout) (string, error) {
	root := p.backupFileRoot
	if root == "" {
		root = filepath.Join(layout.Root, "backups")
	}
	root, err := filepath.Abs(root)
	if err != nil {
		return "", fmt.Errorf("--%s: %w", backupRootFlagName, err)
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return "", fmt.Errorf("--%s: %w", backupRootFlagName, err)
	}
	resolved, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", fmt.Errorf("--%s: %w", backupRootFlagName, err)
	}
	return resolved, nil
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
