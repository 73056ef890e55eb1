package kopiarepo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/kopia/kopia/repo"
	"github.com/kopia/kopia/repo/blob"
	"github.com/kopia/kopia/repo/content"
	"github.com/kopia/kopia/repo/format"
)

// Velero's repositories are used as user "default" at host "default"; so
// are Salvor's, so snapshots and maintenance ownership match.
const (
	user = "default"
	host = "default"
)

// ErrWrongPassword is returned when a repository exists but the password
// does not open it.
var ErrWrongPassword = errors.New("salvor: the repository password does not open this kopia repository")

// ErrNoRepository is returned when Open is not allowed to create and the
// storage holds no repository.
var ErrNoRepository = errors.New("salvor: no kopia repository here")

// Options say how to open a repository.
type Options struct {
	// Password opens (or makes) the repository; it encrypts and
	// authenticates everything in it.
	Password string
	// WorkDir keeps the connection's config and caches (a mover pod's
	// emptyDir); it is made if missing and only its owner can read it.
	WorkDir string
	// Create makes the repository when the storage has none.
	Create bool
	// Retention, with Create, makes the repository write every blob under
	// an S3 Object Lock retention (an immutable location); Retain changes
	// it later.
	Retention *Retention
	// ReadOnly opens it for reads only (a ReadOnly location).
	ReadOnly bool
	// CacheDir keeps the metadata cache of opens for writing (empty, or
	// ReadOnly: none is kept). Opens of one repository may share it, one
	// after another or at once (kopia writes each cache file whole, under
	// a temporary name); it holds one repository's caches, never two
	// repositories'.
	CacheDir string
	// CacheBytes bounds the metadata cache: indexes and directory
	// listings (0: 512 MiB).
	CacheBytes int64
	// Now is kopia's clock (nil: the time): tests move it on rather than
	// wait for maintenance's margins.
	Now func() time.Time
}

// Repository is an open kopia repository.
type Repository struct {
	rep repo.Repository
}

// Open connects to the repository in st (closed with the repository),
// making it first when allowed and missing.
func Open(ctx context.Context, st blob.Storage, opt Options) (*Repository, error) {
	if opt.Password == "" {
		return nil, errors.New("kopia repository: empty password")
	}
	if err := os.MkdirAll(opt.WorkDir, 0o700); err != nil {
		return nil, fmt.Errorf("kopia work directory: %w", err)
	}
	configFile := filepath.Join(opt.WorkDir, "repository.config")
	// The repository's format is read from the storage on every open,
	// never from a cache an earlier open left: a repository made anew in
	// its place must not be taken for the one that was.
	for _, f := range []string{format.KopiaRepositoryBlobID, format.KopiaBlobCfgBlobID} {
		if opt.CacheDir == "" {
			break
		}
		if err := os.Remove(filepath.Join(opt.CacheDir, f)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("kopia cache: %w", err)
		}
	}
	cacheBytes := opt.CacheBytes
	if cacheBytes == 0 {
		cacheBytes = 512 << 20
	}
	if opt.Create {
		if err := Create(ctx, st, opt.Password, opt.Retention); err != nil {
			st.Close(ctx) //nolint:errcheck
			return nil, err
		}
	} else if _, err := st.GetMetadata(ctx, format.KopiaRepositoryBlobID); err != nil {
		st.Close(ctx) //nolint:errcheck
		if errors.Is(err, blob.ErrBlobNotFound) {
			return nil, ErrNoRepository
		}
		return nil, fmt.Errorf("reading kopia repository format: %w", err)
	}
	// The connection's config is written here rather than by kopia's
	// Connect: Connect opens the repository once to try the password and
	// the open below does it again, and each open derives the format key
	// with scrypt (about 0.2 s of a core).
	ci := st.ConnectionInfo()
	st.Close(ctx) //nolint:errcheck
	// No cache of file data: a restore reads each content once and a
	// backup reads none, so caching it only wrote every restored byte a
	// second time, to the cache's disk. Kopia keeps its metadata cache
	// (indexes, directory listings) only beside a content cache, so the
	// opens that keep one (CacheDir given, for writing: a node agent's
	// backups, whose next backup reads its parent's listings) get a small
	// content cache that a backup leaves empty; the others keep none.
	caching := &content.CachingOptions{}
	if opt.CacheDir != "" && !opt.ReadOnly {
		abs, err := filepath.Abs(opt.CacheDir)
		if err != nil {
			return nil, fmt.Errorf("kopia cache: %w", err)
		}
		caching = &content.CachingOptions{CacheDirectory: abs, ContentCacheSizeBytes: 1 << 20, MetadataCacheSizeBytes: cacheBytes}
	}
	lc := repo.LocalConfig{
		Storage:       &ci,
		Caching:       caching,
		ClientOptions: repo.ClientOptions{Hostname: host, Username: user, ReadOnly: opt.ReadOnly, Description: "salvor"}.ApplyDefaults(ctx, ""),
	}
	config, err := json.Marshal(lc)
	if err != nil {
		return nil, fmt.Errorf("kopia connection config: %w", err)
	}
	if err := os.WriteFile(configFile, config, 0o600); err != nil {
		return nil, fmt.Errorf("kopia connection config: %w", err)
	}
	rep, err := repo.Open(ctx, configFile, opt.Password, &repo.Options{TimeNowFunc: opt.Now})
	if err != nil {
		if errors.Is(err, repo.ErrInvalidPassword) {
			return nil, ErrWrongPassword
		}
		return nil, fmt.Errorf("opening kopia repository: %w", err)
	}
	return &Repository{rep: rep}, nil
}

// Create makes a kopia repository in st with password when st holds none
// (with retention, its blobs are written under an S3 Object Lock
// retention). Another mover may make it at the same moment: whoever loses
// the race leaves the winner's.
func Create(ctx context.Context, st blob.Storage, password string, retention *Retention) error {
	if password == "" {
		return errors.New("kopia repository: empty password")
	}
	_, err := st.GetMetadata(ctx, format.KopiaRepositoryBlobID)
	if err == nil {
		return nil
	}
	if !errors.Is(err, blob.ErrBlobNotFound) {
		return fmt.Errorf("reading kopia repository format: %w", err)
	}
	newOpt := &repo.NewRepositoryOptions{}
	if retention != nil {
		newOpt.RetentionMode, newOpt.RetentionPeriod = blob.RetentionMode(retention.Mode), retention.Period
	}
	if err := repo.Initialize(ctx, st, newOpt, password); err != nil && !errors.Is(err, repo.ErrAlreadyInitialized) {
		return fmt.Errorf("making kopia repository: %w", err)
	}
	return nil
}

// Close closes the repository.
func (r *Repository) Close(ctx context.Context) error { return r.rep.Close(ctx) }
