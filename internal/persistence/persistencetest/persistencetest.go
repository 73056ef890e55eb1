package persistencetest

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/salvor-dev/salvor/internal/persistence"
	"github.com/salvor-dev/salvor/pkg/objectstore/filesystem"
)

// Bucket is the bucket of the locations OnDisk makes.
const Bucket = "bkt"

// Store is a filesystem object store as the host's ObjectStore.
type Store struct{ *filesystem.Store }

func (s Store) Name() string { return filesystem.Name }
func (s Store) PutObject(ctx context.Context, bucket, key string, body io.Reader) error {
	return s.Store.PutObjectWithContext(ctx, bucket, key, body)
}
func (s Store) ObjectExists(_ context.Context, bucket, key string) (bool, error) {
	return s.Store.ObjectExists(bucket, key)
}
func (s Store) GetObject(_ context.Context, bucket, key string) (io.ReadCloser, error) {
	return s.Store.GetObject(bucket, key)
}
func (s Store) ListCommonPrefixes(ctx context.Context, bucket, prefix, delim string) ([]string, error) {
	return s.Store.ListCommonPrefixesWithContext(ctx, bucket, prefix, delim)
}
func (s Store) ListObjects(ctx context.Context, bucket, prefix string) ([]string, error) {
	return s.Store.ListObjectsWithContext(ctx, bucket, prefix)
}
func (s Store) DeleteObject(_ context.Context, bucket, key string) error {
	return s.Store.DeleteObject(bucket, key)
}
func (s Store) CreateSignedURL(_ context.Context, bucket, key string, ttl time.Duration) (string, error) {
	return s.Store.CreateSignedURL(bucket, key, ttl)
}

// OnDisk returns a backup store over a new directory of the test's, with
// prefix, and the directory (the bucket is the directory Bucket in it).
func OnDisk(t testing.TB, prefix string) (*persistence.BackupStore, string) {
	t.Helper()
	root := t.TempDir()
	fs := &filesystem.Store{}
	if err := fs.Init(map[string]string{"root": root}); err != nil {
		t.Fatal(err)
	}
	return persistence.New(Store{fs}, Bucket, prefix), root
}
