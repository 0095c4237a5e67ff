package join

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os/exec"
	goruntime "runtime"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"hypershift.dev/internal/image"
)

// imageIDLabel marks hypershift's image in the node's containerd with the
// ID (config digest) of the image imported, so that a later start of the
// node daemon with the same binary skips the import.
const imageIDLabel = "hypershift.dev/image-id"

// importHypershiftImage streams hypershift's own image (image.Ref(), built
// from this binary by image.Build) into the node's containerd, where pods
// of the data plane (cluster DNS, the konnectivity agent) find it with
// imagePullPolicy Never. It is never written to disk. imported is false
// when containerd holds this very image already.
func importHypershiftImage(ctx context.Context, n *Node, ctrPath string, img v1.Image) (imported bool, err error) {
	id, err := img.ConfigName()
	if err != nil {
		return false, err
	}
	ctr := func(args ...string) *exec.Cmd {
		return exec.CommandContext(ctx, ctrPath, append([]string{"--address", n.ContainerdSocket(), "--namespace", "k8s.io", "images"}, args...)...) //nolint:gosec // host program, our arguments
	}
	label := imageIDLabel + "=" + id.String()
	if out, err := ctr("ls", "name=="+image.Ref()).Output(); err == nil && strings.Contains(string(out), label) {
		return false, nil
	}
	r, w := io.Pipe()
	written := make(chan error, 1)
	go func() {
		err := image.Save(w, img, image.Ref())
		w.CloseWithError(err)
		written <- err
	}()
	cmd := ctr("import", "-")
	cmd.Stdin = r
	out, err := cmd.CombinedOutput()
	_ = r.CloseWithError(io.ErrClosedPipe) // ends the writer if ctr stopped reading
	if werr := <-written; werr != nil && !errors.Is(werr, io.ErrClosedPipe) {
		return false, fmt.Errorf("build image %s: %w", image.Ref(), werr)
	}
	if err != nil {
		return false, fmt.Errorf("import image %s: %w: %s", image.Ref(), err, bytes.TrimSpace(out))
	}
	// Without the label the next start imports again: no harm.
	_ = ctr("label", image.Ref(), label).Run()
	return true, nil
}

// WriteImage writes a one-layer image holding files (path → content, all
// executable) as a docker-archive tarball tagged ref, the form
// `ctr images import` and `hypershift node load-image` take.
func WriteImage(w io.Writer, ref string, files map[string][]byte, entrypoint []string) error {
	tag, err := name.NewTag(ref)
	if err != nil {
		return fmt.Errorf("image name %q: %w", ref, err)
	}
	var layerTar bytes.Buffer
	tw := tar.NewWriter(&layerTar)
	for path, content := range files {
		hdr := &tar.Header{Name: path, Mode: 0o755, Size: int64(len(content)), Typeflag: tar.TypeReg, ModTime: time.Unix(0, 0)}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := tw.Write(content); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	layerBytes := layerTar.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerBytes)), nil
	})
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", goruntime.GOARCH
	cfg.Config = v1.Config{Entrypoint: entrypoint}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return err
	}
	return tarball.Write(tag, img, w)
}

// WritePauseImage writes the node's sandbox image, PauseImage. Its one
// program is a static executable of a few instructions that waits for
// signals forever (pause(2) in a loop): as PID 1 of the pod it needs
// nothing else, and containerd ends it with SIGKILL. It is assembled here so
// that a node needs no registry and no second binary.
func WritePauseImage(w io.Writer) error {
	prog, err := pauseExecutable(goruntime.GOARCH)
	if err != nil {
		return err
	}
	return WriteImage(w, PauseImage, map[string][]byte{"pause": prog}, []string{"/pause"})
}

// pauseExecutable is a minimal static ELF64 executable: one header, one
// loadable segment, and the machine code of `for { pause() }`.
func pauseExecutable(arch string) ([]byte, error) {
	var machine uint16
	var code []byte
	switch arch {
	case "amd64":
		machine = 62 // EM_X86_64
		code = []byte{
			0xb8, 0x22, 0x00, 0x00, 0x00, // mov eax, 34 (pause)
			0x0f, 0x05, // syscall
			0xeb, 0xf7, // jmp back to mov
		}
	case "arm64":
		machine = 183 // EM_AARCH64
		// arm64 has no pause(2): ppoll(NULL, 0, NULL, NULL) waits the same way.
		for _, insn := range []uint32{
			0xaa1f03e0, // mov x0, xzr
			0xaa1f03e1, // mov x1, xzr
			0xaa1f03e2, // mov x2, xzr
			0xaa1f03e3, // mov x3, xzr
			0xd2800928, // mov x8, #73 (ppoll)
			0xd4000001, // svc #0
			0x17fffffa, // b back to the first mov
		} {
			code = binary.LittleEndian.AppendUint32(code, insn)
		}
	default:
		return nil, fmt.Errorf("no built-in pause image for %s", arch)
	}
	const (
		base      = 0x400000
		ehdrSize  = 64
		phdrSize  = 56
		codeStart = ehdrSize + phdrSize
	)
	size := uint64(codeStart + len(code))
	var b bytes.Buffer
	le := binary.LittleEndian
	// ELF header.
	b.Write([]byte{0x7f, 'E', 'L', 'F', 2 /* 64-bit */, 1 /* little endian */, 1 /* version */, 0 /* System V */})
	b.Write(make([]byte, 8))
	_ = binary.Write(&b, le, uint16(2)) // ET_EXEC
	_ = binary.Write(&b, le, machine)
	_ = binary.Write(&b, le, uint32(1))              // EV_CURRENT
	_ = binary.Write(&b, le, uint64(base+codeStart)) // entry
	_ = binary.Write(&b, le, uint64(ehdrSize))       // program headers follow
	_ = binary.Write(&b, le, uint64(0))              // no section headers
	_ = binary.Write(&b, le, uint32(0))              // flags
	_ = binary.Write(&b, le, uint16(ehdrSize))
	_ = binary.Write(&b, le, uint16(phdrSize))
	_ = binary.Write(&b, le, uint16(1)) // one program header
	_ = binary.Write(&b, le, uint16(0))
	_ = binary.Write(&b, le, uint16(0))
	_ = binary.Write(&b, le, uint16(0))
	// Program header: the whole file, loaded readable and executable.
	_ = binary.Write(&b, le, uint32(1)) // PT_LOAD
	_ = binary.Write(&b, le, uint32(5)) // PF_R | PF_X
	_ = binary.Write(&b, le, uint64(0)) // offset
	_ = binary.Write(&b, le, uint64(base))
	_ = binary.Write(&b, le, uint64(base))
	_ = binary.Write(&b, le, size)
	_ = binary.Write(&b, le, size)
	_ = binary.Write(&b, le, uint64(0x1000))
	b.Write(code)
	return b.Bytes(), nil
}
