package image

import (
	"archive/tar"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"sync"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// entry is one file, directory or symbolic link of the layer; a file's
// content is read from src, or is data; a link points to link.
type entry struct {
	path string
	mode int64
	dir  bool
	link string
	src  string
	data []byte
	size int64
}

// writeLayer writes the layer's tar stream; the same bytes every time (no
// timestamps, fixed order), so the two reads of a layer agree.
func writeLayer(w io.Writer, entries []entry) error {
	tw := tar.NewWriter(w)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.path, Mode: e.mode, Format: tar.FormatPAX}
		switch {
		case e.dir:
			hdr.Typeflag = tar.TypeDir
		case e.link != "":
			hdr.Typeflag, hdr.Linkname, hdr.Mode = tar.TypeSymlink, e.link, 0o777
		case e.src != "":
			hdr.Typeflag, hdr.Size = tar.TypeReg, e.size
		default:
			hdr.Typeflag, hdr.Size = tar.TypeReg, int64(len(e.data))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if e.dir || e.link != "" {
			continue
		}
		if e.src == "" {
			if _, err := tw.Write(e.data); err != nil {
				return err
			}
			continue
		}
		if err := copyFile(tw, e.src, e.size); err != nil {
			return err
		}
	}
	return tw.Close()
}

// copyFile copies exactly size bytes of path: a file that changed size
// since it was measured fails rather than yielding a broken layer.
func copyFile(w io.Writer, path string, size int64) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	n, err := io.Copy(w, io.LimitReader(f, size))
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	if n != size {
		return fmt.Errorf("read %s: %d bytes, want %d (the file changed)", path, n, size)
	}
	return nil
}

// uncompressedLayer is a layer stored as a plain tar: its digest is its
// diff ID. The tar stream is produced anew for each read.
type uncompressedLayer struct {
	produce func(io.Writer) error
	once    sync.Once
	hash    v1.Hash
	size    int64
	err     error
}

func newUncompressedLayer(produce func(io.Writer) error) (*uncompressedLayer, error) {
	l := &uncompressedLayer{produce: produce}
	if err := l.measure(); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *uncompressedLayer) measure() error {
	l.once.Do(func() {
		h := sha256.New()
		counter := &countingWriter{w: h}
		if l.err = l.produce(counter); l.err != nil {
			return
		}
		l.size = counter.n
		l.hash = v1.Hash{Algorithm: "sha256", Hex: fmt.Sprintf("%x", h.Sum(nil))}
	})
	return l.err
}

func (l *uncompressedLayer) open() (io.ReadCloser, error) {
	r, w := io.Pipe()
	go func() { w.CloseWithError(l.produce(w)) }()
	return r, nil
}

func (l *uncompressedLayer) Digest() (v1.Hash, error)           { return l.hash, l.err }
func (l *uncompressedLayer) DiffID() (v1.Hash, error)           { return l.hash, l.err }
func (l *uncompressedLayer) Compressed() (io.ReadCloser, error) { return l.open() }
func (l *uncompressedLayer) Uncompressed() (io.ReadCloser, error) {
	return l.open()
}
func (l *uncompressedLayer) Size() (int64, error) { return l.size, l.err }
func (l *uncompressedLayer) MediaType() (types.MediaType, error) {
	return types.DockerUncompressedLayer, nil
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
