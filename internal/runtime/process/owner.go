package process

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"hypershift.dev/internal/runtime"
)

// OwnerFile is the file in a control plane's directory that holds the UID
// of the object that owns it (runtime.ControlPlaneRef.Owner). It is written
// when the directory is first claimed and never changed: a directory is
// keyed by namespace alone, and two owners can map to the same one.
const OwnerFile = "owner"

// NotOwnerError names the directory, its owner and the refused one; it is
// a runtime.ErrNotOwner.
type NotOwnerError struct {
	Dir   string
	Owner string // empty: the directory has no owner marker
	Want  string
}

func (e *NotOwnerError) Error() string {
	owner := "owner " + e.Owner
	if e.Owner == "" {
		owner = "no owner marker"
	}
	want := "a ref without an owner"
	if e.Want != "" {
		want = "owner " + e.Want
	}
	return fmt.Sprintf("control-plane directory %s has %s (%s), not %s: refusing to use or delete it; remove it by hand if it is stale",
		e.Dir, owner, filepath.Join(e.Dir, OwnerFile), want)
}

// Is makes errors.Is(err, runtime.ErrNotOwner) work.
func (e *NotOwnerError) Is(target error) bool { return target == runtime.ErrNotOwner }

// readOwner returns the owner recorded in dir; os.ErrNotExist when none is.
func readOwner(dir string) (string, error) {
	data, err := os.ReadFile(filepath.Join(dir, OwnerFile))
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(data)), nil
}

// checkOwner refuses a ref whose directory carries another owner's marker.
// An unmarked directory (none yet, or made before markers) passes.
func (r *Runtime) checkOwner(ref runtime.ControlPlaneRef) error {
	dir := r.Dir(ref)
	got, err := readOwner(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("read owner of %s: %w", dir, err)
	case got != ref.Owner:
		return &NotOwnerError{Dir: dir, Owner: got, Want: ref.Owner}
	}
	return nil
}

// claim checks the ref's directory and, when it is unmarked and the ref has
// an owner, creates it with the owner's marker. Of two claimers at once
// exactly one wins: the marker is linked into place, which fails when it
// already exists.
func (r *Runtime) claim(ref runtime.ControlPlaneRef) error {
	if err := r.checkOwner(ref); err != nil || ref.Owner == "" {
		return err
	}
	dir := r.Dir(ref)
	if _, err := readOwner(dir); err == nil {
		return nil // checked above: ours
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	tmp, err := os.CreateTemp(dir, "."+OwnerFile+".tmp")
	if err != nil {
		return fmt.Errorf("claim %s: %w", dir, err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.WriteString(ref.Owner + "\n")
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Link(tmp.Name(), filepath.Join(dir, OwnerFile))
	}
	if errors.Is(err, os.ErrExist) {
		return r.checkOwner(ref) // another claimer won; it may be us
	}
	if err != nil {
		return fmt.Errorf("claim %s: %w", dir, err)
	}
	return nil
}
