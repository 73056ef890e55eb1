package s3

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// lock is S3 Object Lock as the store applies it, from Salvor's config
// keys objectLockMode (GOVERNANCE or COMPLIANCE) and objectLockRetainFor (a
// duration): every object is written with a retention until now plus
// that, and deleting an object removes its versions — which the bucket
// refuses while one is retained, so the delete fails saying until when.
type lock struct {
	mode      types.ObjectLockMode
	retainFor time.Duration
}

// ErrRetained wraps a delete refused because a version is retained.
var ErrRetained = errors.New("salvor: retained by S3 Object Lock")

func parseLock(cfg map[string]string) (lock, error) {
	mode, retain := cfg["objectLockMode"], cfg["objectLockRetainFor"]
	if mode == "" && retain == "" {
		return lock{}, nil
	}
	l := lock{mode: types.ObjectLockMode(mode)}
	switch l.mode {
	case types.ObjectLockModeGovernance, types.ObjectLockModeCompliance:
	default:
		return l, fmt.Errorf("config objectLockMode=%q: want GOVERNANCE or COMPLIANCE", mode)
	}
	d, err := time.ParseDuration(retain)
	if err != nil || d <= 0 {
		return l, fmt.Errorf("config objectLockRetainFor=%q: want a positive duration such as 720h", retain)
	}
	l.retainFor = d
	return l, nil
}

func (l lock) on() bool { return l.mode != "" }

func (l lock) put(in *s3.PutObjectInput, now time.Time) {
	if !l.on() {
		return
	}
	until := now.Add(l.retainFor)
	in.ObjectLockMode, in.ObjectLockRetainUntilDate = l.mode, &until
	// S3 wants an integrity checksum on writes with a retention.
	if in.ChecksumAlgorithm == "" {
		in.ChecksumAlgorithm = types.ChecksumAlgorithmCrc32
	}
}

// checkBucket refuses a bucket without Object Lock: retention cannot be
// set on its objects (it can only be turned on when a bucket is made).
func (s *Store) checkBucket(ctx context.Context, bucket string) error {
	out, err := s.client.GetObjectLockConfiguration(ctx, &s3.GetObjectLockConfigurationInput{Bucket: &bucket})
	var api smithy.APIError
	if errors.As(err, &api) && api.ErrorCode() == "ObjectLockConfigurationNotFoundError" {
		out, err = &s3.GetObjectLockConfigurationOutput{}, nil
	}
	if err != nil {
		return fmt.Errorf("bucket %s: reading its Object Lock configuration: %w (an immutable location needs a bucket made with Object Lock enabled)", bucket, err)
	}
	if out.ObjectLockConfiguration == nil || out.ObjectLockConfiguration.ObjectLockEnabled != types.ObjectLockEnabledEnabled {
		return fmt.Errorf("bucket %s does not have S3 Object Lock enabled; an immutable location needs a bucket made with it (it cannot be turned on later)", bucket)
	}
	return nil
}

// deleteVersions deletes every version of key, oldest retention first; a
// version still retained stops it with ErrRetained, saying until when.
func (s *Store) deleteVersions(ctx context.Context, bucket, key string) error {
	p := s3.NewListObjectVersionsPaginator(s.client, &s3.ListObjectVersionsInput{Bucket: &bucket, Prefix: &key})
	var ids []*string
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("listing the versions of s3://%s/%s: %w", bucket, key, err)
		}
		for _, v := range page.Versions {
			if aws.ToString(v.Key) == key {
				ids = append(ids, v.VersionId)
			}
		}
		for _, m := range page.DeleteMarkers {
			if aws.ToString(m.Key) == key {
				ids = append(ids, m.VersionId)
			}
		}
	}
	for _, id := range ids {
		_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &bucket, Key: &key, VersionId: id})
		if err == nil {
			continue
		}
		head, herr := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: &key, VersionId: id})
		if herr == nil {
			if why := retainedBecause(head.ObjectLockRetainUntilDate, head.ObjectLockLegalHoldStatus, time.Now()); why != "" {
				return fmt.Errorf("deleting s3://%s/%s: %w %s", bucket, key, ErrRetained, why)
			}
		}
		return fmt.Errorf("deleting s3://%s/%s version %s: %w", bucket, key, aws.ToString(id), err)
	}
	return nil
}

// clockSlack is how far this process's clock may run ahead of the S3
// server's. The server judges a retention by its own clock, and time passes
// between its refusal and the HeadObject that asks why; a refusal within
// this much of the retention's end is still the retention's.
const clockSlack = time.Minute

// retainedBecause says why a version whose delete the bucket refused is
// still held ("until <time>" or "by a legal hold"), or "" when its lock
// does not explain the refusal.
func retainedBecause(until *time.Time, hold types.ObjectLockLegalHoldStatus, now time.Time) string {
	if hold == types.ObjectLockLegalHoldStatusOn {
		return "by a legal hold"
	}
	if until != nil && until.After(now.Add(-clockSlack)) {
		return "until " + until.UTC().Format(time.RFC3339)
	}
	return ""
}
