package persistence

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
)

// JournalEntry is work a backup's first pass started that lives outside
// Salvor — a plugin operation, a volume snapshot — written to the location
// the moment it starts. The first pass holds such work in memory until it
// ends; if the server dies before, the next attempt reads the journal and
// cancels or deletes what the lost attempt started, instead of orphaning it.
type JournalEntry struct {
	// Kind is "operation" (a BackupItemAction's) or "snapshot".
	Kind string `json:"kind"`
	// Plugin is the BackupItemAction that started an operation.
	Plugin string `json:"plugin,omitempty"`
	// Location is the VolumeSnapshotLocation of a snapshot.
	Location string `json:"location,omitempty"`
	// ID is the operation's or snapshot's ID.
	ID string `json:"id"`
	// Item names the item or volume, for messages.
	Item string `json:"item,omitempty"`
	// MAC authenticates the entry for its backup and location with the
	// server's journal key: whoever can write to the bucket can write a
	// journal entry, and one acted on would cancel or delete whatever it
	// names.
	MAC string `json:"mac,omitempty"`
	// Authentic is set by ReadJournal for an entry whose MAC this store's
	// journal key made.
	Authentic bool `json:"-"`
}

// SetJournalKey gives the store the key that authenticates the journal
// entries it writes and reads (kept in the cluster, never in the bucket).
// Without one, entries are written without a MAC and none read is
// authentic.
func (s *BackupStore) SetJournalKey(key []byte) { s.journalKey = key }

// journalMAC binds an entry to its backup and to this store's bucket and
// prefix, so that an entry copied from another backup or location is not
// authentic either.
func (s *BackupStore) journalMAC(name string, e JournalEntry) string {
	m := hmac.New(sha256.New, s.journalKey)
	for _, f := range []string{s.bucket, s.prefix, name, e.Kind, e.Plugin, e.Location, e.ID, e.Item} {
		fmt.Fprintf(m, "%d:%s", len(f), f)
	}
	return hex.EncodeToString(m.Sum(nil))
}

// Journal kinds.
const (
	JournalOperation = "operation"
	JournalSnapshot  = "snapshot"
)

func (s *BackupStore) journalPrefix(name string) string {
	return s.key("backups", name, "journal") + "/"
}

// Journal records an entry for backup name: one small object each, so
// concurrent workers never rewrite each other's.
func (s *BackupStore) Journal(ctx context.Context, name string, e JournalEntry) error {
	e.MAC = ""
	if s.journalKey != nil {
		e.MAC = s.journalMAC(name, e)
	}
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	sum := sha256.Sum256([]byte(e.Kind + "\x00" + e.Plugin + "\x00" + e.Location + "\x00" + e.ID))
	key := s.journalPrefix(name) + e.Kind + "-" + hex.EncodeToString(sum[:8]) + ".json"
	if err := s.store.PutObject(ctx, s.bucket, key, bytes.NewReader(b)); err != nil {
		return fmt.Errorf("journaling %s %s of backup %s: %w", e.Kind, e.ID, name, err)
	}
	return nil
}

// ReadJournal returns backup name's journal. An entry that does not parse
// is an error: the bucket is not trusted, and a guess could cancel or
// delete someone else's work. Only an entry marked Authentic was written
// with this store's journal key; no other may be acted on.
func (s *BackupStore) ReadJournal(ctx context.Context, name string) ([]JournalEntry, error) {
	keys, err := s.store.ListObjects(ctx, s.bucket, s.journalPrefix(name))
	if err != nil {
		return nil, fmt.Errorf("listing the journal of backup %s: %w", name, err)
	}
	var out []JournalEntry
	for _, k := range keys {
		var e JournalEntry
		if err := s.getJSON(ctx, k, false, journalEntryLimit, &e); err != nil {
			return nil, err
		}
		if (e.Kind != JournalOperation && e.Kind != JournalSnapshot) || e.ID == "" || strings.ContainsAny(e.ID, "\x00") {
			return nil, fmt.Errorf("journal entry %s of backup %s is not one Salvor writes", k, name)
		}
		e.Authentic = s.journalKey != nil && e.MAC != "" && hmac.Equal([]byte(e.MAC), []byte(s.journalMAC(name, e)))
		out = append(out, e)
	}
	return out, nil
}

// ClearJournal removes backup name's journal: its work is recorded
// elsewhere now, or was cancelled.
func (s *BackupStore) ClearJournal(ctx context.Context, name string) error {
	keys, err := s.store.ListObjects(ctx, s.bucket, s.journalPrefix(name))
	if err != nil {
		return fmt.Errorf("listing the journal of backup %s: %w", name, err)
	}
	for _, k := range keys {
		if err := s.store.DeleteObject(ctx, s.bucket, k); err != nil {
			return fmt.Errorf("deleting %s: %w", k, err)
		}
	}
	return nil
}
