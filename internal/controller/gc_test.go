package controller

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestRetainedUntil: the time an object store's refusal names is read
// back through the words that cross the plugin boundary, and nothing else
// is taken for a retention.
func TestRetainedUntil(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		err  error
		want time.Time
		ok   bool
	}{
		{nil, time.Time{}, false},
		{errors.New("deleting backups/b/b.tar.gz: access denied"), time.Time{}, false},
		{fmt.Errorf("deleting the files of backup b: plugin salvor.dev/s3 (ObjectStore) DeleteObject: deleting s3://x/backups/b/velero-backup.json: retained by S3 Object Lock until %s", at.Format(time.RFC3339)), at, true},
		{fmt.Errorf("retained by S3 Object Lock until %s; more", at.Format(time.RFC3339)), at, true},
		{errors.New("retained by S3 Object Lock until soon"), time.Time{}, false},
	} {
		got, ok := retainedUntil(tc.err)
		if ok != tc.ok || !got.Equal(tc.want) {
			t.Errorf("%v: %v %v, want %v %v", tc.err, got, ok, tc.want, tc.ok)
		}
	}
}
