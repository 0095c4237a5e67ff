package datadir

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"hypershift.dev/internal/atomicfile"
)

// machinesFile records the machines directory whose machines this data
// dir's management plane makes (`up --machines-dir`), and the identity its
// machines record as the beginning of their owner.
const machinesFile = "machines.json"

// Machines is what machines.json holds.
type Machines struct {
	// Dir is the machines directory.
	Dir string `json:"dir"`
	// ID is this data dir's identity; a machine whose owner begins with
	// OwnerPrefix() is one its management plane made.
	ID string `json:"id"`
}

// OwnerPrefix begins the owner of every machine this data dir's plane makes.
func (m Machines) OwnerPrefix() string { return m.ID + "/" }

// EnsureMachines records dir as the data dir's machines directory and
// returns the record; its ID is made once and kept.
func (l Layout) EnsureMachines(dir string) (Machines, error) {
	m, ok, err := l.ReadMachines()
	if err != nil {
		return Machines{}, err
	}
	if !ok {
		b := make([]byte, 8)
		if _, err := rand.Read(b); err != nil {
			return Machines{}, err
		}
		m.ID = hex.EncodeToString(b)
	}
	if m.Dir == dir && ok {
		return m, nil
	}
	m.Dir = dir
	data, err := json.Marshal(m)
	if err != nil {
		return Machines{}, err
	}
	return m, atomicfile.Write(filepath.Join(l.Root, machinesFile), data, 0o600)
}

// ReadMachines reads the record; ok is false when the plane never made
// machines.
func (l Layout) ReadMachines() (m Machines, ok bool, err error) {
	path := filepath.Join(l.Root, machinesFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return Machines{}, false, nil
	}
	if err != nil {
		return Machines{}, false, err
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return Machines{}, false, fmt.Errorf("%s: not a record of a machines directory: %w", path, err)
	}
	if m.ID == "" || !filepath.IsAbs(m.Dir) {
		return Machines{}, false, fmt.Errorf("%s: not a record of a machines directory (no id, or a relative dir)", path)
	}
	return m, true, nil
}
