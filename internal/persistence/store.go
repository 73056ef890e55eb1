package persistence

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/salvor-dev/salvor/internal/plugin/host"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// TopLevelDirs are the directories a location may hold; anything else
// means the bucket (or prefix) is not a backup location.
var TopLevelDirs = []string{"backups", "restores", "metadata", "plugins", "restic", "kopia"}

// ErrNotFound: the backup's metadata is not in the location.
var ErrNotFound = errors.New("salvor: backup not found in the location")

// BackupStore is one location: an object store, a bucket and a prefix.
type BackupStore struct {
	store  host.ObjectStore
	bucket string
	prefix string
	// written holds the digests of the tarballs this store wrote.
	written tarballDigests
	// journalKey authenticates journal entries (SetJournalKey).
	journalKey []byte
	// manifestKeys sign and authenticate manifests (SetManifestKeys).
	manifestKeys *ManifestKeys
	// authentic holds, per backup this store authenticated, the digests
	// of its objects by name: reads of them are checked (Authenticate).
	authMu    sync.Mutex
	authentic map[string]map[string]ObjectDigest
}

// New returns the store for a bucket and prefix.
func New(store host.ObjectStore, bucket, prefix string) *BackupStore {
	prefix = strings.Trim(prefix, "/")
	if prefix != "" {
		prefix += "/"
	}
	return &BackupStore{store: store, bucket: bucket, prefix: prefix}
}

func (s *BackupStore) key(parts ...string) string { return s.prefix + path.Join(parts...) }

// A backup's metadata, by name: the presence of MetadataFile makes a backup.
const (
	MetadataFile       = "velero-backup.json"
	SalvorMetadataFile = "salvor-backup.json"
)

// BackupFile is the key of one of a backup's files, e.g. BackupFile("b1", LogFile).
func (s *BackupStore) BackupFile(name string, f File) string {
	return s.key("backups", name, name+f.Suffix())
}

// Check lists the location's top-level directories and refuses unknown ones.
func (s *BackupStore) Check(ctx context.Context) error {
	dirs, err := s.store.ListCommonPrefixes(ctx, s.bucket, s.prefix, "/")
	if err != nil {
		return fmt.Errorf("listing bucket %s: %w", s.bucket, err)
	}
	for _, d := range dirs {
		top := strings.TrimSuffix(strings.TrimPrefix(d, s.prefix), "/")
		ok := false
		for _, t := range TopLevelDirs {
			ok = ok || t == top
		}
		if !ok {
			return fmt.Errorf("bucket %s prefix %q holds an unknown top-level directory %q: a backup location may hold only %s",
				s.bucket, s.prefix, top, strings.Join(TopLevelDirs, "/, ")+"/")
		}
	}
	return nil
}

// ListBackups returns the names of the backups whose metadata is present
// (see Backups).
func (s *BackupStore) ListBackups(ctx context.Context) ([]string, error) {
	names, _, err := s.Backups(ctx)
	return names, err
}

// Backups returns the names of the backups whose metadata is present and,
// apart, the directories under backups/ whose names no Backup could have
// ("..", "Nightly_1"): whoever wrote the bucket made them, and they are
// never read — as parts of a key, ".." and its kind would lead outside
// the backup's place.
func (s *BackupStore) Backups(ctx context.Context) (names, invalid []string, err error) {
	dirs, err := s.store.ListCommonPrefixes(ctx, s.bucket, s.key("backups")+"/", "/")
	if err != nil {
		return nil, nil, fmt.Errorf("listing backups in bucket %s: %w", s.bucket, err)
	}
	for _, d := range dirs {
		name := strings.TrimPrefix(strings.TrimSuffix(d, "/"), s.key("backups")+"/")
		if len(validation.IsDNS1123Subdomain(name)) > 0 {
			invalid = append(invalid, name)
			continue
		}
		ok, err := s.store.ObjectExists(ctx, s.bucket, s.key("backups", name, MetadataFile))
		if err != nil {
			return nil, nil, err
		}
		if ok {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	sort.Strings(invalid)
	return names, invalid, nil
}

// PutTarball streams the backup's tarball, hashing it for the manifest on
// the way.
func (s *BackupStore) PutTarball(ctx context.Context, name string, r io.Reader) error {
	return s.putTarballDigesting(ctx, name, r)
}

// GetTarball opens the backup's tarball.
// Of a backup this store authenticated, the object is checked as it is
// read: the read fails at its end if the tarball is not the signed one, so
// a reader reads it to its end before acting on it.
func (s *BackupStore) GetTarball(ctx context.Context, name string) (io.ReadCloser, error) {
	return s.getObject(ctx, s.BackupFile(name, TarballFile))
}

// putGzipJSON writes v as gzip'd JSON at key, streaming a JSONWriter;
// file names it in errors.
func (s *BackupStore) putGzipJSON(ctx context.Context, key, file string, v any) error {
	var body io.Reader
	if jw, ok := v.(JSONWriter); ok {
		pr, pw := io.Pipe()
		go func() {
			gz := gzip.NewWriter(pw)
			err := jw.WriteJSON(gz)
			if err == nil {
				err = gz.Close()
			}
			pw.CloseWithError(err)
		}()
		// The store may stop reading early (a failed upload): end the writer.
		defer pr.CloseWithError(io.ErrClosedPipe)
		body = pr
	} else {
		var buf bytes.Buffer
		gz := gzip.NewWriter(&buf)
		if err := json.NewEncoder(gz).Encode(v); err != nil {
			return fmt.Errorf("encoding %s: %w", file, err)
		}
		if err := gz.Close(); err != nil {
			return fmt.Errorf("encoding %s: %w", file, err)
		}
		body = bytes.NewReader(buf.Bytes())
	}
	if err := s.store.PutObject(ctx, s.bucket, key, body); err != nil {
		return fmt.Errorf("writing %s: %w", file, err)
	}
	return nil
}

// Finish holds what is written after the tarball.
type Finish struct {
	Backup *salvorv1.Backup
	// Logs is the gzip'd log (best effort: a failure is not fatal).
	Logs io.Reader
	// Results, ResourceList and ItemOperations are written gzip'd as JSON.
	Results *Results
	// ResourceList is a map[string][]string or a JSONWriter (a backup's,
	// which may be too large to hold in memory).
	ResourceList   any
	ItemOperations any
	// VolumeSnapshots is written when not nil.
	VolumeSnapshots any
}

// FinishBackup writes everything but the tarball, the metadata last. On
// failure it removes the files this run writes, so no half backup remains.
func (s *BackupStore) FinishBackup(ctx context.Context, f Finish) (err error) {
	name := f.Backup.Name
	defer func() {
		if err != nil {
			if derr := s.DeleteRunFiles(context.WithoutCancel(ctx), name, string(f.Backup.UID)); derr != nil {
				err = fmt.Errorf("%w (and removing what was written failed: %v)", err, derr)
			}
		}
	}()
	if err := s.PutFiles(ctx, f); err != nil {
		return err
	}
	return s.PutMetadata(ctx, f.Backup)
}

// PutFiles writes everything but the tarball and the metadata: what a backup
// waiting for plugin operations keeps in the location, so a restarted
// server picks it up, while the backup does not yet look whole.
func (s *BackupStore) PutFiles(ctx context.Context, f Finish) error {
	name := f.Backup.Name
	if f.Logs != nil {
		// Logs are best effort, as in Velero: a backup is not lost for them.
		_ = s.store.PutObject(ctx, s.bucket, s.BackupFile(name, LogFile), f.Logs)
	}
	results := f.Results
	if results == nil {
		results = &Results{}
	}
	results.Normalize()
	if err := s.PutJSON(ctx, name, ResultsFile, results); err != nil {
		return err
	}
	if f.ResourceList != nil {
		if err := s.PutJSON(ctx, name, ResourceListFile, f.ResourceList); err != nil {
			return err
		}
	}
	if err := s.PutJSON(ctx, name, ItemOperationsFile, f.ItemOperations); err != nil {
		return err
	}
	if f.VolumeSnapshots != nil {
		return s.PutJSON(ctx, name, VolumeSnapshotsFile, f.VolumeSnapshots)
	}
	return nil
}

// JSONWriter is a value that writes its own JSON as a stream, for a file
// too large to encode in memory.
type JSONWriter interface {
	WriteJSON(w io.Writer) error
}

// PutJSON writes one of a backup's gzip'd JSON files; a JSONWriter is
// streamed to the location.
func (s *BackupStore) PutJSON(ctx context.Context, name string, f File, v any) error {
	return s.putGzipJSON(ctx, s.BackupFile(name, f), name+f.Suffix(), v)
}

// PutMetadata writes the Backup as salvor-backup.json and, shaped for
// Velero, as velero-backup.json — the file whose presence makes the backup.
// The backup's manifest goes first (see Manifest), so a backup that looks
// whole has one; b's status.authentication then says whether it is signed.
// veleroMetadata is backup b as Velero's velero-backup.json: Salvor's
// spec and status under Velero's apiVersion, and csiSnapshotTimeout,
// which Salvor has not (itemOperationTimeout bounds its CSI snapshots and
// uploads) and which Velero's restore gives each DataDownload of moved
// data as its timeout: left out, that is zero, and every download of a
// Salvor backup timed out at once. Velero's default (10m) stands in when
// the backup has no itemOperationTimeout.
func veleroMetadata(b *salvorv1.Backup) ([]byte, error) {
	velero := b.DeepCopy()
	velero.APIVersion = "velero.io/v1"
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(velero)
	if err != nil {
		return nil, err
	}
	timeout := b.Spec.ItemOperationTimeout.Duration
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	if spec, ok := obj["spec"].(map[string]any); ok {
		if _, set := spec["csiSnapshotTimeout"]; !set {
			spec["csiSnapshotTimeout"] = timeout.String()
		}
	}
	return json.Marshal(obj)
}

func (s *BackupStore) PutMetadata(ctx context.Context, b *salvorv1.Backup) error {
	own := b.DeepCopy()
	own.APIVersion, own.Kind = salvorv1.GroupVersion.String(), "Backup"
	own.ManagedFields, own.ResourceVersion = nil, ""
	sb, err := json.Marshal(own)
	if err != nil {
		return err
	}
	vb, err := veleroMetadata(own)
	if err != nil {
		return err
	}
	staged := stagedOf(s.store)
	dir := s.key("backups", b.Name) + "/"
	if staged != nil {
		// An immutable location: the files, final now, go up once.
		if err := staged.commit(ctx, s.bucket, dir); err != nil {
			return err
		}
	}
	if err := s.seal(ctx, b.Name, string(b.UID), map[string][]byte{SalvorMetadataFile: sb, MetadataFile: vb}); err != nil {
		return err
	}
	// Recorded on b only, for the cluster's object: a file in the bucket
	// saying it is authenticated would prove nothing.
	b.Status.Authentication = s.writtenAuthentication()
	if err := s.store.PutObject(ctx, s.bucket, s.key("backups", b.Name, SalvorMetadataFile), bytes.NewReader(sb)); err != nil {
		return fmt.Errorf("writing %s: %w", SalvorMetadataFile, err)
	}
	if err := s.store.PutObject(ctx, s.bucket, s.key("backups", b.Name, MetadataFile), bytes.NewReader(vb)); err != nil {
		return fmt.Errorf("writing %s: %w", MetadataFile, err)
	}
	if staged != nil {
		if err := staged.discard(s.bucket, dir); err != nil {
			return fmt.Errorf("backup %s is whole; removing its staged files from the server's disk: %w", b.Name, err)
		}
	}
	return nil
}

// AppendLog adds lines (JSON lines, as the run's log has them) to the end
// of a backup's log, as a gzip member of their own: readers of gzip take
// the members as one stream. The log goes through a temporary file, so
// memory does not grow with it, and is written back whole.
//
// On an immutable location a whole backup's log was written once, with
// it, and stays as it is: nothing is appended.
func (s *BackupStore) AppendLog(ctx context.Context, name string, lines []byte) error {
	if stagedOf(s.store) != nil {
		if whole, err := s.IsWhole(ctx, name); err != nil || whole {
			return err
		}
	}
	tmp, err := os.CreateTemp("", "salvor-log-*.gz")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	if rc, err := s.GetLogs(ctx, name); err == nil {
		_, err = io.Copy(tmp, rc)
		rc.Close()
		if err != nil {
			return fmt.Errorf("reading the log of backup %s: %w", name, err)
		}
	}
	gz := gzip.NewWriter(tmp)
	if _, err := gz.Write(lines); err != nil {
		return err
	}
	if err := gz.Close(); err != nil {
		return err
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return err
	}
	if err := s.PutLogs(ctx, name, tmp); err != nil {
		return err
	}
	// The log was changed on purpose: its manifest entry follows.
	return s.reseal(ctx, name, LogFile)
}

// GetLogs opens a backup's gzip'd log.
func (s *BackupStore) GetLogs(ctx context.Context, name string) (io.ReadCloser, error) {
	return s.getObject(ctx, s.BackupFile(name, LogFile))
}

// DeleteBackup removes a backup's files, its metadata first.
func (s *BackupStore) DeleteBackup(ctx context.Context, name string) error {
	first := []string{s.key("backups", name, MetadataFile), s.key("backups", name, SalvorMetadataFile)}
	for _, k := range first {
		if err := s.store.DeleteObject(ctx, s.bucket, k); err != nil {
			return fmt.Errorf("deleting %s: %w", k, err)
		}
	}
	keys, err := s.store.ListObjects(ctx, s.bucket, s.key("backups", name)+"/")
	if err != nil {
		return err
	}
	for _, k := range keys {
		if err := s.store.DeleteObject(ctx, s.bucket, k); err != nil {
			return fmt.Errorf("deleting %s: %w", k, err)
		}
	}
	return nil
}

// IsWhole tells whether a backup's metadata is in the location: the mark of
// a backup whose every file was written (FinishBackup writes it last).
func (s *BackupStore) IsWhole(ctx context.Context, name string) (bool, error) {
	return s.store.ObjectExists(ctx, s.bucket, s.key("backups", name, MetadataFile))
}

// PutLogs writes a backup's log (gzip'd JSON lines).
func (s *BackupStore) PutLogs(ctx context.Context, name string, r io.Reader) error {
	return s.store.PutObject(ctx, s.bucket, s.BackupFile(name, LogFile), r)
}

// HasBackup tells whether anything is stored under a backup's name: its
// metadata, or the files of a run that is writing it (perhaps another
// cluster's, sharing the bucket) or that stopped half way.
func (s *BackupStore) HasBackup(ctx context.Context, name string) (bool, error) {
	keys, err := s.store.ListObjects(ctx, s.bucket, s.key("backups", name)+"/")
	if err != nil {
		return false, fmt.Errorf("listing backup %s in bucket %s: %w", name, s.bucket, err)
	}
	return len(keys) > 0, nil
}

// ErrNotOwner: a run was about to remove files under a backup's name that
// another run (another cluster's, sharing the bucket) now owns.
var ErrNotOwner = errors.New("salvor: the files under this backup name belong to another run; left as they are")

// ClaimName records that the run of the Backup with UID uid writes the
// files under name (see OwnerFile).
func (s *BackupStore) ClaimName(ctx context.Context, name, uid string) error {
	if err := s.store.PutObject(ctx, s.bucket, s.BackupFile(name, OwnerFile), strings.NewReader(uid)); err != nil {
		return fmt.Errorf("claiming backup name %s: %w", name, err)
	}
	return nil
}

// Owner returns the UID of the Backup whose run claimed name (see
// ClaimName); claimed is false when no run did.
func (s *BackupStore) Owner(ctx context.Context, name string) (uid string, claimed bool, err error) {
	rc, err := s.store.GetObject(ctx, s.bucket, s.BackupFile(name, OwnerFile))
	if err != nil {
		if ok, eerr := s.store.ObjectExists(ctx, s.bucket, s.BackupFile(name, OwnerFile)); eerr == nil && !ok {
			return "", false, nil
		}
		return "", false, fmt.Errorf("reading the owner of backup name %s: %w", name, err)
	}
	defer rc.Close()
	owner, err := io.ReadAll(io.LimitReader(rc, 256))
	if err != nil {
		return "", false, fmt.Errorf("reading the owner of backup name %s: %w", name, err)
	}
	return string(owner), true, nil
}

// DeleteRunFiles removes the files a run of a backup writes, and nothing
// else under its name: what a failed or cancelled run leaves behind. It
// removes them only when the name's owner record is the run's (uid): a
// run cannot prove it wrote files another run owns, or files under a name
// it never claimed, so it leaves those (ErrNotOwner). The metadata goes
// first, so the backup never looks whole while going. Files in keep stay
// (a failed run's log and results, for whoever asks why it failed), and so
// does the owner record then, so that deleting the Backup later removes
// them too.
func (s *BackupStore) DeleteRunFiles(ctx context.Context, name, uid string, keep ...File) error {
	owner, claimed, err := s.Owner(ctx, name)
	if err != nil {
		return err
	}
	if !claimed {
		return nil // never claimed: the run wrote nothing
	}
	if owner != uid {
		return fmt.Errorf("backup %s: %w", name, ErrNotOwner)
	}
	keys := []string{s.key("backups", name, MetadataFile), s.key("backups", name, SalvorMetadataFile)}
	for f := range suffixes {
		if f != OwnerFile && f.writtenByRuns() && !slices.Contains(keep, f) {
			keys = append(keys, s.BackupFile(name, f))
		}
	}
	if len(keep) == 0 {
		keys = append(keys, s.BackupFile(name, OwnerFile))
	}
	for _, k := range keys {
		if err := s.store.DeleteObject(ctx, s.bucket, k); err != nil {
			return fmt.Errorf("deleting %s: %w", k, err)
		}
	}
	return s.ClearJournal(ctx, name)
}

// SignedKeyURL returns a URL, valid for ttl, of one of the files of a
// backup or restore (a BackupFile or RestoreFile key).
func (s *BackupStore) SignedKeyURL(ctx context.Context, key string, ttl time.Duration) (string, error) {
	ok, err := s.store.ObjectExists(ctx, s.bucket, key)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", fmt.Errorf("%s is not in the location", strings.TrimPrefix(key, s.prefix))
	}
	return s.store.CreateSignedURL(ctx, s.bucket, key, ttl)
}
