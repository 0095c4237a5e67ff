package machine

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"hypershift.dev/internal/runtime"
)

// logTailBytes bounds the end of a log a Provider puts in a message.
const logTailBytes = 2048

// Provider is the process runtime's runtime.Machines: the machines of one
// directory of this host.
type Provider struct{ Host Host }

var _ runtime.Machines = Provider{}

// Where implements runtime.Machines: the machines directory, and its
// machine network when it has one.
func (p Provider) Where() string {
	n, err := p.Host.Network()
	if err != nil {
		return p.Host.Dir
	}
	return fmt.Sprintf("%s (addresses of %s on bridge %s; their gateway is %s)", p.Host.Dir, n.CIDR, n.Bridge, n.Gateway)
}

// Check implements runtime.Machines: machines need the machine network.
func (p Provider) Check(context.Context) error {
	_, err := p.Host.Network()
	return err
}

// Count implements runtime.Machines.
func (p Provider) Count(context.Context) (int, error) {
	list, err := p.Host.List()
	return len(list), err
}

// Get implements runtime.Machines: the machine's record, whether it is
// whole and how its userdata is. A record that cannot be read is an error
// other than runtime.ErrMachineNotFound.
func (p Provider) Get(_ context.Context, ref runtime.MachineRef) (runtime.Machine, error) {
	rec, err := p.Host.Get(ref.Name)
	if errors.Is(err, ErrNotFound) {
		return runtime.Machine{}, fmt.Errorf("%w: %w", runtime.ErrMachineNotFound, err)
	}
	if err != nil {
		return runtime.Machine{}, err
	}
	m := runtime.Machine{Name: rec.Name, Owner: rec.Owner, Address: rec.Address}
	if rec.Owner != ref.Owner {
		return m, nil
	}
	if err := p.Host.Check(ref.Name); err != nil {
		m.State, m.Message = runtime.MachineBroken, err.Error()
		return m, nil
	}
	st, err := p.Host.Userdata(ref.Name)
	if err != nil {
		return runtime.Machine{}, err
	}
	m.StartedAt = st.StartedAt
	switch st.State {
	case UserdataNotStarted:
		m.State = runtime.MachineNotStarted
	case UserdataRunning:
		m.State = runtime.MachineRunning
	case UserdataSucceeded:
		m.State = runtime.MachineBooted
	default:
		m.State, m.Message = runtime.MachineFailed, st.Message
		if tail := p.Host.UserdataLogTail(ref.Name, logTailBytes); tail != "" {
			m.Message += "; the end of its log:\n" + tail
		}
	}
	return m, nil
}

// Create implements runtime.Machines: the machine (Make), then its
// userdata (StartUserdata). A machine made half-way by a call that failed
// is deleted again.
func (p Provider) Create(ctx context.Context, ref runtime.MachineRef, userdata []byte) (runtime.Machine, error) {
	h := p.Host
	rec, err := h.Get(ref.Name)
	switch {
	case errors.Is(err, ErrNotFound):
		if _, err := h.Make(ref.Name, ref.Owner); err != nil {
			if errors.Is(err, ErrExists) {
				return runtime.Machine{}, fmt.Errorf("%w: %w", runtime.ErrMachineExists, err)
			}
			if _, nerr := h.Network(); nerr != nil {
				return runtime.Machine{}, nerr
			}
			err = fmt.Errorf("make machine %s: %w", ref.Name, err)
			if _, gerr := h.Get(ref.Name); gerr == nil {
				_, derr := p.Delete(ctx, ref)
				err = errors.Join(err, derr)
			}
			return runtime.Machine{}, err
		}
	case err != nil:
		return runtime.Machine{}, err
	case rec.Owner != ref.Owner:
		return runtime.Machine{}, fmt.Errorf("machine %s in %s (owner %q): %w", ref.Name, h.Dir, rec.Owner, runtime.ErrMachineExists)
	}
	if _, err := h.StartUserdata(ref.Name, userdata); err != nil {
		return runtime.Machine{}, err
	}
	return p.Get(ctx, ref)
}

// Delete implements runtime.Machines: DeleteOwned, whose output's end is
// in its error. It is done when it returns.
func (p Provider) Delete(ctx context.Context, ref runtime.MachineRef) (bool, error) {
	rec, err := p.Host.Get(ref.Name)
	switch {
	case errors.Is(err, ErrNotFound):
		return true, nil
	case err != nil:
		return false, err
	case rec.Owner != ref.Owner:
		return true, nil
	}
	out := &tailBuffer{max: logTailBytes}
	if err := p.Host.DeleteOwned(ctx, ref.Name, ref.Owner, out); err != nil {
		if s := bytes.TrimSpace(out.buf); len(s) > 0 {
			return false, fmt.Errorf("delete machine %s: %w; its output ended with: %s", ref.Name, err, s)
		}
		return false, fmt.Errorf("delete machine %s: %w", ref.Name, err)
	}
	return true, nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	buf []byte
	max int
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}
