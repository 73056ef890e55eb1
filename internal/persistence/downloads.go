package persistence

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/salvor-dev/salvor/internal/encryption"
)

// An encrypted location's files are served to clients through copies
// under metadata/downloads/, each encrypted to the key of the client that
// asked and named by when it expires; SweepDownloads removes expired ones.

func (s *BackupStore) downloadsPrefix() string { return s.key("metadata", "downloads") + "/" }

// Encrypted tells whether the location's objects are encrypted.
func (s *BackupStore) Encrypted() bool {
	_, ok := s.store.(*encryption.Store)
	return ok
}

// SealedCopyURL reads the object at key (a BackupFile or RestoreFile key),
// writes it encrypted to recipient as a copy that expires after ttl, and
// returns a URL of the copy valid as long.
func (s *BackupStore) SealedCopyURL(ctx context.Context, key, recipient, id string, ttl time.Duration) (string, error) {
	enc, ok := s.store.(*encryption.Store)
	if !ok {
		return "", errors.New("the location is not encrypted")
	}
	if strings.ContainsAny(id, "/\\") || id == "" {
		return "", fmt.Errorf("download id %q is not a name", id)
	}
	rc, err := s.store.GetObject(ctx, s.bucket, key)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	sealed, err := encryption.ToRecipient(rc, recipient)
	if err != nil {
		return "", err
	}
	defer sealed.Close()
	copyKey := s.downloadsPrefix() + strconv.FormatInt(time.Now().Add(ttl).Unix(), 10) + "-" + id
	if err := enc.ObjectStore.PutObject(ctx, s.bucket, copyKey, sealed); err != nil {
		return "", fmt.Errorf("writing the download copy of %s: %w", key, err)
	}
	return enc.ObjectStore.CreateSignedURL(ctx, s.bucket, copyKey, ttl)
}

// SweepDownloads deletes the download copies whose time has passed.
func (s *BackupStore) SweepDownloads(ctx context.Context, now time.Time) error {
	enc, ok := s.store.(*encryption.Store)
	if !ok {
		return nil
	}
	keys, err := enc.ObjectStore.ListObjects(ctx, s.bucket, s.downloadsPrefix())
	if err != nil {
		return err
	}
	for _, k := range keys {
		at, _, _ := strings.Cut(strings.TrimPrefix(k, s.downloadsPrefix()), "-")
		if sec, err := strconv.ParseInt(at, 10, 64); err == nil && time.Unix(sec, 0).Before(now) {
			if err := enc.ObjectStore.DeleteObject(ctx, s.bucket, k); err != nil {
				return err
			}
		}
	}
	return nil
}
