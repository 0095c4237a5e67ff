package process

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"hypershift.dev/internal/atomicfile"
	"hypershift.dev/internal/runtime"
)

const (
	// restoreDir, in the instance's directory, holds the Restore's files
	// while the restore step runs; it is removed after.
	restoreDir = ".restore"
	// restoreTimeout bounds one member's restore step: the archive's read
	// (backup.FetchTimeout) and the restore itself.
	restoreTimeout = 15 * time.Minute
	// restoreOutputTail is how much of the step's output an error keeps.
	restoreOutputTail = 4 << 10
)

// restoreData runs the restore step before the instance starts, when its
// spec has a Restore with files: `hypershift restore etcd-data --from-dir
// DIR -- ARGS` (package restore), the same step the kube runtime runs in
// an init container. It fills an empty data dir from the archive and
// leaves one etcd has written alone, so a restart of a member whose
// restore is done, or a spec whose Restore is still set, changes nothing.
// It runs in a child process with none of the operator's environment (a
// snapshot is the tenant's data and must not take the operator down; a
// bucket is read with the request's credentials only), its output goes to
// the instance's log, and a stop or release of the instance ends it.
func (in *instance) restoreData(spec runtime.Spec, log io.Writer) error {
	if spec.Restore == nil || len(spec.Restore.Files) == 0 {
		return nil
	}
	if err := spec.Restore.Validate(); err != nil {
		return fmt.Errorf("restore %s: %w", spec.Name, err)
	}
	dir := filepath.Join(in.dir, restoreDir)
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("restore %s: %w", spec.Name, err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return fmt.Errorf("restore %s: %w", spec.Name, err)
	}
	defer os.RemoveAll(dir)
	for _, f := range spec.Restore.Files {
		if err := atomicfile.Write(filepath.Join(dir, f.Path), f.Content, 0o600); err != nil {
			return fmt.Errorf("restore %s: %w", spec.Name, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), restoreTimeout)
	defer cancel()
	go func() {
		select {
		case <-in.stop:
		case <-in.release:
		case <-ctx.Done():
		}
		cancel()
	}()
	args := append([]string{"restore", "etcd-data", "--from-dir", dir, "--"}, spec.Args...)
	cmd := exec.CommandContext(ctx, in.binary, args...) //nolint:gosec // our own binary; the rendered spec's arguments
	cmd.Dir = in.dir
	cmd.Env = spec.Env
	out := &tailBuffer{max: restoreOutputTail}
	cmd.Stdout, cmd.Stderr = io.MultiWriter(log, out), io.MultiWriter(log, out)
	in.update(func(s *runtime.InstanceStatus) {
		s.Phase = runtime.Starting
		s.Message = "restoring data from the archive"
	})
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("restore %s's data: %w: %s", spec.Name, err, strings.TrimSpace(out.String()))
	}
	return nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max int
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string { return string(b.buf) }
