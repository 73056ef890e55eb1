package persistence

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestJournalEntriesAreAuthenticated: only an entry this store's journal
// key wrote, for this backup, reads as Authentic; one planted in the
// bucket, altered, copied from another backup, or read without the key
// does not.
func TestJournalEntriesAreAuthenticated(t *testing.T) {
	ctx := context.Background()
	s, fs := newStore(t, "pfx")
	s.SetJournalKey(bytes.Repeat([]byte{7}, 32))
	if err := s.Journal(ctx, "b1", JournalEntry{Kind: JournalSnapshot, Location: "local", ID: "snap-1", Item: "persistentvolume pv"}); err != nil {
		t.Fatal(err)
	}
	put := func(key, body string) {
		t.Helper()
		if err := fs.PutObject(ctx, "bkt", key, strings.NewReader(body)); err != nil {
			t.Fatal(err)
		}
	}
	keys, err := fs.ListObjects(ctx, "bkt", "pfx/backups/b1/journal/")
	if err != nil || len(keys) != 1 {
		t.Fatalf("journal keys %v, %v", keys, err)
	}
	rc, err := fs.GetObject(ctx, "bkt", keys[0])
	if err != nil {
		t.Fatal(err)
	}
	var genuine bytes.Buffer
	_, _ = genuine.ReadFrom(rc)
	rc.Close()
	put("pfx/backups/b1/journal/snapshot-planted.json", `{"kind":"snapshot","location":"local","id":"someone-elses"}`)
	put("pfx/backups/b1/journal/snapshot-altered.json", strings.Replace(genuine.String(), "snap-1", "snap-2", 1))
	put("pfx/backups/b2/journal/snapshot-copied.json", genuine.String())

	authentic := func(s *BackupStore, name string) map[string]bool {
		t.Helper()
		entries, err := s.ReadJournal(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, e := range entries {
			out[e.ID] = e.Authentic
		}
		return out
	}
	if got := authentic(s, "b1"); len(got) != 3 || !got["snap-1"] || got["someone-elses"] || got["snap-2"] {
		t.Errorf("b1's journal: %v, want only snap-1 authentic", got)
	}
	if got := authentic(s, "b2"); len(got) != 1 || got["snap-1"] {
		t.Errorf("an entry copied into b2's journal: %v, want it not authentic", got)
	}
	if got := authentic(New(fs, "bkt", "pfx"), "b1"); got["snap-1"] {
		t.Errorf("read without the key: %v, want nothing authentic", got)
	}
}
