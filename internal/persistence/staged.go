package persistence

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/salvor-dev/salvor/internal/plugin/host"
)

// On an immutable location every object of a backup is written once: its
// retention starts with the write, and a rewrite would be a second version
// kept as long. But a backup's files change until it is whole — the
// tarball and results are rewritten when plugin operations end, the item
// operations file follows their progress, the journal comes and goes. So
// on such a location those files are staged on the server's disk, where
// they may change, and uploaded once, final, just before the manifest and
// the metadata (see BackupStore.seal). A restarted server finds them there
// (the scratch volume outlives the process); a server that lost its disk
// cannot finish such a backup, which then fails — it never looked whole.
//
// The owner record, the manifest and the metadata are written to the
// bucket directly, once each.

// Staged returns an object store that keeps the files of backups that are
// not whole yet in dir (per bucket), and passes everything else to store.
func Staged(store host.ObjectStore, dir string) host.ObjectStore {
	return &stagedStore{ObjectStore: store, dir: dir}
}

type stagedStore struct {
	host.ObjectStore
	dir string
}

// unwrapper is an object store decorating another (encryption).
type unwrapper interface{ Inner() host.ObjectStore }

// stagedOf finds the staging layer under store's decorators, if any.
func stagedOf(store host.ObjectStore) *stagedStore {
	for store != nil {
		if s, ok := store.(*stagedStore); ok {
			return s
		}
		u, ok := store.(unwrapper)
		if !ok {
			return nil
		}
		store = u.Inner()
	}
	return nil
}

// stages tells whether key is a backup file kept on disk until the backup
// is whole: anything under backups/<name>/ but the owner record, the
// manifest and the metadata.
func stages(key string) bool {
	i := strings.Index(key, "backups/")
	if i < 0 || (i > 0 && key[i-1] != '/') {
		return false
	}
	rest := key[i+len("backups/"):]
	name, file, ok := strings.Cut(rest, "/")
	if !ok || name == "" || file == "" {
		return false
	}
	switch file {
	case MetadataFile, SalvorMetadataFile, name + OwnerFile.Suffix(), name + ManifestFile.Suffix():
		return false
	}
	return true
}

func (s *stagedStore) file(bucket, key string) (string, error) {
	clean := path.Clean(key)
	if clean != key || strings.HasPrefix(key, "/") || strings.Contains(key, "..") {
		return "", fmt.Errorf("key %q cannot be staged", key)
	}
	return filepath.Join(s.dir, bucket, filepath.FromSlash(key)), nil
}

func (s *stagedStore) PutObject(ctx context.Context, bucket, key string, body io.Reader) error {
	if !stages(key) {
		return s.ObjectStore.PutObject(ctx, bucket, key, body)
	}
	p, err := s.file(bucket, key)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".partial-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, body); err != nil {
		tmp.Close()
		return fmt.Errorf("staging %s on the server's disk: %w", key, err)
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), p)
}

func (s *stagedStore) staged(bucket, key string) (string, bool) {
	if !stages(key) {
		return "", false
	}
	p, err := s.file(bucket, key)
	if err != nil {
		return "", false
	}
	_, err = os.Stat(p)
	return p, err == nil
}

func (s *stagedStore) GetObject(ctx context.Context, bucket, key string) (io.ReadCloser, error) {
	if p, ok := s.staged(bucket, key); ok {
		return os.Open(p)
	}
	return s.ObjectStore.GetObject(ctx, bucket, key)
}

func (s *stagedStore) ObjectExists(ctx context.Context, bucket, key string) (bool, error) {
	if _, ok := s.staged(bucket, key); ok {
		return true, nil
	}
	return s.ObjectStore.ObjectExists(ctx, bucket, key)
}

func (s *stagedStore) DeleteObject(ctx context.Context, bucket, key string) error {
	if p, ok := s.staged(bucket, key); ok {
		return os.Remove(p)
	}
	return s.ObjectStore.DeleteObject(ctx, bucket, key)
}

func (s *stagedStore) ListObjects(ctx context.Context, bucket, prefix string) ([]string, error) {
	keys, err := s.ObjectStore.ListObjects(ctx, bucket, prefix)
	if err != nil {
		return nil, err
	}
	root := filepath.Join(s.dir, bucket)
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() || strings.HasPrefix(d.Name(), ".partial-") {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		key := filepath.ToSlash(rel)
		if strings.HasPrefix(key, prefix) && !slices.Contains(keys, key) {
			keys = append(keys, key)
		}
		return nil
	})
	sort.Strings(keys)
	return keys, err
}

func (s *stagedStore) CreateSignedURL(ctx context.Context, bucket, key string, ttl time.Duration) (string, error) {
	if _, ok := s.staged(bucket, key); ok {
		return "", fmt.Errorf("%s is kept on the server's disk until its backup is whole (the location is immutable): ask again once it is", key)
	}
	return s.ObjectStore.CreateSignedURL(ctx, bucket, key, ttl)
}

// commit uploads the staged files under dir (a backup's key prefix, with
// its slash), each once, as they are now.
func (s *stagedStore) commit(ctx context.Context, bucket, dir string) error {
	root, err := s.file(bucket, strings.TrimSuffix(dir, "/"))
	if err != nil {
		return err
	}
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() || strings.HasPrefix(d.Name(), ".partial-") {
			return nil
		}
		rel, _ := filepath.Rel(filepath.Join(s.dir, bucket), p)
		key := filepath.ToSlash(rel)
		if strings.Contains(strings.TrimPrefix(key, dir), "journal/") {
			return nil // work in flight; it ended before the backup is whole
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := s.ObjectStore.PutObject(ctx, bucket, key, f); err != nil {
			return fmt.Errorf("uploading %s, staged until the backup is whole: %w", key, err)
		}
		return nil
	})
}

// discard removes what is staged under dir.
func (s *stagedStore) discard(bucket, dir string) error {
	root, err := s.file(bucket, strings.TrimSuffix(dir, "/"))
	if err != nil {
		return err
	}
	return os.RemoveAll(root)
}
