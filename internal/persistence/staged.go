package persistence

import (
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/salvor-dev/salvor/internal/plugin/host"
	"github.com/salvor-dev/salvor/pkg/objectstore/filesystem"
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
// The files on disk are kept by the built-in filesystem store, which writes
// each through a temporary file it syncs before the rename, so a staged file
// is whole or absent even after the node crashed.
func Staged(store host.ObjectStore, dir string) (host.ObjectStore, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("staging directory: %w", err)
	}
	disk := &filesystem.Store{}
	if err := disk.Init(map[string]string{"root": dir}); err != nil {
		return nil, fmt.Errorf("staging directory: %w", err)
	}
	return &stagedStore{ObjectStore: store, disk: disk, dir: dir}, nil
}

type stagedStore struct {
	host.ObjectStore
	disk *filesystem.Store
	dir  string
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

func (s *stagedStore) PutObject(ctx context.Context, bucket, key string, body io.Reader) error {
	if !stages(key) {
		return s.ObjectStore.PutObject(ctx, bucket, key, body)
	}
	if err := s.disk.PutObjectWithContext(ctx, bucket, key, body); err != nil {
		return fmt.Errorf("staging %s on the server's disk: %w", key, err)
	}
	return nil
}

// staged tells whether key is a staged file that is on the disk now.
func (s *stagedStore) staged(bucket, key string) bool {
	if !stages(key) {
		return false
	}
	ok, err := s.disk.ObjectExists(bucket, key)
	return ok && err == nil
}

func (s *stagedStore) GetObject(ctx context.Context, bucket, key string) (io.ReadCloser, error) {
	if s.staged(bucket, key) {
		return s.disk.GetObject(bucket, key)
	}
	return s.ObjectStore.GetObject(ctx, bucket, key)
}

func (s *stagedStore) ObjectExists(ctx context.Context, bucket, key string) (bool, error) {
	if s.staged(bucket, key) {
		return true, nil
	}
	return s.ObjectStore.ObjectExists(ctx, bucket, key)
}

func (s *stagedStore) DeleteObject(ctx context.Context, bucket, key string) error {
	if s.staged(bucket, key) {
		return s.disk.DeleteObject(bucket, key)
	}
	return s.ObjectStore.DeleteObject(ctx, bucket, key)
}

func (s *stagedStore) ListObjects(ctx context.Context, bucket, prefix string) ([]string, error) {
	keys, err := s.ObjectStore.ListObjects(ctx, bucket, prefix)
	if err != nil {
		return nil, err
	}
	onDisk, err := s.disk.ListObjectsWithContext(ctx, bucket, prefix)
	if err != nil {
		return nil, err
	}
	keys = append(keys, onDisk...)
	slices.Sort(keys)
	return slices.Compact(keys), nil
}

func (s *stagedStore) CreateSignedURL(ctx context.Context, bucket, key string, ttl time.Duration) (string, error) {
	if s.staged(bucket, key) {
		return "", fmt.Errorf("%s is kept on the server's disk until its backup is whole (the location is immutable): ask again once it is", key)
	}
	return s.ObjectStore.CreateSignedURL(ctx, bucket, key, ttl)
}

// commit uploads the staged files under dir (a backup's key prefix, with
// its slash), each once, as they are now.
func (s *stagedStore) commit(ctx context.Context, bucket, dir string) error {
	keys, err := s.disk.ListObjectsWithContext(ctx, bucket, dir)
	if err != nil {
		return err
	}
	for _, key := range keys {
		if strings.Contains(strings.TrimPrefix(key, dir), "journal/") {
			continue // work in flight; it ended before the backup is whole
		}
		if err := s.upload(ctx, bucket, key); err != nil {
			return fmt.Errorf("uploading %s, staged until the backup is whole: %w", key, err)
		}
	}
	return nil
}

func (s *stagedStore) upload(ctx context.Context, bucket, key string) error {
	f, err := s.disk.GetObject(bucket, key)
	if err != nil {
		return err
	}
	defer f.Close()
	return s.ObjectStore.PutObject(ctx, bucket, key, f)
}

// discard removes what is staged under dir, with what a write cut short
// left there.
func (s *stagedStore) discard(bucket, dir string) error {
	dir = strings.TrimSuffix(dir, "/")
	if bucket == "" || strings.ContainsAny(bucket, `/\`) || dir == "" || path.Clean("/"+dir) != "/"+dir {
		return fmt.Errorf("cannot discard %s/%s: not a clean path", bucket, dir)
	}
	return os.RemoveAll(filepath.Join(s.dir, bucket, filepath.FromSlash(dir)))
}
