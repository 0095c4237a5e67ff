package backup

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReadIsBounded: an archive URL a tenant writes cannot make the reader
// take without end or wait forever: a device (file:///dev/zero), a named
// pipe nobody writes to and a symbolic link are refused before they are
// opened, a file larger than any archive is cut off, and a file:// URL with
// the file driver's options is refused.
func TestReadIsBounded(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe.bak")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.bak")
	if err := os.WriteFile(big, make([]byte, 4096), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.bak")
	if err := os.Symlink(big, link); err != nil {
		t.Fatal(err)
	}
	defer func(v int64) { maxArchiveBytes = v }(maxArchiveBytes)
	maxArchiveBytes = 1024

	for _, tc := range []struct{ url, want string }{
		{"file:///dev/zero", "device"},
		{"file://" + fifo, "named pipe"},
		{"file://" + link, "symbolic link"},
		{"file://" + big, "larger than 1024 bytes"},
		{"file://" + big + "?create_dir=true", "without a host or ?options"},
		{"file://host" + big, "without a host or ?options"},
	} {
		start := time.Now()
		_, err := Read(t.Context(), tc.url, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Read %s: %v, want an error saying %q", tc.url, err, tc.want)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("Read %s took %s", tc.url, took)
		}
	}
	maxArchiveBytes = 4096
	if data, err := Read(t.Context(), "file://"+big, nil); err != nil || len(data) != 4096 {
		t.Errorf("a regular file within the bound: %d bytes, %v", len(data), err)
	}
}

// TestFileArchiveIsOwnerOnly: an archive written to file:// (and the
// driver's attributes file beside it) is readable by its owner only,
// whatever the umask.
func TestFileArchiveIsOwnerOnly(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	path := filepath.Join(t.TempDir(), "a.bak")
	if err := Write(t.Context(), "file://"+path, []byte("sealed"), nil); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, path + ".attrs"} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if mode := fi.Mode().Perm(); mode != 0o600 {
			t.Errorf("%s has mode %o, want 600", p, mode)
		}
	}
}

// TestFileOfALocation: the path of a file:// archive, also where the
// directory's name has characters a URL escapes; none for other schemes.
func TestFileOfALocation(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a b%c")
	loc, err := ParseURL("file://" + (&url.URL{Path: dir}).EscapedPath() + "/x.bak")
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := loc.file(); !ok || got != filepath.Join(dir, "x.bak") {
		t.Errorf("file() = %q, %v; want %s", got, ok, filepath.Join(dir, "x.bak"))
	}
	if loc, err := ParseURL("s3://bucket/x.bak"); err != nil {
		t.Fatal(err)
	} else if got, ok := loc.file(); ok {
		t.Errorf("an s3 location has file %q", got)
	}
}
