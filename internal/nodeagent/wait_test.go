package nodeagent

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestWaitRestored: the wait returns only once every volume holds the
// restore's marker (another restore's does not count), and removes it.
func TestWaitRestored(t *testing.T) {
	dir := t.TempDir()
	for _, v := range []string{"data", "cache"} {
		if err := os.MkdirAll(filepath.Join(dir, v), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mark := func(vol, uid string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(dir, vol, DoneDir), 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, vol, DoneDir, uid), nil, 0o666); err != nil {
			t.Fatal(err)
		}
	}
	mark("data", "u1")
	mark("cache", "other-restore")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := WaitRestored(ctx, dir, "u1", 10*time.Millisecond, io.Discard); err == nil {
		t.Fatal("the wait ended with volume cache not restored for u1")
	}
	done := make(chan error, 1)
	go func() { done <- WaitRestored(context.Background(), dir, "u1", 10*time.Millisecond, io.Discard) }()
	select {
	case err := <-done:
		t.Fatalf("the wait ended (%v) before cache was marked", err)
	case <-time.After(50 * time.Millisecond):
	}
	mark("cache", "u1")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "data", DoneDir)); !os.IsNotExist(err) {
		t.Errorf("data's marker directory stayed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "cache", DoneDir, "other-restore")); err != nil {
		t.Errorf("another restore's marker was removed: %v", err)
	}
	if err := WaitRestored(context.Background(), t.TempDir(), "u1", time.Millisecond, io.Discard); err == nil {
		t.Error("a wait with no volume under its directory did not fail")
	}
}
