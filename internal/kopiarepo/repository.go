package kopiarepo

import (
	"context"
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
	// CacheDir keeps the caches (empty: WorkDir/cache). Opens of one
	// repository may share it, one after another or at once (kopia
	// writes each cache file whole, under a temporary name); it holds
	// one repository's caches, never two repositories'.
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
	cacheDir := opt.CacheDir
	if cacheDir == "" {
		cacheDir = filepath.Join(opt.WorkDir, "cache")
	}
	// The repository's format is read from the storage on every open,
	// never from a cache an earlier open left: a repository made anew in
	// its place must not be taken for the one that was.
	for _, f := range []string{format.KopiaRepositoryBlobID, format.KopiaBlobCfgBlobID} {
		if err := os.Remove(filepath.Join(cacheDir, f)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("kopia cache: %w", err)
		}
	}
	cacheBytes := opt.CacheBytes
	if cacheBytes == 0 {
		cacheBytes = 512 << 20
	}
	connect := &repo.ConnectOptions{
		ClientOptions: repo.ClientOptions{Hostname: host, Username: user, ReadOnly: opt.ReadOnly, Description: "salvor"},
		CachingOptions: content.CachingOptions{
			CacheDirectory: cacheDir,
			// No cache of file data: a restore reads each content once
			// and a backup reads none, so caching it only wrote every
			// restored byte a second time, to the cache's disk.
			ContentCacheSizeBytes:  0,
			MetadataCacheSizeBytes: cacheBytes,
		},
	}
	err := repo.Connect(ctx, configFile, st, opt.Password, connect)
	if errors.Is(err, repo.ErrRepositoryNotInitialized) {
		if !opt.Create {
			st.Close(ctx) //nolint:errcheck
			return nil, ErrNoRepository
		}
		// Another mover may make it at the same moment: whoever loses
		// the race connects to the winner's.
		newOpt := &repo.NewRepositoryOptions{}
		if r := opt.Retention; r != nil {
			newOpt.RetentionMode, newOpt.RetentionPeriod = blob.RetentionMode(r.Mode), r.Period
		}
		if err := repo.Initialize(ctx, st, newOpt, opt.Password); err != nil && !errors.Is(err, repo.ErrAlreadyInitialized) {
			st.Close(ctx) //nolint:errcheck
			return nil, fmt.Errorf("making kopia repository: %w", err)
		}
		err = repo.Connect(ctx, configFile, st, opt.Password, connect)
	}
	if err != nil {
		st.Close(ctx) //nolint:errcheck
		if errors.Is(err, repo.ErrInvalidPassword) {
			return nil, ErrWrongPassword
		}
		return nil, fmt.Errorf("connecting to kopia repository: %w", err)
	}
	// Connect kept its own storage; the one it was given is done.
	st.Close(ctx) //nolint:errcheck
	rep, err := repo.Open(ctx, configFile, opt.Password, &repo.Options{TimeNowFunc: opt.Now})
	if err != nil {
		if errors.Is(err, repo.ErrInvalidPassword) {
			return nil, ErrWrongPassword
		}
		return nil, fmt.Errorf("opening kopia repository: %w", err)
	}
	return &Repository{rep: rep}, nil
}

// Close closes the repository.
func (r *Repository) Close(ctx context.Context) error { return r.rep.Close(ctx) }
