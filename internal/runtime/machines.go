package runtime

import (
	"context"
	"errors"
	"net/netip"
	"time"
)

// Machines makes the machines of Host NodePools where the runtime runs
// (docs/machines.md): on the process runtime each is a set of namespaces
// of the host (internal/nodes/machine), on the kube runtime a privileged
// pod of the management cluster. A machine runs the userdata it was made
// with, once, as a cloud machine runs it at first boot. Only a machine
// whose recorded owner is the caller's is started or deleted; one of the
// same name and another owner is reported, never touched.
type Machines interface {
	// Where says where the machines are, for messages.
	Where() string
	// Check says why no machine can be made now (no machine network);
	// nil when one can.
	Check(ctx context.Context) error
	// Count is how many machines there are, of any owner: the bound on
	// them (--max-machines) counts these.
	Count(ctx context.Context) (int, error)
	// Get reports the machine ref names, of whichever owner; its error
	// is ErrMachineNotFound (errors.Is) when there is none.
	Get(ctx context.Context, ref MachineRef) (Machine, error)
	// Create makes the machine and starts its userdata; for a machine of
	// ref's owner made before without its userdata started
	// (MachineNotStarted) it starts it. A machine of the name that is not
	// the owner's is ErrMachineExists.
	Create(ctx context.Context, ref MachineRef, userdata []byte) (Machine, error)
	// Delete deletes the owner's machine: its node is reset, and nothing of
	// the machine is left. done is false while the deletion goes on (call
	// again); a machine that is not there, or not the owner's, is done
	// (nothing is deleted).
	Delete(ctx context.Context, ref MachineRef) (done bool, err error)
}

// MachineRef names one machine.
type MachineRef struct {
	// Namespace is the control-plane namespace of the machine's
	// HostMachine; Cluster the UID of its HostedCluster.
	Namespace, Cluster string
	// Name is the machine's name, its Node's name too.
	Name string
	// Owner is recorded with the machine when it is made; only a machine
	// that records it is started or deleted.
	Owner string
	// ProviderID is the machine's provider ID, which its userdata gives
	// the Node (HYPERSHIFT_PROVIDER_ID).
	ProviderID string
}

// MachineState is how a machine is.
type MachineState string

const (
	// MachineNotStarted means made, its userdata not started (a pass stopped in
	// between); Create starts it.
	MachineNotStarted MachineState = "NotStarted"
	// MachineStarting means made, not running yet (a pod waiting for its node
	// or its image).
	MachineStarting MachineState = "Starting"
	// MachineRunning means it runs its userdata.
	MachineRunning MachineState = "Running"
	// MachineBooted means its userdata succeeded; the machine runs.
	MachineBooted MachineState = "Booted"
	// MachineFailed means its userdata failed; Message says how.
	MachineFailed MachineState = "Failed"
	// MachineBroken means the machine is not whole (made half-way, or its
	// processes gone); Message says what is missing.
	MachineBroken MachineState = "Broken"
)

// Machine is what a runtime reports of a machine.
type Machine struct {
	Name string
	// Owner is the owner recorded at creation.
	Owner string
	// Address is the machine's own address; invalid until known.
	Address netip.Addr
	State   MachineState
	// StartedAt is when its userdata started; zero before.
	StartedAt time.Time
	// Message says why a machine is Failed or Broken: for a failed
	// userdata, the end of its output.
	Message string
}

// Errors of Machines (errors.Is).
var (
	ErrMachineNotFound = errors.New("no such machine")
	ErrMachineExists   = errors.New("a machine of this name exists")
)
