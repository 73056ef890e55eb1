package persistence

import (
	"context"
	"fmt"
	"io"
)

// RestoreFile is the key of one of a restore's files, e.g.
// RestoreFile("r1", ResultsFile) is restores/r1/restore-r1-results.gz.
func (s *BackupStore) RestoreFile(name string, f File) string {
	return s.key("restores", name, "restore-"+name+f.Suffix())
}

// DeleteRestoreFiles removes the files a restore keeps in the location
// (its log, results, resource list and item operations), and nothing else
// under its name.
func (s *BackupStore) DeleteRestoreFiles(ctx context.Context, name string) error {
	for _, f := range []File{LogFile, ResultsFile, ResourceListFile, ItemOperationsFile} {
		if err := s.store.DeleteObject(ctx, s.bucket, s.RestoreFile(name, f)); err != nil {
			return fmt.Errorf("deleting restore %s's %s: %w", name, s.RestoreFile(name, f), err)
		}
	}
	return nil
}

// PutRestoreJSON writes one of a restore's gzip'd JSON files.
func (s *BackupStore) PutRestoreJSON(ctx context.Context, name string, f File, v any) error {
	return s.putGzipJSON(ctx, s.RestoreFile(name, f), "restore-"+name+f.Suffix(), v)
}

// PutRestoreLogs writes a restore's gzip'd log (best effort).
func (s *BackupStore) PutRestoreLogs(ctx context.Context, name string, r io.Reader) {
	_ = s.store.PutObject(ctx, s.bucket, s.RestoreFile(name, LogFile), r)
}

// GetRestoreJSON reads one of a restore's gzip'd JSON files into v.
func (s *BackupStore) GetRestoreJSON(ctx context.Context, name string, f File, v any) error {
	return s.getJSON(ctx, s.RestoreFile(name, f), true, f.readLimit(), v)
}
