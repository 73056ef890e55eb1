package persistence

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestStages(t *testing.T) {
	for key, want := range map[string]bool{
		"backups/b1/b1.tar.gz":                  true,
		"team/backups/b1/b1-results.gz":         true,
		"backups/b1/journal/operation-1.json":   true,
		"backups/b1/velero-backup.json":         false,
		"backups/b1/salvor-backup.json":         false,
		"backups/b1/b1-salvor-owner.json":       false,
		"backups/b1/b1-salvor-manifest.json.gz": false,
		"restores/r1/restore-r1-results.gz":     false,
		"mybackups/b1/b1.tar.gz":                false,
		"backups/b1":                            false,
	} {
		if got := stages(key); got != want {
			t.Errorf("stages(%q) = %v, want %v", key, got, want)
		}
	}
}

// TestStagedUntilWhole: on an immutable location a backup's files stay
// on disk, rewritten as often as need be, and reach the bucket once, final,
// with the manifest and the metadata; the owner record goes at once.
func TestStagedUntilWhole(t *testing.T) {
	ctx := context.Background()
	_, fs := newStore(t, "")
	scratch := t.TempDir()
	staged, err := Staged(fs, scratch)
	if err != nil {
		t.Fatal(err)
	}
	s := New(staged, "bkt", "")
	if err := s.ClaimName(ctx, "b1", "uid-1"); err != nil {
		t.Fatal(err)
	}
	if err := s.PutTarball(ctx, "b1", testTarball(t)); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, 2, 3} {
		if err := s.PutJSON(ctx, "b1", ItemOperationsFile, []int{n}); err != nil {
			t.Fatal(err)
		}
	}
	inBucket := func() []string {
		keys, _ := fs.ListObjectsWithContext(ctx, "bkt", "")
		return keys
	}
	if got := inBucket(); !slices.Equal(got, []string{"backups/b1/b1-salvor-owner.json"}) {
		t.Errorf("before the backup is whole the bucket holds %v; want only the owner record", got)
	}
	if ok, _ := s.HasBackup(ctx, "b1"); !ok {
		t.Error("a staged backup's name looks free")
	}
	// What a staged write cut short by a crash leaves: cleared with the rest.
	if err := os.WriteFile(filepath.Join(scratch, "bkt", "backups", "b1", ".put-123"), []byte("half"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishBackup(ctx, Finish{Backup: backup("b1"), Results: &Results{}, ItemOperations: []int{4}}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(scratch, "bkt", "backups", "b1")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a whole backup's staged files are still on the disk: %v", err)
	}
	want := []string{"backups/b1/b1-itemoperations.json.gz", "backups/b1/b1-results.gz", "backups/b1/b1-salvor-manifest.json.gz",
		"backups/b1/b1-salvor-owner.json", "backups/b1/b1.tar.gz", "backups/b1/salvor-backup.json", "backups/b1/velero-backup.json"}
	if got := inBucket(); !slices.Equal(got, want) {
		t.Errorf("once whole the bucket holds %v, want %v", got, want)
	}
	var ops []int
	if err := s.GetItemOperations(ctx, "b1", &ops); err != nil || !slices.Equal(ops, []int{4}) {
		t.Errorf("the item operations uploaded: %v, %v", ops, err)
	}
	rc, err := fs.GetObject(ctx, "bkt", "backups/b1/b1.tar.gz")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if !bytes.Equal(b, readAll(testTarball(t))) {
		t.Error("the tarball uploaded is not the one staged")
	}
	// A whole backup's log stays as written.
	before, _ := fs.ListObjectsWithContext(ctx, "bkt", "")
	if err := s.AppendLog(ctx, "b1", []byte("late\n")); err != nil {
		t.Fatal(err)
	}
	if after := inBucket(); !slices.Equal(before, after) {
		t.Errorf("appending to a whole backup's log wrote %v", after)
	}
}

func readAll(r io.Reader) []byte {
	b, _ := io.ReadAll(r)
	return b
}
