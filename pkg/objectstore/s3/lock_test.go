package s3

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/salvor-dev/salvor/internal/testbed"
)

// TestObjectLockOnMinIO: on a bucket made with Object Lock, every object is
// written with a retention; deleting one before it ends is refused (its
// retained version stays, not hidden behind a delete marker) and says
// until when; after it ends the delete removes every version. A bucket
// without Object Lock is refused at Init.
func TestObjectLockOnMinIO(t *testing.T) {
	minio := testbed.StartMinIO(t, "plain")
	ctx := context.Background()
	base := map[string]string{"region": "minio", "s3Url": minio.Endpoint, "s3ForcePathStyle": "true", "credentialsFile": minio.CredentialsFile(t)}
	admin := &Store{}
	if err := admin.Init(base); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("locked"), ObjectLockEnabledForBucket: aws.Bool(true)}); err != nil {
		t.Fatal(err)
	}
	cfg := func(bucket, retain string) map[string]string {
		c := map[string]string{"bucket": bucket, "objectLockMode": "GOVERNANCE", "objectLockRetainFor": retain}
		for k, v := range base {
			c[k] = v
		}
		return c
	}
	if err := (&Store{}).Init(cfg("plain", "1h")); err == nil || !strings.Contains(err.Error(), "bucket plain does not have S3 Object Lock enabled") {
		t.Errorf("a bucket without Object Lock: %v", err)
	}
	for _, bad := range []map[string]string{{"objectLockMode": "NONE", "objectLockRetainFor": "1h"}, {"objectLockMode": "GOVERNANCE", "objectLockRetainFor": "a while"}} {
		if _, err := parseLock(bad); err == nil {
			t.Errorf("config %v accepted", bad)
		}
	}

	s := &Store{}
	if err := s.Init(cfg("locked", "3s")); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := s.PutObjectWithContext(ctx, "locked", "backups/b1/b1.tar.gz", bytes.NewReader([]byte("tarball"))); err != nil {
		t.Fatal(err)
	}
	head, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("locked"), Key: aws.String("backups/b1/b1.tar.gz")})
	if err != nil || head.ObjectLockMode != types.ObjectLockModeGovernance || head.ObjectLockRetainUntilDate == nil ||
		head.ObjectLockRetainUntilDate.Before(start.Add(2*time.Second)) {
		t.Fatalf("the object's lock: %v until %v, %v", head.ObjectLockMode, head.ObjectLockRetainUntilDate, err)
	}
	until := *head.ObjectLockRetainUntilDate
	err = s.DeleteObjectWithContext(ctx, "locked", "backups/b1/b1.tar.gz")
	if !errors.Is(err, ErrRetained) || !strings.Contains(err.Error(), until.UTC().Format(time.RFC3339)) {
		t.Fatalf("deleting a retained object: %v", err)
	}
	if ok, err := s.ObjectExistsWithContext(ctx, "locked", "backups/b1/b1.tar.gz"); !ok || err != nil {
		t.Errorf("a refused delete hid the object: %v, %v", ok, err)
	}
	// The retention is the S3 server's clock: the delete goes through once
	// it has passed, not before.
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		err := s.DeleteObjectWithContext(ctx, "locked", "backups/b1/b1.tar.gz")
		if errors.Is(err, ErrRetained) {
			return false, nil
		}
		return true, err
	})
	if err != nil {
		t.Fatalf("deleting after the retention: %v", err)
	}
	if time.Now().Before(until) {
		t.Errorf("deleted at %s, before the retention's end %s", time.Now(), until)
	}
	versions, err := s.client.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String("locked")})
	if err != nil || len(versions.Versions)+len(versions.DeleteMarkers) != 0 {
		t.Errorf("left after the delete: %d versions, %d markers, %v", len(versions.Versions), len(versions.DeleteMarkers), err)
	}
}

// TestRetainedBecause: a refused delete is the lock's when a legal hold is
// on or the retention ends after now less the clock slack — the bucket's
// clock decides, so a retention that ended a moment ago on this clock
// still explains the refusal; one long over does not.
func TestRetainedBecause(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { u := now.Add(d); return &u }
	for _, tc := range []struct {
		name  string
		until *time.Time
		hold  types.ObjectLockLegalHoldStatus
		want  string
	}{
		{"retained ahead", at(time.Hour), "", "until 2026-12-07T13:00:00Z"},
		{"ended a moment ago here", at(-time.Second), "", "until 2026-12-07T11:59:59Z"},
		{"ended long ago", at(-2 * clockSlack), "", ""},
		{"no lock", nil, "", ""},
		{"legal hold", at(-time.Hour), types.ObjectLockLegalHoldStatusOn, "by a legal hold"},
		{"legal hold off", nil, types.ObjectLockLegalHoldStatusOff, ""},
	} {
		if got := retainedBecause(tc.until, tc.hold, now); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
