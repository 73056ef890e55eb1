package kopiarepo

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kopia/kopia/fs"
	"github.com/kopia/kopia/fs/localfs"
	"github.com/kopia/kopia/repo"
	"github.com/kopia/kopia/repo/blob"
	"github.com/kopia/kopia/repo/maintenance"
	"github.com/kopia/kopia/repo/manifest"
	"github.com/kopia/kopia/snapshot"
	"github.com/kopia/kopia/snapshot/policy"
	"github.com/kopia/kopia/snapshot/restore"
	"github.com/kopia/kopia/snapshot/snapshotfs"
	"github.com/kopia/kopia/snapshot/snapshotmaintenance"
	"github.com/kopia/kopia/snapshot/upload"
)

// Requesters, as Velero tags its snapshots (tag "snapshot-requester") and
// prefixes their source paths: a backup looks for its parent among
// snapshots of the same requester only.
const (
	DataMover = "snapshot-data-upload-download"
	PodVolume = "snapshot-pod-volume"

	requesterTag = "snapshot-requester"
	uploaderTag  = "snapshot-uploader"
	uploaderName = "kopia"
)

// Source names what is backed up: the requester and the volume's real
// name (namespace/claim for the data mover), as Velero names it.
type Source struct {
	Requester string
	Name      string
	// Tags go onto the snapshot (Velero: the async operation ID).
	Tags map[string]string
}

func (s Source) info() snapshot.SourceInfo {
	return snapshot.SourceInfo{Host: host, UserName: user, Path: s.Path()}
}

// Path is the source's path in the repository, as its snapshots record it.
func (s Source) Path() string { return s.Requester + "/" + uploaderName + "/" + s.Name }

// Progress is how far a backup or restore has come.
type Progress struct {
	// TotalBytes is what the volume holds (an estimate until it is done).
	TotalBytes int64
	// BytesDone is what has been read (backup) or written (restore).
	BytesDone int64
}

// BackupResult is what a backup made.
type BackupResult struct {
	SnapshotID string
	// TotalBytes is the size of the files backed up.
	TotalBytes int64
	// IncrementalBytes is what this backup wrote into the bucket: its new
	// chunks after deduplication and compression, and metadata.
	IncrementalBytes int64
	// Parent is the snapshot it was made incrementally against, if any.
	Parent string
}

// Backup snapshots the directory dir as src, incrementally against the
// newest complete snapshot of the same source and requester. progress is
// called now and then from another goroutine.
func (r *Repository) Backup(ctx context.Context, dir string, src Source, progress func(Progress)) (BackupResult, error) {
	var res BackupResult
	entry, err := localfs.Directory(filepath.Clean(dir))
	if err != nil {
		return res, fmt.Errorf("volume directory %s: %w", dir, err)
	}
	si := src.info()
	tags := map[string]string{}
	for k, v := range src.Tags {
		tags[k] = v
	}
	tags[requesterTag], tags[uploaderTag] = src.Requester, uploaderName
	var uploaded atomic.Int64
	opt := repo.WriteSessionOptions{Purpose: "salvor backup " + si.Path, OnUpload: func(n int64) { uploaded.Add(n) }}
	err = repo.WriteSession(ctx, r.rep, opt, func(ctx context.Context, w repo.RepositoryWriter) error {
		if err := policy.SetPolicy(ctx, w, si, backupPolicy()); err != nil {
			return fmt.Errorf("setting policy: %w", err)
		}
		tree, err := policy.TreeForSource(ctx, w, si)
		if err != nil {
			return fmt.Errorf("reading policy: %w", err)
		}
		parent, err := r.parent(ctx, si, src.Requester)
		if err != nil {
			return err
		}
		var previous []*snapshot.Manifest
		if parent != nil {
			previous = append(previous, parent)
			res.Parent = string(parent.ID)
		}
		u := upload.NewUploader(w)
		u.FailFast = true
		u.ParallelUploads = runtime.NumCPU()
		counter := &uploadProgress{report: progress}
		u.Progress = counter
		stop := context.AfterFunc(ctx, u.Cancel)
		defer stop()
		man, err := u.Upload(ctx, entry, tree, si, previous...)
		if err != nil {
			return fmt.Errorf("uploading %s: %w", dir, err)
		}
		if man.IncompleteReason != "" {
			return fmt.Errorf("uploading %s: incomplete (%s)", dir, man.IncompleteReason)
		}
		if man.RootEntry != nil && man.RootEntry.DirSummary != nil && man.RootEntry.DirSummary.FatalErrorCount > 0 {
			return fmt.Errorf("uploading %s: %d files could not be read", dir, man.RootEntry.DirSummary.FatalErrorCount)
		}
		man.Tags = tags
		man.Description = "salvor " + src.Requester
		id, err := snapshot.SaveSnapshot(ctx, w, man)
		if err != nil {
			return fmt.Errorf("saving snapshot: %w", err)
		}
		res.SnapshotID = string(id)
		res.TotalBytes = man.Stats.TotalFileSize
		return nil
	})
	if err != nil {
		return BackupResult{}, fmt.Errorf("kopia backup of %s: %w", si.Path, err)
	}
	res.IncrementalBytes = uploaded.Load()
	if progress != nil {
		progress(Progress{TotalBytes: res.TotalBytes, BytesDone: res.TotalBytes})
	}
	return res, nil
}

// partSize is how a file larger than it is cut for upload: into parts of
// this size at fixed offsets, each chunked, hashed, compressed and
// encrypted on its own core (kopia's parallelUploadAboveSize policy; its
// own default is 2 GiB, so a volume's one large file — a disk image, a
// database's data file — would use one core). The offsets are the same in
// every backup of the file, so its next backup still deduplicates against
// this one: only a chunk that straddled a part's start is cut short.
var partSize int64 = 64 << 20

// backupPolicy keeps every snapshot (Salvor deletes them with their
// backups, not by kopia's retention), compresses, snapshots only when
// asked, as Velero's does, and uploads a large file's parts at once.
func backupPolicy() *policy.Policy {
	keep := policy.OptionalInt(math.MaxInt32)
	never := policy.OptionalBool(true)
	parts := policy.OptionalInt64(partSize)
	return &policy.Policy{
		UploadPolicy: policy.UploadPolicy{ParallelUploadAboveSize: &parts},
		RetentionPolicy: policy.RetentionPolicy{
			KeepLatest: &keep, KeepHourly: &keep, KeepDaily: &keep, KeepWeekly: &keep, KeepMonthly: &keep, KeepAnnual: &keep,
		},
		CompressionPolicy:   policy.CompressionPolicy{CompressorName: "zstd-fastest"},
		SchedulingPolicy:    policy.SchedulingPolicy{Manual: true},
		ErrorHandlingPolicy: policy.ErrorHandlingPolicy{IgnoreUnknownTypes: &never},
	}
}

// parent is the newest complete snapshot of si made for the same
// requester by kopia, or nil.
func (r *Repository) parent(ctx context.Context, si snapshot.SourceInfo, requester string) (*snapshot.Manifest, error) {
	list, err := snapshot.ListSnapshots(ctx, r.rep, si)
	if err != nil {
		return nil, fmt.Errorf("listing snapshots of %s: %w", si.Path, err)
	}
	var best *snapshot.Manifest
	for _, m := range list {
		if m.IncompleteReason != "" || m.Tags[requesterTag] != requester || m.Tags[uploaderTag] != uploaderName {
			continue
		}
		if best == nil || m.StartTime.After(best.StartTime) {
			best = m
		}
	}
	return best, nil
}

// uploadProgress turns kopia's upload events into Progress.
type uploadProgress struct {
	upload.NullUploadProgress
	report         func(Progress)
	total, done    atomic.Int64
	lastReportUnix atomic.Int64
	// reporting serializes report: kopia hashes files on several
	// goroutines, and the callback is not asked to be safe for that.
	reporting sync.Mutex
}

func (p *uploadProgress) Enabled() bool { return p.report != nil }

func (p *uploadProgress) EstimatedDataSize(_, totalBytes int64) {
	p.total.Store(totalBytes)
	p.maybeReport()
}

func (p *uploadProgress) HashedBytes(n int64) {
	p.done.Add(n)
	p.maybeReport()
}

func (p *uploadProgress) CachedFile(_ string, n int64) {
	p.done.Add(n)
	p.maybeReport()
}

// maybeReport reports at most once a second.
func (p *uploadProgress) maybeReport() {
	if p.report == nil {
		return
	}
	now := time.Now().Unix()
	last := p.lastReportUnix.Load()
	if now == last || !p.lastReportUnix.CompareAndSwap(last, now) {
		return
	}
	p.reporting.Lock()
	defer p.reporting.Unlock()
	p.report(Progress{TotalBytes: max(p.total.Load(), p.done.Load()), BytesDone: p.done.Load()})
}

// Snapshot is a snapshot in the repository, as Describe and List show it.
type Snapshot struct {
	ID         string
	Path       string
	Requester  string
	Tags       map[string]string
	StartTime  time.Time
	TotalBytes int64
}

// Snapshots lists the complete snapshots of every source, oldest first.
func (r *Repository) Snapshots(ctx context.Context) ([]Snapshot, error) {
	sources, err := snapshot.ListSources(ctx, r.rep)
	if err != nil {
		return nil, fmt.Errorf("listing sources: %w", err)
	}
	var out []Snapshot
	for _, si := range sources {
		list, err := snapshot.ListSnapshots(ctx, r.rep, si)
		if err != nil {
			return nil, fmt.Errorf("listing snapshots of %s: %w", si.Path, err)
		}
		for _, m := range list {
			if m.IncompleteReason != "" {
				continue
			}
			out = append(out, Snapshot{ID: string(m.ID), Path: si.Path, Requester: m.Tags[requesterTag], Tags: m.Tags, StartTime: m.StartTime.ToTime(), TotalBytes: m.Stats.TotalFileSize})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].StartTime.Before(out[j].StartTime) })
	return out, nil
}

// ErrNoSnapshot is returned for a snapshot ID the repository does not hold.
var ErrNoSnapshot = errors.New("salvor: no such snapshot in the kopia repository")

func (r *Repository) load(ctx context.Context, id string) (*snapshot.Manifest, error) {
	if id == "" || len(id) > 128 {
		return nil, fmt.Errorf("snapshot ID %q: %w", id, ErrNoSnapshot)
	}
	man, err := snapshot.LoadSnapshot(ctx, r.rep, manifest.ID(id))
	if errors.Is(err, snapshot.ErrSnapshotNotFound) || errors.Is(err, manifest.ErrNotFound) {
		return nil, fmt.Errorf("snapshot %s: %w", id, ErrNoSnapshot)
	}
	if err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", id, err)
	}
	return man, nil
}

// Restore writes snapshot id into the directory dest (made if missing),
// replacing what is there under the snapshot's names; progress is called
// now and then. It returns the bytes written.
func (r *Repository) Restore(ctx context.Context, id, dest string, progress func(Progress)) (int64, error) {
	man, err := r.load(ctx, id)
	if err != nil {
		return 0, err
	}
	root, err := snapshotfs.SnapshotRoot(r.rep, man)
	if err != nil {
		return 0, fmt.Errorf("snapshot %s: %w", id, err)
	}
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return 0, fmt.Errorf("restore target %s: %w", dest, err)
	}
	out := &mountOutput{FilesystemOutput: &restore.FilesystemOutput{
		TargetPath:           filepath.Clean(dest),
		OverwriteDirectories: true,
		OverwriteFiles:       true,
		OverwriteSymlinks:    true,
		// Files are written in place, not under a temporary name renamed
		// over: no one reads the target until the restore has ended (a
		// mover's new volume is bound only then, a pod's volume is
		// released by the marker written after), and a restore cut short
		// is done again whole, every file overwritten. The rename cost a
		// restore of 100,000 small files about a sixth of its time.
		WriteFilesAtomically: false,
		FlushFiles:           flushEachFile,
	}}
	if err := out.Init(ctx); err != nil {
		return 0, fmt.Errorf("restore target %s: %w", dest, err)
	}
	total := man.Stats.TotalFileSize
	cancel := make(chan struct{})
	stop := context.AfterFunc(ctx, func() { close(cancel) })
	defer stop()
	var last time.Time
	stats, err := restore.Entry(ctx, r.rep, out, root, restore.Options{
		Parallel: restoreParallel(),
		Cancel:   cancel,
		// Every depth in full: kopia otherwise leaves placeholders
		// below this depth (its "shallow" restore).
		RestoreDirEntryAtDepth: math.MaxInt32,
		ProgressCallback: func(_ context.Context, s restore.Stats) {
			if progress != nil && time.Since(last) >= time.Second {
				last = time.Now()
				progress(Progress{TotalBytes: total, BytesDone: s.RestoredTotalFileSize + s.SkippedTotalFileSize})
			}
		},
	})
	if err != nil {
		return 0, fmt.Errorf("restoring snapshot %s into %s: %w", id, dest, err)
	}
	if ctx.Err() != nil {
		return 0, fmt.Errorf("restoring snapshot %s into %s: %w", id, dest, ctx.Err())
	}
	// Durable before the volume is handed to its claim.
	if err := flushTarget(dest); err != nil {
		return 0, fmt.Errorf("flushing snapshot %s restored into %s: %w", id, dest, err)
	}
	if progress != nil {
		progress(Progress{TotalBytes: total, BytesDone: stats.RestoredTotalFileSize})
	}
	return stats.RestoredTotalFileSize, nil
}

// restoreParallel is how many files a restore writes at once: at least
// kopia's CLI's default of 8, since a restore mostly waits (on the store's
// reads and on the target's metadata writes), not on the cores.
func restoreParallel() int {
	return max(8, runtime.NumCPU())
}

// Forget deletes snapshot id (its data goes at the next full maintenance).
// A snapshot that is not there is not an error: it is gone either way.
func (r *Repository) Forget(ctx context.Context, id string) error {
	if _, err := r.load(ctx, id); errors.Is(err, ErrNoSnapshot) {
		return nil
	} else if err != nil {
		return err
	}
	return repo.WriteSession(ctx, r.rep, repo.WriteSessionOptions{Purpose: "salvor forget " + id}, func(ctx context.Context, w repo.RepositoryWriter) error {
		return w.DeleteManifest(ctx, manifest.ID(id))
	})
}

// Safety is how cautious full maintenance is about freeing data.
type Safety string

const (
	// SafetyFull keeps kopia's margins: data of forgotten snapshots is
	// freed a day or more later, and uploads may run meanwhile.
	SafetyFull Safety = "full"
	// SafetyNone frees it at once; nothing else may write the repository
	// while it runs (the server keeps uploads apart from it).
	SafetyNone Safety = "none"
)

// ParseSafety reads a --repo-maintenance-safety value.
func ParseSafety(s string) (Safety, error) {
	switch Safety(s) {
	case SafetyFull, SafetyNone:
		return Safety(s), nil
	}
	return "", fmt.Errorf("repository maintenance safety %q: want full or none", s)
}

// Maintain runs kopia's quick maintenance, or full maintenance (which
// frees the space of forgotten snapshots once safety allows).
func (r *Repository) Maintain(ctx context.Context, full bool, safety Safety) error {
	dr, ok := r.rep.(repo.DirectRepository)
	if !ok {
		return errors.New("kopia maintenance needs a direct repository")
	}
	mode := maintenance.ModeQuick
	if full {
		mode = maintenance.ModeFull
	}
	params := maintenance.SafetyFull
	if safety == SafetyNone {
		params = maintenance.SafetyNone
	}
	return repo.DirectWriteSession(ctx, dr, repo.WriteSessionOptions{Purpose: "salvor maintenance"}, func(ctx context.Context, w repo.DirectRepositoryWriter) error {
		return snapshotmaintenance.Run(ctx, w, mode, true, params)
	})
}

// Size is the total size of the repository's blobs.
func (r *Repository) Size(ctx context.Context) (int64, error) {
	dr, ok := r.rep.(repo.DirectRepository)
	if !ok {
		return 0, errors.New("measuring a repository needs a direct repository")
	}
	var total int64
	err := dr.BlobReader().ListBlobs(ctx, "", func(bm blob.Metadata) error {
		total += bm.Length
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("listing the repository's blobs: %w", err)
	}
	return total, nil
}

// ErrAmbiguous is returned when more than one snapshot answers a Find.
var ErrAmbiguous = errors.New("salvor: more than one kopia snapshot matches")

// Find returns the complete snapshot of src whose tags include every one
// of src.Tags, made for src.Requester: how a restore finds the data of a
// backup's volume inside the repository, whose manifests the password
// authenticates, rather than trusting an ID read from the bucket.
func (r *Repository) Find(ctx context.Context, src Source) (Snapshot, error) {
	si := src.info()
	list, err := snapshot.ListSnapshots(ctx, r.rep, si)
	if err != nil {
		return Snapshot{}, fmt.Errorf("listing snapshots of %s: %w", si.Path, err)
	}
	var found []Snapshot
	for _, m := range list {
		if m.IncompleteReason != "" || m.Tags[requesterTag] != src.Requester {
			continue
		}
		match := true
		for k, v := range src.Tags {
			if m.Tags[k] != v {
				match = false
				break
			}
		}
		if match {
			found = append(found, Snapshot{ID: string(m.ID), Path: si.Path, Requester: src.Requester, Tags: m.Tags,
				StartTime: m.StartTime.ToTime(), TotalBytes: m.Stats.TotalFileSize})
		}
	}
	switch len(found) {
	case 0:
		return Snapshot{}, fmt.Errorf("%s tagged %v: %w", si.Path, src.Tags, ErrNoSnapshot)
	case 1:
		return found[0], nil
	}
	return Snapshot{}, fmt.Errorf("%s tagged %v: %d snapshots: %w", si.Path, src.Tags, len(found), ErrAmbiguous)
}

// Check finds the snapshot of src, as a restore would, and walks it as
// kopia's snapshot verify does: every directory is read back, and every
// file's contents are in the index and in a pack blob the location holds.
// File data is not read (a restore does that); what a restore would miss
// is found.
func (r *Repository) Check(ctx context.Context, src Source) (Snapshot, error) {
	snap, err := r.Find(ctx, src)
	if err != nil {
		return snap, err
	}
	man, err := r.load(ctx, snap.ID)
	if err != nil {
		return snap, err
	}
	root, err := snapshotfs.SnapshotRoot(r.rep, man)
	if err != nil {
		return snap, fmt.Errorf("snapshot %s: its root: %w", snap.ID, err)
	}
	opts := snapshotfs.VerifierOptions{Parallelism: 4, MaxErrors: 1}
	if dr, ok := r.rep.(repo.DirectRepository); ok {
		if opts.BlobMap, err = blob.ReadBlobMap(ctx, dr.BlobReader()); err != nil {
			return snap, fmt.Errorf("snapshot %s: listing the repository's blobs: %w", snap.ID, err)
		}
	}
	v := snapshotfs.NewVerifier(ctx, r.rep, opts)
	res, err := v.InParallel(ctx, func(tw *snapshotfs.TreeWalker) error { return tw.Process(ctx, root, ".") })
	if err == nil && res.ErrorCount > 0 {
		err = errors.New(strings.Join(res.ErrorStrings, "; "))
	}
	if err != nil {
		return snap, fmt.Errorf("snapshot %s: %w", snap.ID, err)
	}
	return snap, nil
}

// Describe returns snapshot id, as Snapshots lists it.
func (r *Repository) Describe(ctx context.Context, id string) (Snapshot, error) {
	m, err := r.load(ctx, id)
	if err != nil {
		return Snapshot{}, err
	}
	return Snapshot{ID: string(m.ID), Path: m.Source.Path, Requester: m.Tags[requesterTag], Tags: m.Tags,
		StartTime: m.StartTime.ToTime(), TotalBytes: m.Stats.TotalFileSize}, nil
}

// mountOutput writes a snapshot into a directory that may be a volume's
// mount point. kopia's FilesystemOutput, when it finishes a directory,
// removes a placeholder beside it (name.kopia-entry, left by its shallow
// restores); for the root that is in the mount point's parent, which on a
// mover pod's read-only root filesystem fails even when there is nothing
// to remove. The root is given its owner, mode and times here instead,
// as kopia gives them to every other directory.
type mountOutput struct {
	*restore.FilesystemOutput
}

func (o *mountOutput) FinishDirectory(ctx context.Context, relativePath string, e fs.Directory) error {
	if relativePath != "" {
		return o.FilesystemOutput.FinishDirectory(ctx, relativePath, e)
	}
	path := o.TargetPath
	local, err := localfs.NewEntry(path)
	if err != nil {
		return fmt.Errorf("restore target %s: %w", path, err)
	}
	// Windows has no owners to give (kopia records none there either).
	if owner := e.Owner(); runtime.GOOS != "windows" && local.Owner() != owner {
		if err := os.Chown(path, int(owner.UserID), int(owner.GroupID)); err != nil {
			return fmt.Errorf("restore target %s: owner: %w", path, err)
		}
	}
	if local.Mode()&fs.ModBits != e.Mode()&fs.ModBits {
		if err := os.Chmod(path, e.Mode()&fs.ModBits); err != nil {
			return fmt.Errorf("restore target %s: mode: %w", path, err)
		}
	}
	if !local.ModTime().Equal(e.ModTime()) {
		if err := os.Chtimes(path, e.ModTime(), e.ModTime()); err != nil {
			return fmt.Errorf("restore target %s: times: %w", path, err)
		}
	}
	return nil
}
