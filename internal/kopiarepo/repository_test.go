package kopiarepo

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kopia/kopia/repo/format"
	"github.com/kopia/kopia/snapshot/policy"

	"github.com/salvor-dev/salvor/internal/testbed"
)

func TestPrefixIsVeleros(t *testing.T) {
	for _, c := range []struct{ prefix, ns, want string }{
		{"", "app", "kopia/app/"},
		{"velero", "app", "velero/kopia/app/"},
		{"/a/b/", "team-a", "a/b/kopia/team-a/"},
	} {
		got, err := Prefix(c.prefix, c.ns)
		if err != nil || got != c.want {
			t.Errorf("Prefix(%q, %q) = %q, %v; want %q", c.prefix, c.ns, got, err, c.want)
		}
	}
	for _, ns := range []string{"", "../other", "a/b", "UPPER"} {
		if _, err := Prefix("p", ns); err == nil {
			t.Errorf("Prefix(p, %q) was accepted", ns)
		}
	}
}

func TestKindOf(t *testing.T) {
	for p, want := range map[string]Kind{"aws": S3, "velero.io/aws": S3, "salvor.dev/s3": S3, "salvor.dev/filesystem": Filesystem} {
		if got, err := KindOf(p); err != nil || got != want {
			t.Errorf("KindOf(%q) = %v, %v; want %v", p, got, err, want)
		}
	}
	if _, err := KindOf("velero.io/gcp"); err == nil || !strings.Contains(err.Error(), "velero.io/gcp") {
		t.Errorf("KindOf(velero.io/gcp) = %v; want an error naming it", err)
	}
}

// locations are the two kinds of location, each on real storage: MinIO
// for S3, a directory for the filesystem store.
func locations(t *testing.T) map[string]Location {
	minio := testbed.StartMinIO(t, "volumes")
	return map[string]Location{
		"s3": {Provider: "salvor.dev/s3", Config: map[string]string{
			"bucket": "volumes", "prefix": "backups", "region": "minio", "s3Url": minio.Endpoint, "credentialsFile": minio.CredentialsFile(t)}},
		"filesystem": {Provider: "salvor.dev/filesystem", Config: map[string]string{"root": t.TempDir(), "bucket": "volumes"}},
	}
}

func open(t *testing.T, loc Location, ns, password string, create bool) (*Repository, error) {
	t.Helper()
	ctx := context.Background()
	st, err := Storage(ctx, loc, ns, create)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Open(ctx, st, Options{Password: password, WorkDir: t.TempDir(), Create: create})
	if err == nil {
		t.Cleanup(func() { r.Close(ctx) })
	}
	return r, err
}

func mustOpen(t *testing.T, loc Location, ns, password string, create bool) *Repository {
	t.Helper()
	r, err := open(t, loc, ns, password, create)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// volume writes a tree with what a volume holds: nested files, modes,
// a symlink, an empty directory, an empty file.
func volume(t *testing.T) string {
	dir := t.TempDir()
	write := func(name string, data []byte, mode os.FileMode) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	big := make([]byte, 3<<20)
	rand.Read(big)
	write("data/big.bin", big, 0o644)
	write("data/nested/deep/small.txt", []byte("hello"), 0o600)
	write("run.sh", []byte("#!/bin/sh\n"), 0o755)
	write("empty", nil, 0o644)
	if err := os.MkdirAll(filepath.Join(dir, "lost+found"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("data/nested/deep/small.txt", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o751); err != nil {
		t.Fatal(err)
	}
	return dir
}

// tree describes every entry under dir: type, mode, content hash or
// link target.
func tree(t *testing.T, dir string) map[string]string {
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		desc := info.Mode().String()
		switch {
		case info.Mode()&os.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			desc += " -> " + target
		case info.Mode().IsRegular():
			data, _ := os.ReadFile(p)
			sum := sha256.Sum256(data)
			desc += " " + hex.EncodeToString(sum[:])
		}
		out[rel] = desc // the root too: a volume's root has its own owner and mode
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestBackupAndRestoreKeepEveryFile(t *testing.T) {
	for name, loc := range locations(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			r := mustOpen(t, loc, "app", "secret-1", true)
			src := volume(t)
			var reports []Progress
			res, err := r.Backup(ctx, src, Source{Requester: DataMover, Name: "app/data", Tags: map[string]string{"velero.io/async-operation-id": "du-1"}}, func(p Progress) { reports = append(reports, p) })
			if err != nil {
				t.Fatal(err)
			}
			if res.SnapshotID == "" || res.TotalBytes != 3<<20+5+10 || res.IncrementalBytes < 3<<20 || res.Parent != "" {
				t.Fatalf("backup = %+v; want a snapshot of %d bytes, all of it uploaded, no parent", res, 3<<20+15)
			}
			if last := reports[len(reports)-1]; last.BytesDone != res.TotalBytes || last.TotalBytes != res.TotalBytes {
				t.Errorf("last progress %+v; want %d of %d", last, res.TotalBytes, res.TotalBytes)
			}

			// Another connection (a restore's mover pod) reads it back.
			r2 := mustOpen(t, loc, "app", "secret-1", false)
			snaps, err := r2.Snapshots(ctx)
			if err != nil || len(snaps) != 1 || snaps[0].ID != res.SnapshotID || snaps[0].Path != "snapshot-data-upload-download/kopia/app/data" ||
				snaps[0].Tags["snapshot-requester"] != DataMover || snaps[0].Tags["snapshot-uploader"] != "kopia" || snaps[0].Tags["velero.io/async-operation-id"] != "du-1" {
				t.Fatalf("snapshots = %+v, %v; want the one backup under Velero's names and tags", snaps, err)
			}
			// A restore finds it by what it is, not by an ID from the bucket.
			for _, f := range []struct {
				src  Source
				want error
			}{
				{Source{Requester: DataMover, Name: "app/data", Tags: map[string]string{"velero.io/async-operation-id": "du-1"}}, nil},
				{Source{Requester: DataMover, Name: "app/data"}, nil},
				{Source{Requester: DataMover, Name: "app/data", Tags: map[string]string{"velero.io/async-operation-id": "du-2"}}, ErrNoSnapshot},
				{Source{Requester: DataMover, Name: "app/other", Tags: map[string]string{"velero.io/async-operation-id": "du-1"}}, ErrNoSnapshot},
				{Source{Requester: PodVolume, Name: "app/data", Tags: map[string]string{"velero.io/async-operation-id": "du-1"}}, ErrNoSnapshot},
			} {
				got, err := r2.Find(ctx, f.src)
				if !errors.Is(err, f.want) || (f.want == nil && got.ID != res.SnapshotID) {
					t.Errorf("Find(%+v) = %+v, %v; want %v", f.src, got, err, f.want)
				}
			}
			dest := filepath.Join(t.TempDir(), "restored")
			n, err := r2.Restore(ctx, res.SnapshotID, dest, nil)
			if err != nil || n != res.TotalBytes {
				t.Fatalf("restore = %d, %v; want %d bytes", n, err, res.TotalBytes)
			}
			want, got := tree(t, src), tree(t, dest)
			for k, v := range want {
				if got[k] != v {
					t.Errorf("%s: restored %q, want %q", k, got[k], v)
				}
			}
			for k := range got {
				if _, ok := want[k]; !ok {
					t.Errorf("%s: restored but not in the volume", k)
				}
			}
		})
	}
}

func TestIncrementalMovesOnlyChanges(t *testing.T) {
	loc := locations(t)["s3"]
	ctx := context.Background()
	r := mustOpen(t, loc, "app", "pw", true)
	src := t.TempDir()
	files := make([][]byte, 32)
	for i := range files {
		files[i] = make([]byte, 1<<20)
		rand.Read(files[i])
		if err := os.WriteFile(filepath.Join(src, "f"+string(rune('a'+i%26))+string(rune('0'+i/26))), files[i], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	source := Source{Requester: DataMover, Name: "app/data"}
	first, err := r.Backup(ctx, src, source, nil)
	if err != nil {
		t.Fatal(err)
	}
	if first.IncrementalBytes < 32<<20 {
		t.Fatalf("first backup wrote %d bytes; want all 32 MiB (random data does not compress)", first.IncrementalBytes)
	}
	// 64 KiB of one file change: the next backup writes that file's
	// chunks and metadata, not the volume.
	changed := bytes.Clone(files[3])
	rand.Read(changed[1000 : 1000+64<<10])
	if err := os.WriteFile(filepath.Join(src, "fd0"), changed, 0o644); err != nil {
		t.Fatal(err)
	}
	second, err := r.Backup(ctx, src, source, nil)
	if err != nil {
		t.Fatal(err)
	}
	if second.Parent != first.SnapshotID || second.TotalBytes != 32<<20 {
		t.Fatalf("second backup = %+v; want 32 MiB against parent %s", second, first.SnapshotID)
	}
	if second.IncrementalBytes > 3<<19 || second.IncrementalBytes == 0 {
		t.Fatalf("second backup wrote %d bytes; want the changed 1 MiB file and metadata (under 1.5 MiB), not more", second.IncrementalBytes)
	}
	// Another requester's snapshot of the same name is no parent.
	other, err := r.Backup(ctx, src, Source{Requester: PodVolume, Name: "app/data"}, nil)
	if err != nil || other.Parent != "" {
		t.Fatalf("pod-volume backup = %+v, %v; want no parent", other, err)
	}
}

// TestLargeFileUploadedInParts: a file larger than partSize is cut into
// parts at fixed offsets (the repository's policy for the source says so,
// as `kopia policy show` would), comes back byte for byte, and its next
// backup after 64 KiB changed in one part writes about that part, not the
// file.
func TestLargeFileUploadedInParts(t *testing.T) {
	was := partSize
	partSize = 1 << 20
	t.Cleanup(func() { partSize = was })
	loc := locations(t)["s3"]
	ctx := context.Background()
	r := mustOpen(t, loc, "app", "pw", true)
	src := t.TempDir()
	data := make([]byte, 6<<20+12345)
	rand.Read(data)
	if err := os.WriteFile(filepath.Join(src, "disk.img"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	source := Source{Requester: DataMover, Name: "app/disk"}
	first, err := r.Backup(ctx, src, source, nil)
	if err != nil {
		t.Fatal(err)
	}
	tree, err := policy.TreeForSource(ctx, r.rep, source.info())
	if err != nil {
		t.Fatal(err)
	}
	if got := tree.EffectivePolicy().UploadPolicy.ParallelUploadAboveSize.OrDefault(-1); got != 1<<20 {
		t.Errorf("the source's parallelUploadAboveSize is %d; want %d", got, 1<<20)
	}
	rand.Read(data[3<<20+1000 : 3<<20+1000+64<<10])
	if err := os.WriteFile(filepath.Join(src, "disk.img"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	second, err := r.Backup(ctx, src, source, nil)
	if err != nil {
		t.Fatal(err)
	}
	if second.Parent != first.SnapshotID || second.IncrementalBytes == 0 || second.IncrementalBytes > 3<<19 {
		t.Fatalf("second backup = %+v; want the changed 1 MiB part and metadata (under 1.5 MiB) written against %s", second, first.SnapshotID)
	}
	dest := filepath.Join(t.TempDir(), "restored")
	if n, err := r.Restore(ctx, second.SnapshotID, dest, nil); err != nil || n != int64(len(data)) {
		t.Fatalf("restore = %d, %v; want %d bytes", n, err, len(data))
	}
	got, err := os.ReadFile(filepath.Join(dest, "disk.img"))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the restored file differs from the backed-up one (%v)", err)
	}
}

func TestRepositoryRefusals(t *testing.T) {
	loc := locations(t)["s3"]
	ctx := context.Background()
	if _, err := open(t, loc, "nothing-here", "pw", false); !errors.Is(err, ErrNoRepository) {
		t.Fatalf("opening a missing repository without create = %v; want ErrNoRepository", err)
	}
	r := mustOpen(t, loc, "app", "right", true)
	if _, err := open(t, loc, "app", "wrong", false); !errors.Is(err, ErrWrongPassword) {
		t.Fatalf("wrong password = %v; want ErrWrongPassword", err)
	}
	// Each namespace has a repository of its own.
	if _, err := open(t, loc, "other", "right", false); !errors.Is(err, ErrNoRepository) {
		t.Fatalf("other namespace = %v; want ErrNoRepository", err)
	}
	for _, id := range []string{"", "k0123456789abcdef0123456789abcdef", "../../etc", strings.Repeat("a", 200)} {
		if _, err := r.Restore(ctx, id, t.TempDir(), nil); !errors.Is(err, ErrNoSnapshot) {
			t.Errorf("restore of snapshot %q = %v; want ErrNoSnapshot", id, err)
		}
	}
	if err := r.Forget(ctx, "k0123456789abcdef0123456789abcdef"); err != nil {
		t.Errorf("forgetting a snapshot that is not there = %v; want nil", err)
	}
}

func TestForgetThenMaintain(t *testing.T) {
	loc := locations(t)["filesystem"]
	ctx := context.Background()
	st, err := Storage(ctx, loc, "app", true)
	if err != nil {
		t.Fatal(err)
	}
	// kopia drops a deleted content's index entry only once it was deleted
	// before a maintenance run began: the clock moves on between runs.
	var mu sync.Mutex
	clock := time.Now()
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	tick := func() { mu.Lock(); clock = clock.Add(time.Minute); mu.Unlock() }
	r, err := Open(ctx, st, Options{Password: "pw", WorkDir: t.TempDir(), Create: true, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(ctx)
	res, err := r.Backup(ctx, volume(t), Source{Requester: DataMover, Name: "app/data"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tick()
	if err := r.Forget(ctx, res.SnapshotID); err != nil {
		t.Fatal(err)
	}
	tick()
	if snaps, err := r.Snapshots(ctx); err != nil || len(snaps) != 0 {
		t.Fatalf("snapshots after forget = %+v, %v; want none", snaps, err)
	}
	if _, err := r.Restore(ctx, res.SnapshotID, t.TempDir(), nil); !errors.Is(err, ErrNoSnapshot) {
		t.Fatalf("restore of a forgotten snapshot = %v; want ErrNoSnapshot", err)
	}
	before, err := r.Size(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// kopia's margins keep a forgotten snapshot's data a while: nothing
	// is freed at once.
	for _, full := range []bool{false, true} {
		if err := r.Maintain(ctx, full, SafetyFull); err != nil {
			t.Fatalf("maintenance (full %v): %v", full, err)
		}
	}
	kept, err := r.Size(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if kept < before/2 {
		t.Errorf("full maintenance with kopia's margins freed %d of %d bytes at once", before-kept, before)
	}
	// Without margins, full maintenance frees it: one run marks the
	// forgotten data deleted, the next drops it.
	for range 2 {
		tick()
		if err := r.Maintain(ctx, true, SafetyNone); err != nil {
			t.Fatalf("full maintenance without margins: %v", err)
		}
	}
	after, err := r.Size(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after >= before/2 {
		t.Errorf("full maintenance without margins left %d of %d bytes", after, before)
	}
	t.Logf("repository: %d bytes, %d after maintenance with margins, %d without", before, kept, after)
}

func TestParseSafety(t *testing.T) {
	for in, ok := range map[string]bool{"full": true, "none": true, "": false, "Full": false, "some": false} {
		if _, err := ParseSafety(in); (err == nil) != ok {
			t.Errorf("ParseSafety(%q) = %v", in, err)
		}
	}
}

// TestCheckFindsLostData: Check finds a snapshot as a restore finds it (by
// source and tags) and walks it; a snapshot forgotten, or
// whose data packs are gone from the location, fails it.
func TestCheckFindsLostData(t *testing.T) {
	loc := locations(t)["filesystem"]
	ctx := context.Background()
	r := mustOpen(t, loc, "app", "pw", true)
	src := Source{Requester: DataMover, Name: "app/data", Tags: map[string]string{"backup": "b1"}}
	res, err := r.Backup(ctx, volume(t), src, nil)
	if err != nil {
		t.Fatal(err)
	}
	if snap, err := mustOpen(t, loc, "app", "pw", false).Check(ctx, src); err != nil || snap.ID != res.SnapshotID {
		t.Fatalf("check of the snapshot: %+v, %v", snap, err)
	}
	other := Source{Requester: DataMover, Name: "app/data", Tags: map[string]string{"backup": "b2"}}
	if _, err := r.Check(ctx, other); !errors.Is(err, ErrNoSnapshot) {
		t.Errorf("check of a backup that moved nothing: %v", err)
	}
	// The data packs (kopia's p* blobs) lost: the root no longer reads.
	packs, err := filepath.Glob(filepath.Join(loc.Config["root"], "volumes", "kopia", "app", "p*"))
	if err != nil || len(packs) == 0 {
		t.Fatalf("no data packs in the repository: %v", err)
	}
	for _, p := range packs {
		if err := os.RemoveAll(p); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := mustOpen(t, loc, "app", "pw", false).Check(ctx, src); err == nil {
		t.Error("check passed with the snapshot's data gone")
	}
	if err := r.Forget(ctx, res.SnapshotID); err != nil {
		t.Fatal(err)
	}
	if _, err := mustOpen(t, loc, "app", "pw", false).Check(ctx, src); !errors.Is(err, ErrNoSnapshot) {
		t.Errorf("check of a forgotten snapshot: %v", err)
	}
}

// TestCacheKeptForBackups: an open for writing with a cache directory
// (a node agent's backup) leaves the repository's indexes and listings
// there for the next job, and the next open reads the format from the
// storage again; a read-only open (a restore) keeps no cache, so restored
// bytes are written once.
func TestCacheKeptForBackups(t *testing.T) {
	loc := locations(t)["filesystem"]
	ctx := context.Background()
	cache := t.TempDir()
	openWith := func(readOnly bool, cacheDir string) *Repository {
		st, err := Storage(ctx, loc, "app", !readOnly)
		if err != nil {
			t.Fatal(err)
		}
		r, err := Open(ctx, st, Options{Password: "pw", WorkDir: t.TempDir(), Create: !readOnly, ReadOnly: readOnly, CacheDir: cacheDir})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	files := func(dir string) (n int) {
		_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() && !strings.HasPrefix(d.Name(), ".") { // kopia's .shards
				n++
			}
			return nil
		})
		return n
	}
	r := openWith(false, cache)
	res, err := r.Backup(ctx, volume(t), Source{Requester: PodVolume, Name: "app/data"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.Close(ctx)
	if files(filepath.Join(cache, "indexes"))+files(filepath.Join(cache, "index-blobs")) == 0 {
		t.Fatalf("the backup left no index in its cache %s: %d files there", cache, files(cache))
	}
	if _, err := os.Stat(filepath.Join(cache, "contents")); err == nil && files(filepath.Join(cache, "contents")) > 0 {
		t.Fatalf("the backup cached %d file contents; want none", files(filepath.Join(cache, "contents")))
	}
	// Written by the first open: the next one reads the format anew.
	if err := os.WriteFile(filepath.Join(cache, format.KopiaRepositoryBlobID), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = openWith(false, cache)
	r.Close(ctx)

	restoreCache := t.TempDir()
	r = openWith(true, restoreCache)
	defer r.Close(ctx)
	if _, err := r.Restore(ctx, res.SnapshotID, t.TempDir(), nil); err != nil {
		t.Fatal(err)
	}
	if n := files(restoreCache); n != 0 {
		t.Fatalf("a read-only open wrote %d files into its cache directory; want none", n)
	}
}

// TestFilesystemStorageStaysInItsBucket: a filesystem location's bucket
// and prefix name a directory in its root, never one beside it.
func TestFilesystemStorageStaysInItsBucket(t *testing.T) {
	root := t.TempDir()
	ctx := context.Background()
	for _, c := range []struct{ bucket, prefix, want string }{
		{"..", "", "want a plain directory name"},
		{"a/b", "", "want a plain directory name"},
		{`a\b`, "", "want a plain directory name"},
		{"volumes", "../../elsewhere", "outside the bucket's directory"},
	} {
		loc := Location{Provider: "salvor.dev/filesystem", Config: map[string]string{"root": root, "bucket": c.bucket, "prefix": c.prefix}}
		if _, err := Storage(ctx, loc, "app", true); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("bucket %q prefix %q: %v; want an error saying %q", c.bucket, c.prefix, err, c.want)
		}
	}
	if entries, err := os.ReadDir(filepath.Dir(root)); err == nil {
		for _, e := range entries {
			if e.Name() == "elsewhere" || e.Name() == "kopia" {
				t.Errorf("a directory was made beside the root: %s", e.Name())
			}
		}
	}
	loc := Location{Provider: "salvor.dev/filesystem", Config: map[string]string{"root": root, "bucket": "volumes", "prefix": "team/a"}}
	st, err := Storage(ctx, loc, "app", true)
	if err != nil {
		t.Fatal(err)
	}
	st.Close(ctx)
	if _, err := os.Stat(filepath.Join(root, "volumes", "team", "a", "kopia", "app")); err != nil {
		t.Errorf("the repository's directory: %v", err)
	}
}
