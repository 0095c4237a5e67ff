package backup

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A file:// archive URL is confined to the operator's --backup-file-root:
// outside it, through .., through a symbolic link inside it (to a
// directory or a file), over something not a regular file, or with no
// root configured, it is refused; inside it, made or existing, it passes.
// Other schemes are not its business.
func TestFileArchivesStayInTheirRoot(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "backups")
	outside := filepath.Join(dir, "etc")
	for _, d := range []string{filepath.Join(root, "team-a"), outside} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "team-a", "a.bak"), []byte("archive"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "passwd"), filepath.Join(root, "team-a", "link.bak")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "team-a", "dir.bak"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, ok := range []string{
		"file://" + root + "/team-a/a.bak",
		"file://" + root + "/team-a/new.bak",
		"file://" + root + "/team-b/deeper/new.bak",
		"s3://bucket/anything",
	} {
		if err := CheckFileRoot(ok, root); err != nil {
			t.Errorf("%s: %v, want it admitted", ok, err)
		}
	}
	for url, want := range map[string]string{
		"file://" + outside + "/passwd":          "is outside",
		"file://" + root + "/../etc/passwd":      "clean absolute path",
		"file://" + root:                         "is outside",
		"file://" + root + "/escape/passwd":      "symbolic link",
		"file://" + root + "/team-a/link.bak":    "symbolic link",
		"file://" + root + "/team-a/dir.bak":     "directory",
		"file://" + root + "/team-a/a.bak/x.bak": "regular file",
		"file://" + root + "2/a.bak":             "is outside",
	} {
		if err := CheckFileRoot(url, root); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want a refusal saying %q", url, err, want)
		}
	}
	if err := CheckFileRoot("file://"+root+"/team-a/a.bak", ""); err == nil || !strings.Contains(err.Error(), "--backup-file-root") {
		t.Errorf("no root configured: %v, want file:// refused naming the flag", err)
	}
}

// TestCheckArchiveURL: with pods (the kube runtime) every file:// archive
// is refused, naming where file:// points and what to use instead; without,
// the file root decides; other schemes pass.
func TestCheckArchiveURL(t *testing.T) {
	root := t.TempDir()
	for _, tt := range []struct {
		url     string
		pods    bool
		refused string
	}{
		{"file:///var/backups/a.bak", true, "file:// names a path in the operator's pod"},
		{"file:/var/backups/a.bak", true, "file:// names a path in the operator's pod"},
		{"file://" + root + "/a.bak", true, "s3://"},
		{"s3://backups/a.bak?region=us-east-1", true, ""},
		{"file://" + root + "/a.bak", false, ""},
		{"file:///var/backups/a.bak", false, "is outside"},
		{"gs://backups/a.bak", false, ""},
	} {
		err := CheckArchiveURL(tt.url, root, tt.pods)
		if (err != nil) != (tt.refused != "") || (err != nil && !strings.Contains(err.Error(), tt.refused)) {
			t.Errorf("%s (pods %v): %v, want refused saying %q", tt.url, tt.pods, err, tt.refused)
		}
	}
}
