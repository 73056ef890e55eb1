package kopiarepo

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/salvor-dev/salvor/internal/testbed"
)

func TestRetentionOf(t *testing.T) {
	for _, tc := range []struct {
		mode   string
		retain time.Duration
		want   *Retention
		err    string
	}{
		{mode: "", retain: 720 * time.Hour, want: &Retention{Mode: "GOVERNANCE", Period: 720 * time.Hour}},
		{mode: "COMPLIANCE", retain: 48 * time.Hour, want: &Retention{Mode: "COMPLIANCE", Period: 48 * time.Hour}},
		{mode: "GOVERNANCE", retain: time.Hour, want: &Retention{Mode: "GOVERNANCE", Period: MinRetention}},
		{mode: "NONE", retain: time.Hour, err: `object lock mode "NONE"`},
		{mode: "GOVERNANCE", retain: 0, err: "want a positive duration"},
	} {
		got, err := RetentionOf(tc.mode, tc.retain)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("RetentionOf(%q, %s) = %v, %v; want an error with %q", tc.mode, tc.retain, got, err, tc.err)
			}
			continue
		}
		if err != nil || *got != *tc.want {
			t.Errorf("RetentionOf(%q, %s) = %+v, %v; want %+v", tc.mode, tc.retain, got, err, tc.want)
		}
	}
}

// lockedBucket is a MinIO bucket with S3 Object Lock, as a location with
// immutability has, and a client that reads its objects' locks.
func lockedBucket(t *testing.T) (Location, *s3.Client) {
	minio := testbed.StartMinIO(t)
	client := s3.New(s3.Options{Region: "minio", BaseEndpoint: aws.String(minio.Endpoint), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(minio.AccessKey, minio.SecretKey, "")})
	if _, err := client.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String("locked"), ObjectLockEnabledForBucket: aws.Bool(true)}); err != nil {
		t.Fatal(err)
	}
	return Location{Provider: "salvor.dev/s3", Config: map[string]string{
		"bucket": "locked", "prefix": "backups", "region": "minio", "s3Url": minio.Endpoint, "credentialsFile": minio.CredentialsFile(t)}}, client
}

// locks reads the lock of the current version of every lockable blob of
// namespace ns's repository: blob name to the end of its retention (zero
// for none), failing on a mode other than mode.
func locks(t *testing.T, client *s3.Client, ns, mode string) map[string]time.Time {
	t.Helper()
	ctx := context.Background()
	prefix := "backups/kopia/" + ns + "/"
	out := map[string]time.Time{}
	pages := s3.NewListObjectsV2Paginator(client, &s3.ListObjectsV2Input{Bucket: aws.String("locked"), Prefix: aws.String(prefix)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Contents {
			name := strings.TrimPrefix(aws.ToString(o.Key), prefix)
			if !Locked(name) {
				continue
			}
			head, err := client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("locked"), Key: o.Key})
			if err != nil {
				t.Fatal(err)
			}
			if head.ObjectLockRetainUntilDate == nil {
				out[name] = time.Time{}
				continue
			}
			if head.ObjectLockMode != types.ObjectLockMode(mode) {
				t.Errorf("blob %s is locked in mode %q; want %s", name, head.ObjectLockMode, mode)
			}
			out[name] = *head.ObjectLockRetainUntilDate
		}
	}
	return out
}

// TestImmutableLocationLocksEveryBlob: a repository made in an immutable
// location writes its packs, indexes and format under the location's
// retention (kopia's minimum of a day when the location's is shorter).
func TestImmutableLocationLocksEveryBlob(t *testing.T) {
	loc, client := lockedBucket(t)
	ctx := context.Background()
	st, err := Storage(ctx, loc, "app", true)
	if err != nil {
		t.Fatal(err)
	}
	retention, err := RetentionOf("COMPLIANCE", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	r, err := Open(ctx, st, Options{Password: "pw", WorkDir: t.TempDir(), Create: true, Retention: retention})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(ctx)
	if _, err := r.Backup(ctx, volume(t), Source{Requester: DataMover, Name: "app/data"}, nil); err != nil {
		t.Fatal(err)
	}
	if got, err := r.Retention(ctx); err != nil || got == nil || *got != *retention {
		t.Errorf("the repository's retention = %+v, %v; want %+v", got, err, retention)
	}
	got := locks(t, client, "app", "COMPLIANCE")
	packs := 0
	for name, until := range got {
		if until.Before(start.Add(MinRetention - time.Minute)) {
			t.Errorf("blob %s is locked until %v; want at least a day from %v", name, until, start)
		}
		if name[0] == 'p' {
			packs++
		}
	}
	if packs == 0 || got["kopia.repository"].IsZero() || got["kopia.blobcfg"].IsZero() {
		t.Errorf("locked blobs %v: want the format and at least one pack of data", got)
	}
}

// TestRetainFollowsTheLocation: a repository made before its location was
// immutable takes the retention when its maintenance follows the location
// (Retain, then a full maintenance renews every blob in use), says so
// once, and lets it go again when the location no longer locks.
func TestRetainFollowsTheLocation(t *testing.T) {
	loc, client := lockedBucket(t)
	ctx := context.Background()
	open := func(create bool) *Repository {
		st, err := Storage(ctx, loc, "app", create)
		if err != nil {
			t.Fatal(err)
		}
		r, err := Open(ctx, st, Options{Password: "pw", WorkDir: t.TempDir(), Create: create})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close(ctx) })
		return r
	}
	r := open(true)
	if _, err := r.Backup(ctx, volume(t), Source{Requester: DataMover, Name: "app/data"}, nil); err != nil {
		t.Fatal(err)
	}
	for name, until := range locks(t, client, "app", "GOVERNANCE") {
		if !until.IsZero() {
			t.Fatalf("blob %s of a repository made without a retention is locked until %v", name, until)
		}
	}
	want := &Retention{Mode: "GOVERNANCE", Period: 48 * time.Hour}
	for i, wantChanged := range []bool{true, false} {
		changed, err := r.Retain(ctx, want)
		if err != nil || changed != wantChanged {
			t.Fatalf("Retain #%d = %v, %v; want %v", i+1, changed, err, wantChanged)
		}
	}
	r = open(false)
	start := time.Now()
	if err := r.Maintain(ctx, true, SafetyFull); err != nil {
		t.Fatal(err)
	}
	got := locks(t, client, "app", "GOVERNANCE")
	for name, until := range got {
		if until.Before(start.Add(want.Period - time.Minute)) {
			t.Errorf("after maintenance, blob %s is locked until %v; want at least %s from %v", name, until, want.Period, start)
		}
	}
	if len(got) < 3 {
		t.Errorf("lockable blobs %v: want the format and the data", got)
	}
	if changed, err := r.Retain(ctx, nil); err != nil || !changed {
		t.Fatalf("Retain(nil) = %v, %v; want a change", changed, err)
	}
	if got, err := open(false).Retention(ctx); err != nil || got != nil {
		t.Errorf("retention after the location stopped locking = %+v, %v; want none", got, err)
	}
}
