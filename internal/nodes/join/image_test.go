package join

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"syscall"
	"testing"
	"time"
)

// The assembled pause program runs, keeps running, and ends on a signal.
func TestPauseExecutableRuns(t *testing.T) {
	if goruntime.GOOS != "linux" || (goruntime.GOARCH != "amd64" && goruntime.GOARCH != "arm64") {
		t.Skipf("the pause program is built for linux/amd64 and linux/arm64, not %s/%s", goruntime.GOOS, goruntime.GOARCH)
	}
	prog, err := pauseExecutable(goruntime.GOARCH)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "pause")
	if err := os.WriteFile(path, prog, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(path)
	if err := cmd.Start(); err != nil {
		t.Fatalf("start pause: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		t.Fatalf("pause exited on its own: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
		if !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
			t.Fatalf("pause ended with %v, want killed by SIGTERM", err)
		}
	case <-time.After(5 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("pause ignored SIGTERM")
	}
}

func TestPauseExecutableUnknownArch(t *testing.T) {
	if _, err := pauseExecutable("s390x"); err == nil {
		t.Fatal("no error for an architecture without a pause program")
	}
}

// The image tarball is a docker archive: manifest.json naming the tag, a
// config with the entrypoint, and a layer holding the program.
func TestWriteImage(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteImage(&buf, "example.test/hello:1", map[string][]byte{"hello": []byte("#!prog")}, []string{"/hello"}); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	tr := tar.NewReader(&buf)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		files[hdr.Name] = data
	}
	var manifest []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	if err := json.Unmarshal(files["manifest.json"], &manifest); err != nil {
		t.Fatalf("manifest.json: %v (files %v)", err, keys(files))
	}
	if len(manifest) != 1 || len(manifest[0].RepoTags) != 1 || manifest[0].RepoTags[0] != "example.test/hello:1" || len(manifest[0].Layers) != 1 {
		t.Fatalf("manifest = %+v", manifest)
	}
	var cfg struct {
		Architecture string
		Config       struct{ Entrypoint []string }
	}
	if err := json.Unmarshal(files[manifest[0].Config], &cfg); err != nil {
		t.Fatal(err)
	}
	if len(cfg.Config.Entrypoint) != 1 || cfg.Config.Entrypoint[0] != "/hello" || cfg.Architecture != goruntime.GOARCH {
		t.Fatalf("config = %+v", cfg)
	}
	var layerData io.Reader = bytes.NewReader(files[manifest[0].Layers[0]])
	if zr, err := gzip.NewReader(layerData); err == nil { // layers are stored compressed
		layerData = zr
	} else {
		layerData = bytes.NewReader(files[manifest[0].Layers[0]])
	}
	layer := tar.NewReader(layerData)
	hdr, err := layer.Next()
	if err != nil || hdr.Name != "hello" || hdr.Mode&0o111 == 0 {
		t.Fatalf("layer entry = %+v, %v", hdr, err)
	}
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
