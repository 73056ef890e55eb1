package persistence

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/salvor-dev/salvor/internal/plugin/host"
)

// ErrReadOnly: a write or delete was refused because the location is
// ReadOnly.
var ErrReadOnly = errors.New("salvor: the backup storage location is ReadOnly: Salvor never writes to or deletes from it")

// NewReadOnly returns the store of a ReadOnly location: every write and
// delete in the bucket is refused with ErrReadOnly, at the lowest level, so
// no caller can forget. A restore from such a location still has results,
// logs and operations to keep; those go to scratch, in the server's memory,
// and read back from there.
func NewReadOnly(store host.ObjectStore, bucket, prefix string, scratch *Scratch) *BackupStore {
	s := New(store, bucket, prefix)
	s.store = readOnlyStore{ObjectStore: store, scratch: scratch, restores: s.key("restores") + "/"}
	return s
}

// Scratch keeps in memory the files restores from ReadOnly locations
// write, up to a bound on their total size; the oldest go first.
type Scratch struct {
	// MaxBytes bounds the total size kept (default 64 MiB).
	MaxBytes int

	mu    sync.Mutex
	files map[string][]byte
	order []string
	size  int
}

func (s *Scratch) put(key string, b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.files == nil {
		s.files = map[string][]byte{}
	}
	if s.MaxBytes <= 0 {
		s.MaxBytes = 64 << 20
	}
	if old, ok := s.files[key]; ok {
		s.size -= len(old)
	} else {
		s.order = append(s.order, key)
	}
	s.files[key] = b
	s.size += len(b)
	for s.size > s.MaxBytes && len(s.order) > 1 {
		oldest := s.order[0]
		s.order = s.order[1:]
		s.size -= len(s.files[oldest])
		delete(s.files, oldest)
	}
}

func (s *Scratch) get(key string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.files[key]
	return b, ok
}

type readOnlyStore struct {
	host.ObjectStore
	scratch  *Scratch
	restores string // the key prefix of restores' files
}

func (r readOnlyStore) inScratch(key string) bool {
	return r.scratch != nil && strings.HasPrefix(key, r.restores)
}

// scratched returns a restore's file kept in memory, if key is one.
func (r readOnlyStore) scratched(key string) ([]byte, bool) {
	if !r.inScratch(key) {
		return nil, false
	}
	return r.scratch.get(key)
}

func (r readOnlyStore) PutObject(_ context.Context, bucket, key string, body io.Reader) error {
	if !r.inScratch(key) {
		return fmt.Errorf("writing %s to bucket %s: %w", key, bucket, ErrReadOnly)
	}
	b, err := io.ReadAll(io.LimitReader(body, 64<<20))
	if err != nil {
		return err
	}
	r.scratch.put(key, b)
	return nil
}

func (r readOnlyStore) DeleteObject(_ context.Context, bucket, key string) error {
	return fmt.Errorf("deleting %s from bucket %s: %w", key, bucket, ErrReadOnly)
}

func (r readOnlyStore) ObjectExists(ctx context.Context, bucket, key string) (bool, error) {
	if _, ok := r.scratched(key); ok {
		return true, nil
	}
	return r.ObjectStore.ObjectExists(ctx, bucket, key)
}

func (r readOnlyStore) GetObject(ctx context.Context, bucket, key string) (io.ReadCloser, error) {
	if b, ok := r.scratched(key); ok {
		return io.NopCloser(bytes.NewReader(b)), nil
	}
	return r.ObjectStore.GetObject(ctx, bucket, key)
}

// MaxInlineBytes bounds a restore file of a ReadOnly location handed out
// inline, as a data: URL in its DownloadRequest's status (an object the
// API server keeps whole, up to about 1.5 MiB, base64 included).
const MaxInlineBytes = 512 << 10

// CreateSignedURL of a restore's file kept in memory is the file itself,
// as a data: URL: there is no object in the bucket to sign, and a
// restore's results and log are what say why it did not complete.
func (r readOnlyStore) CreateSignedURL(ctx context.Context, bucket, key string, ttl time.Duration) (string, error) {
	if b, ok := r.scratched(key); ok {
		if len(b) > MaxInlineBytes {
			return "", fmt.Errorf("%s is kept in the server's memory only, not in bucket %s (its location is ReadOnly), and at %d bytes is too large to hand out inline (at most %d)",
				key, bucket, len(b), MaxInlineBytes)
		}
		return "data:application/octet-stream;base64," + base64.StdEncoding.EncodeToString(b), nil
	}
	return r.ObjectStore.CreateSignedURL(ctx, bucket, key, ttl)
}
