package kopiarepo

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kopia/kopia/repo"
	"github.com/kopia/kopia/repo/blob"
	"github.com/kopia/kopia/repo/format"
	"github.com/kopia/kopia/repo/maintenance"
)

// MinRetention is the shortest S3 Object Lock retention kopia puts on a
// repository's blobs: it refuses less than a day.
const MinRetention = 24 * time.Hour

// Retention is the S3 Object Lock retention a repository in an immutable
// location gives every blob it writes (kopia's blob storage
// configuration), and that its full maintenance renews on every blob
// still in use: deduplication has new backups lean on blobs written long
// before them, so a lock counted only from a blob's writing would lapse
// under a backup that still needs it.
type Retention struct {
	// Mode is GOVERNANCE or COMPLIANCE.
	Mode string
	// Period is how long from its writing, or from the last full
	// maintenance, a blob is locked.
	Period time.Duration
}

// RetentionOf is the retention of the repositories of a location whose
// objects are locked for retainFor in mode (empty: GOVERNANCE): the same
// mode and period, lengthened to MinRetention when shorter — a blob then
// stays locked longer than the location's own objects, never less.
func RetentionOf(mode string, retainFor time.Duration) (*Retention, error) {
	switch mode {
	case "":
		mode = string(blob.Governance)
	case string(blob.Governance), string(blob.Compliance):
	default:
		return nil, fmt.Errorf("object lock mode %q: want GOVERNANCE or COMPLIANCE", mode)
	}
	if retainFor <= 0 {
		return nil, fmt.Errorf("object lock retention %s: want a positive duration", retainFor)
	}
	return &Retention{Mode: mode, Period: max(retainFor, MinRetention)}, nil
}

// Locked tells whether a repository with a retention writes blob id (a
// name under the repository's prefix) locked: its packs, indexes and
// format are, kopia's own logs and maintenance schedule are not — losing
// them loses no data.
func Locked(id string) bool {
	for _, p := range repo.GetLockingStoragePrefixes() {
		if strings.HasPrefix(id, string(p)) {
			return true
		}
	}
	return false
}

func (r *Retention) blobConfig() format.BlobStorageConfiguration {
	if r == nil {
		return format.BlobStorageConfiguration{}
	}
	return format.BlobStorageConfiguration{RetentionMode: blob.RetentionMode(r.Mode), RetentionPeriod: r.Period}
}

// Retention is the retention the repository's blobs are written with
// (nil: none).
func (r *Repository) Retention(ctx context.Context) (*Retention, error) {
	dr, ok := r.rep.(repo.DirectRepository)
	if !ok {
		return nil, errors.New("reading a repository's retention needs a direct repository")
	}
	cfg, err := dr.FormatManager().BlobCfgBlob(ctx)
	if err != nil {
		return nil, fmt.Errorf("the repository's blob configuration: %w", err)
	}
	if !cfg.IsRetentionEnabled() {
		return nil, nil
	}
	return &Retention{Mode: string(cfg.RetentionMode), Period: cfg.RetentionPeriod}, nil
}

// Retain makes the repository write its blobs with want (nil: without a
// retention) and has its full maintenance renew the locks of the blobs in
// use when there is one. It says whether anything changed: the blobs
// already there take the retention at the next full maintenance, and
// clients opened before go on with the old configuration until reopened.
// A location made immutable after its repositories were, or no longer
// immutable, is followed this way by its maintenance.
func (r *Repository) Retain(ctx context.Context, want *Retention) (bool, error) {
	dr, ok := r.rep.(repo.DirectRepository)
	if !ok {
		return false, errors.New("setting a repository's retention needs a direct repository")
	}
	changed := false
	err := repo.DirectWriteSession(ctx, dr, repo.WriteSessionOptions{Purpose: "salvor retention"}, func(ctx context.Context, w repo.DirectRepositoryWriter) error {
		fm := w.FormatManager()
		have, err := fm.BlobCfgBlob(ctx)
		if err != nil {
			return fmt.Errorf("the repository's blob configuration: %w", err)
		}
		if cfg := want.blobConfig(); cfg != have {
			mp, err := fm.GetMutableParameters(ctx)
			if err != nil {
				return fmt.Errorf("the repository's parameters: %w", err)
			}
			features, err := fm.RequiredFeatures(ctx)
			if err != nil {
				return fmt.Errorf("the repository's required features: %w", err)
			}
			if err := fm.SetParameters(ctx, mp, cfg, features); err != nil {
				return fmt.Errorf("setting the repository's blob retention: %w", err)
			}
			changed = true
		}
		params, err := maintenance.GetParams(ctx, w)
		if err != nil {
			return fmt.Errorf("the repository's maintenance parameters: %w", err)
		}
		if params.ExtendObjectLocks != (want != nil) {
			params.ExtendObjectLocks = want != nil
			if err := maintenance.SetParams(ctx, w, params); err != nil {
				return fmt.Errorf("setting the repository's maintenance parameters: %w", err)
			}
			changed = true
		}
		return nil
	})
	return changed, err
}
