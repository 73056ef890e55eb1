package archive

import (
	"archive/tar"
	"compress/gzip"
	"fmt"
	"io"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Writer writes a tarball. It is safe for concurrent use: items are written
// one at a time, whole.
type Writer struct {
	observe []Observer
	mu      sync.Mutex
	gz      *gzip.Writer
	tw      *tar.Writer
	now     time.Time
	items   int
	err     error
}

// An Observer sees each entry as it is written, one at a time, in the
// tarball's order (a manifest's item digests are taken so, rather than by
// reading the tarball again). An error from it fails the write.
type Observer func(name string, body []byte) error

// NewWriter starts a tarball on w, writing its version entry.
func NewWriter(w io.Writer, observe ...Observer) (*Writer, error) {
	gz, err := gzip.NewWriterLevel(w, gzip.BestSpeed)
	if err != nil {
		return nil, err
	}
	aw := &Writer{gz: gz, tw: tar.NewWriter(gz), now: time.Now().UTC(), observe: observe}
	if err := aw.write(VersionFile, []byte(FormatVersion+"\n")); err != nil {
		return nil, err
	}
	return aw, nil
}

func (w *Writer) write(name string, body []byte) error {
	if w.err != nil {
		return w.err
	}
	hdr := &tar.Header{Name: name, Size: int64(len(body)), Mode: 0o755, Typeflag: tar.TypeReg, ModTime: w.now}
	if err := w.tw.WriteHeader(hdr); err != nil {
		w.err = fmt.Errorf("writing %s to the tarball: %w", name, err)
		return w.err
	}
	if _, err := w.tw.Write(body); err != nil {
		w.err = fmt.Errorf("writing %s to the tarball: %w", name, err)
		return w.err
	}
	for _, o := range w.observe {
		if err := o(name, body); err != nil {
			w.err = fmt.Errorf("writing %s to the tarball: %w", name, err)
			return w.err
		}
	}
	return nil
}

// WriteItem stores an item's JSON under its resource and under its
// preferred version.
func (w *Writer) WriteItem(gvr schema.GroupVersionResource, namespace, name string, body []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.write(ItemPath(gvr.GroupResource(), namespace, name), body); err != nil {
		return err
	}
	if err := w.write(PreferredVersionPath(gvr, namespace, name), body); err != nil {
		return err
	}
	w.items++
	return nil
}

// Items is the number of items written.
func (w *Writer) Items() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.items
}

// Close finishes the tarball (it does not close the underlying writer).
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if err := w.tw.Close(); err != nil {
		return err
	}
	return w.gz.Close()
}

// WriteEntry copies an entry as is (used when a tarball is rewritten).
func (w *Writer) WriteEntry(name string, body []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.write(name, body)
}
