package persistence

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path"
	"strings"
	"sync"

	"github.com/salvor-dev/salvor/internal/archive"
)

// ObjectDigest is one stored object.
type ObjectDigest struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// ItemDigest is one entry of the tarball.
type ItemDigest struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
}

// TarballDigest is what hashing a tarball gives: the object's digest and
// its items'. The items are kept on the server's disk: a backup has as many
// as it likes, and the server's memory must not grow with them.
type TarballDigest struct {
	Object ObjectDigest
	Items  *ItemDigests
}

// ItemDigests is a list of item digests in a temporary file, in the order
// they were added.
type ItemDigests struct {
	f *os.File
	w *bufio.Writer
	n int
	h hash.Hash
}

// NewItemDigests starts an empty list, for a writer that hands each entry
// of a tarball to Observe as it writes it (see PutTarballDigested).
func NewItemDigests() (*ItemDigests, error) {
	f, err := os.CreateTemp("", "salvor-item-digests-")
	if err != nil {
		return nil, fmt.Errorf("a file for the tarball's item digests: %w", err)
	}
	return &ItemDigests{f: f, w: bufio.NewWriter(f), h: sha256.New()}, nil
}

// Observe takes one entry of a tarball, in the tarball's order: item
// entries (resources/...) are hashed and listed, others passed over. It is
// not safe for concurrent use; archive.Writer calls it one entry at a time.
func (l *ItemDigests) Observe(name string, body []byte) error {
	name = path.Clean(name)
	if !strings.HasPrefix(name, "resources/") {
		return nil
	}
	l.h.Reset()
	l.h.Write(body)
	return l.add(ItemDigest{Path: name, SHA256: hex.EncodeToString(l.h.Sum(nil))})
}

func (l *ItemDigests) add(d ItemDigest) error {
	b, err := json.Marshal(d)
	if err != nil {
		return err
	}
	l.n++
	l.w.Write(b)
	return l.w.WriteByte('\n')
}

// Len is how many digests the list holds.
func (l *ItemDigests) Len() int { return l.n }

// Each calls fn with every digest, in order.
func (l *ItemDigests) Each(fn func(ItemDigest) error) error {
	if err := l.w.Flush(); err != nil {
		return err
	}
	if _, err := l.f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	dec := json.NewDecoder(bufio.NewReader(l.f))
	for range l.n {
		var d ItemDigest
		if err := dec.Decode(&d); err != nil {
			return fmt.Errorf("reading back the tarball's item digests: %w", err)
		}
		if err := fn(d); err != nil {
			return err
		}
	}
	return nil
}

// Close removes the file.
func (l *ItemDigests) Close() {
	if l != nil {
		l.f.Close()
		os.Remove(l.f.Name())
	}
}

// Digester hashes what is written to it, as the manifest records objects.
type Digester struct {
	h    hash.Hash
	size int64
}

// NewDigester returns an empty Digester.
func NewDigester() *Digester { return &Digester{h: sha256.New()} }

func (d *Digester) Write(p []byte) (int, error) {
	d.size += int64(len(p))
	return d.h.Write(p)
}

// Digest is what was written, as the object named name.
func (d *Digester) Digest(name string) ObjectDigest {
	return ObjectDigest{Name: name, Size: d.size, SHA256: hex.EncodeToString(d.h.Sum(nil))}
}

// DigestObject hashes a whole stream.
func DigestObject(name string, r io.Reader) (ObjectDigest, error) {
	d := NewDigester()
	if _, err := io.Copy(d, r); err != nil {
		return ObjectDigest{}, err
	}
	return d.Digest(name), nil
}

// DigestTarball hashes a tarball (gzip'd tar) and each of its item
// entries. It does not check the entries: that is the reader's job
// (archive.Read); a stream that is not a tarball is an error.
func DigestTarball(name string, r io.Reader) (TarballDigest, error) {
	d := NewDigester()
	items, err := NewItemDigests()
	if err != nil {
		return TarballDigest{}, err
	}
	err = digestItems(io.TeeReader(r, d), items)
	if err == nil {
		// Whatever follows the gzip stream belongs to the object too.
		_, err = io.Copy(d, r)
	}
	if err == nil {
		err = items.w.Flush()
	}
	if err != nil {
		items.Close()
		return TarballDigest{}, err
	}
	return TarballDigest{Object: d.Digest(name), Items: items}, nil
}

func digestItems(r io.Reader, items *ItemDigests) error {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return fmt.Errorf("not gzip: %w", err)
	}
	tr := tar.NewReader(gz)
	var body bytes.Buffer
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("not a tar stream: %w", err)
		}
		if hdr.Typeflag != tar.TypeReg || !strings.HasPrefix(path.Clean(hdr.Name), "resources/") {
			continue
		}
		// Bounded as a restore reads entries: the tarball may be one
		// planted in the bucket, its entries of any size.
		if hdr.Size > archive.MaxEntrySize {
			return fmt.Errorf("%w: entry %s is larger than %d bytes", archive.ErrInvalid, hdr.Name, archive.MaxEntrySize)
		}
		body.Reset()
		if _, err := body.ReadFrom(io.LimitReader(tr, archive.MaxEntrySize+1)); err != nil {
			return fmt.Errorf("reading %s: %w", hdr.Name, err)
		}
		if body.Len() > archive.MaxEntrySize {
			return fmt.Errorf("%w: entry %s is larger than %d bytes", archive.ErrInvalid, hdr.Name, archive.MaxEntrySize)
		}
		if err := items.Observe(hdr.Name, body.Bytes()); err != nil {
			return err
		}
	}
	// Drain the gzip stream to its end, so the object's digest covers it all.
	_, err = io.Copy(io.Discard, gz)
	return err
}

// tarballDigests remembers, per backup, the digest of the tarball a store
// wrote, so sealing does not read it back.
type tarballDigests struct {
	mu sync.Mutex
	m  map[string]TarballDigest
}

func (t *tarballDigests) put(key string, d TarballDigest) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[string]TarballDigest{}
	}
	t.m[key].Items.Close()
	t.m[key] = d
}

func (t *tarballDigests) take(key string) (TarballDigest, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	d, ok := t.m[key]
	delete(t.m, key)
	return d, ok
}

func (t *tarballDigests) forget(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.m[key].Items.Close()
	delete(t.m, key)
}
