package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/testbed"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// s3Client is a plain S3 client of the MinIO, as someone holding the
// bucket's keys has.
func s3Client(t *testing.T, minio *testbed.MinIO) *s3.Client {
	t.Helper()
	cfg, err := config.LoadDefaultConfig(context.Background(), config.WithRegion("minio"),
		config.WithSharedCredentialsFiles([]string{minio.CredentialsFile(t)}))
	if err != nil {
		t.Fatal(err)
	}
	return s3.NewFromConfig(cfg, func(o *s3.Options) { o.BaseEndpoint, o.UsePathStyle = aws.String(minio.Endpoint), true })
}

// TestImmutableLocation: on a bucket made with S3 Object Lock, a location
// with --immutable-for writes every object of a backup with a retention;
// someone with the bucket's keys cannot delete a retained version; deleting
// the backup waits, saying until when, runs nothing meanwhile, and removes
// every version once the retention ends. A location on a bucket without
// Object Lock is Unavailable, saying why.
func TestImmutableLocation(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "plain")
	raw := s3Client(t, minio)
	ctx := context.Background()
	if _, err := raw.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("locked"), ObjectLockEnabledForBucket: aws.Bool(true)}); err != nil {
		t.Fatal(err)
	}
	c.startServer(t, "--item-operation-sync-frequency", "1s")
	const retain = 30 * time.Second
	c.s3Location(t, minio, "locked", "locked", true, "--immutable-for", retain.String())
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kept"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: "kept"}, Data: map[string]string{"k": "v"}})
	// A backup that would outlive its retention is refused.
	_, _ = c.salvor(t, "backup", "create", "too-long", "--include-namespaces", "kept", "--ttl", "1h")
	if b := c.waitBackup(t, "too-long", salvorv1.BackupPhaseFailedValidation, salvorv1.BackupPhaseCompleted); !strings.Contains(strings.Join(b.Status.ValidationErrors, " "),
		"ttl 1h0m0s is longer than location locked's immutability.retainFor 30s: the backup would be deletable before it expires") {
		t.Errorf("a backup whose ttl outlives the retention: %s %q", b.Status.Phase, b.Status.ValidationErrors)
	}
	// The plain command works there: a backup with no ttl is kept as long
	// as the location locks it (the server's default, 720h, is longer).
	c.mustSalvor(t, "backup", "create", "kept", "--include-namespaces", "kept", "--wait")
	b := c.getBackup(t, "kept")
	if b.Status.Phase != salvorv1.BackupPhaseCompleted || b.Status.Expiration == nil || b.Status.Expiration.Sub(b.Status.StartTimestamp.Time) != retain {
		t.Fatalf("a backup with no ttl in an immutable location: %s, expires %v (started %v)", b.Status.Phase, b.Status.Expiration, b.Status.StartTimestamp)
	}

	list, err := raw.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String("locked"), Prefix: aws.String("backups/kept/")})
	if err != nil || len(list.Versions) < 7 {
		t.Fatalf("the backup's objects: %d, %v", len(list.Versions), err)
	}
	var latest time.Time
	for _, v := range list.Versions {
		head, err := raw.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("locked"), Key: v.Key, VersionId: v.VersionId})
		if err != nil || head.ObjectLockMode != types.ObjectLockModeGovernance || head.ObjectLockRetainUntilDate == nil ||
			head.ObjectLockRetainUntilDate.Before(b.CreationTimestamp.Add(retain)) {
			t.Errorf("object %s: lock %q until %v (%v); want GOVERNANCE until at least %s", aws.ToString(v.Key), head.ObjectLockMode, head.ObjectLockRetainUntilDate, err, b.CreationTimestamp.Add(retain))
			continue
		}
		if head.ObjectLockRetainUntilDate.After(latest) {
			latest = *head.ObjectLockRetainUntilDate
		}
		// Ransomware with the bucket's keys: the version cannot go.
		if _, err := raw.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("locked"), Key: v.Key, VersionId: v.VersionId}); err == nil {
			t.Errorf("a retained version of %s was deleted through S3", aws.ToString(v.Key))
		}
	}

	// A backup whose plugin operation runs on after its first pass: its
	// files change until it finalizes, yet each object is written once.
	c.create(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "op", Namespace: "kept", Annotations: opMap("2", false)}})
	c.mustSalvor(t, "backup", "create", "with-op", "--include-namespaces", "kept", "--ttl", retain.String(), "--wait")
	if b := c.getBackup(t, "with-op"); b.Status.Phase != salvorv1.BackupPhaseCompleted || b.Status.BackupItemOperationsCompleted != 1 {
		t.Fatalf("backup with an operation: %s, %d operations completed", b.Status.Phase, b.Status.BackupItemOperationsCompleted)
	}
	ops, err := raw.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String("locked"), Prefix: aws.String("backups/with-op/")})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, v := range ops.Versions {
		seen[aws.ToString(v.Key)]++
	}
	for k, n := range seen {
		if n != 1 || strings.Contains(k, "/journal/") {
			t.Errorf("object %s: %d versions", k, n)
		}
	}
	if len(seen) < 8 || len(ops.DeleteMarkers) != 0 {
		t.Errorf("the backup with an operation wrote %v and %d delete markers", seen, len(ops.DeleteMarkers))
	}
	if out := c.mustSalvor(t, "backup", "verify", "with-op"); !strings.Contains(out, "Verification: Passed") {
		t.Errorf("verify of the backup with an operation:\n%s", out)
	}
	c.mustSalvor(t, "restore", "create", "with-op", "--from-backup", "with-op", "--namespace-mappings", "kept:kept-copy", "--wait")

	c.mustSalvor(t, "backup", "delete", "kept")
	eventually(t, "the deletion waiting for the retention", time.Minute, func() (bool, string) {
		b = c.getBackup(t, "kept")
		return b.Status.Phase == salvorv1.BackupPhaseDeleting && strings.Contains(b.Status.DeletionBlocked, "retained by the location's Object Lock until"), b.Status.DeletionBlocked
	})
	if out := c.mustSalvor(t, "backup", "describe", "kept"); !strings.Contains(out, "; waits — its objects are retained by the location's Object Lock until") {
		t.Errorf("describe of a backup whose deletion waits:\n%s", out)
	}
	gone := time.Time{}
	eventually(t, "the backup gone once its retention ended", 2*time.Minute, func() (bool, string) {
		err := c.client.Get(ctx, client.ObjectKey{Namespace: "salvor", Name: "kept"}, &salvorv1.Backup{})
		if apierrors.IsNotFound(err) {
			gone = time.Now()
			return true, ""
		}
		return false, errString(err)
	})
	if gone.Before(latest) {
		t.Errorf("the backup went at %s, before its objects' retention ended at %s", gone, latest)
	}
	list, err = raw.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String("locked"), Prefix: aws.String("backups/kept/")})
	if err != nil || len(list.Versions)+len(list.DeleteMarkers) != 0 {
		t.Errorf("left in the bucket: %d versions, %d delete markers, %v", len(list.Versions), len(list.DeleteMarkers), err)
	}

	// A bucket without Object Lock cannot hold an immutable location.
	c.s3LocationNoWait(t, minio, "not-locked", "plain", "--immutable-for", "1h")
	eventually(t, "the location refused", time.Minute, func() (bool, string) {
		bsl := &salvorv1.BackupStorageLocation{}
		if err := c.client.Get(ctx, client.ObjectKey{Namespace: "salvor", Name: "not-locked"}, bsl); err != nil {
			return false, err.Error()
		}
		return bsl.Status.Phase == salvorv1.BackupStorageLocationPhaseUnavailable && strings.Contains(bsl.Status.Message, "does not have S3 Object Lock enabled"), bsl.Status.Message
	})
}
