package localvolume

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/salvor-dev/salvor/pkg/plugin/sdk"
)

// tree writes files (relative path → size) of random bytes under a new
// directory.
func tree(t *testing.T, files map[string]int) string {
	t.Helper()
	dir := t.TempDir()
	rng := rand.NewChaCha8([32]byte{1})
	for name, size := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		b := make([]byte, size)
		_, _ = rng.Read(b)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// contents is the SHA-256 of every file under dir and the set of its
// directories, to compare trees by.
func contents(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			out[rel+"/"] = "dir"
			return nil
		}
		b, err := os.ReadFile(p)
		sum := sha256.Sum256(b)
		out[rel] = hex.EncodeToString(sum[:])
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func newV1(t *testing.T, config map[string]string) sdk.VolumeSnapshotter {
	t.Helper()
	vs, _ := NewV1(slog.New(slog.DiscardHandler))
	if err := vs.Init(config); err != nil {
		t.Fatal(err)
	}
	return vs
}

func newV2(t *testing.T, config map[string]string) sdk.VolumeSnapshotterV2 {
	t.Helper()
	vs, _ := NewV2(slog.New(slog.DiscardHandler))
	if err := vs.Init(config); err != nil {
		t.Fatal(err)
	}
	return vs
}

func TestSnapshotAndRestoreReproduceTheTree(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]int
	}{
		{"empty volume", nil},
		{"small files in nested directories", map[string]int{"a": 1, "b/c": 4096, "b/d/e": 70000, "b/d/f": 0, "g/h": 100}},
		// Above bigFile, copied in the kernel in steps while hashed apart;
		// not a multiple of the step, so the last one is short.
		{"files over the big-file size", map[string]int{"big": chunk + 12345, "x/big2": bigFile, "x/small": 10}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vol := tree(t, tc.files)
			snaps := t.TempDir()
			vs := newV1(t, map[string]string{"snapshotDir": snaps})
			id, err := vs.CreateSnapshot(vol, "", nil)
			if err != nil {
				t.Fatal(err)
			}
			want := contents(t, vol)
			if got := contents(t, filepath.Join(snaps, id)); !maps.Equal(got, want) {
				t.Fatalf("snapshot %v, volume %v", got, want)
			}
			restored, err := vs.CreateVolumeFromSnapshot(id, "", "", nil)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(restored, filepath.Join(snaps, "restored")) {
				t.Errorf("restored into %s, want under the default restoreDir", restored)
			}
			if got := contents(t, restored); !maps.Equal(got, want) {
				t.Fatalf("restored %v, volume %v", got, want)
			}
		})
	}
}

func TestDamagedSnapshotIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, snapshot, sums string)
		want   string
	}{
		{"a changed byte", func(t *testing.T, snapshot, _ string) {
			p := filepath.Join(snapshot, "d", "big")
			f, err := os.OpenFile(p, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteAt([]byte{'!'}, bigFile+1); err != nil {
				t.Fatal(err)
			}
		}, "file d/big of snapshot snap-"},
		{"a file removed", func(t *testing.T, snapshot, _ string) {
			if err := os.Remove(filepath.Join(snapshot, "small")); err != nil {
				t.Fatal(err)
			}
		}, "file small of snapshot snap-"},
		{"a file added", func(t *testing.T, snapshot, _ string) {
			if err := os.WriteFile(filepath.Join(snapshot, "extra"), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "holds 3 files, its checksums list 2"},
		{"checksums that don't parse", func(t *testing.T, _, sums string) {
			if err := os.WriteFile(sums, []byte("{"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "reading the checksums of snapshot snap-"},
		{"an unknown algorithm", func(t *testing.T, _, sums string) {
			if err := os.WriteFile(sums, []byte(`{"algorithm":"crc7","files":{}}`), 0o644); err != nil {
				t.Fatal(err)
			}
		}, `unknown checksum algorithm "crc7"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vol := tree(t, map[string]int{"d/big": bigFile + 100, "small": 10})
			snaps, restoreDir := t.TempDir(), t.TempDir()
			vs := newV1(t, map[string]string{"snapshotDir": snaps, "restoreDir": restoreDir})
			id, err := vs.CreateSnapshot(vol, "", nil)
			if err != nil {
				t.Fatal(err)
			}
			tc.damage(t, filepath.Join(snaps, id), filepath.Join(snaps, ".state", id+".checksums.json"))
			_, err = vs.CreateVolumeFromSnapshot(id, "", "", nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("restore from a damaged snapshot: %v, want an error with %q", err, tc.want)
			}
			if left, _ := os.ReadDir(restoreDir); len(left) != 0 {
				t.Errorf("a failed restore left %d entries in the restore directory", len(left))
			}
		})
	}
}

// progressUntil polls Progress until done says stop, returning every
// distinct NCompleted seen and the last answer.
func progressUntil(t *testing.T, vs sdk.VolumeSnapshotterV2, id string, done func(sdk.OperationProgress) bool) ([]int64, sdk.OperationProgress) {
	t.Helper()
	var seen []int64
	var last sdk.OperationProgress
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		p, err := vs.Progress(id)
		if err != nil {
			return false, err
		}
		if len(seen) == 0 || seen[len(seen)-1] != p.NCompleted {
			seen = append(seen, p.NCompleted)
		}
		last = p
		return done(p), nil
	})
	if err != nil {
		t.Fatalf("copy %s: %v; last progress %+v", id, err, last)
	}
	return seen, last
}

func TestBackgroundCopyReportsProgressInBytes(t *testing.T) {
	vol := tree(t, map[string]int{"a": 3 << 20, "b/c": 1 << 20})
	snaps := t.TempDir()
	config := map[string]string{"snapshotDir": snaps, "bytesPerSecond": "4194304"} // about a second
	vs := newV2(t, config)
	id, err := vs.CreateSnapshot(vol, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	seen, last := progressUntil(t, vs, id, func(p sdk.OperationProgress) bool { return p.Completed })
	if last.Err != "" || last.NTotal != 4<<20 || last.NCompleted != 4<<20 || last.OperationUnits != "bytes" {
		t.Fatalf("last progress %+v", last)
	}
	if len(seen) < 3 {
		t.Errorf("saw progress values %v, want at least three", seen)
	}
	for i := 1; i < len(seen); i++ {
		if seen[i] < seen[i-1] {
			t.Errorf("progress went backwards: %v", seen)
		}
	}
	// A plugin process started afresh answers from the state on disk.
	again := newV2(t, config)
	if p, err := again.Progress(id); err != nil || !p.Completed || p.NCompleted != 4<<20 {
		t.Errorf("progress from a new process: %+v, %v", p, err)
	}
	if _, err := again.Progress("snap-0123456789abcdef"); err == nil || !strings.Contains(err.Error(), `no copy with ID "snap-0123456789abcdef"`) {
		t.Errorf("progress of an unknown copy: %v", err)
	}
}

// copyUnderWay starts an 8-second copy of 16 MiB and returns once it has
// copied some: the snapshotter, its snapshot directory and the copy's ID.
func copyUnderWay(t *testing.T) (sdk.VolumeSnapshotterV2, string, string) {
	t.Helper()
	vol := tree(t, map[string]int{"a": 8 << 20, "b": 8 << 20})
	snaps := t.TempDir()
	vs := newV2(t, map[string]string{"snapshotDir": snaps, "bytesPerSecond": "2097152"}) // 8 s
	id, err := vs.CreateSnapshot(vol, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	progressUntil(t, vs, id, func(p sdk.OperationProgress) bool { return p.NCompleted > 0 })
	return vs, snaps, id
}

func TestCancelRemovesThePartialCopy(t *testing.T) {
	vs, snaps, id := copyUnderWay(t)
	if err := vs.Cancel(id); err != nil {
		t.Fatal(err)
	}
	p, err := vs.Progress(id)
	if err != nil || !p.Completed || p.Err != "cancelled" || p.NCompleted >= p.NTotal {
		t.Errorf("progress after Cancel: %+v, %v", p, err)
	}
	if _, err := os.Stat(filepath.Join(snaps, id)); !os.IsNotExist(err) {
		t.Errorf("the partial snapshot is still there: %v", err)
	}
	if _, err := vs.CreateVolumeFromSnapshot(id, "", "", nil); err == nil || !strings.Contains(err.Error(), "is Cancelled, not Completed") {
		t.Errorf("restore from a cancelled snapshot: %v", err)
	}
}

// TestDeleteWhileCopyingLeavesNothing: a snapshot deleted while its copy
// runs is gone whole — the copy stops before the files go, so it neither
// writes into the snapshot afterwards nor records its state again.
func TestDeleteWhileCopyingLeavesNothing(t *testing.T) {
	vs, snaps, id := copyUnderWay(t)
	if err := vs.DeleteSnapshot(id); err != nil {
		t.Fatal(err)
	}
	var left []string
	err := filepath.WalkDir(snaps, func(p string, d fs.DirEntry, err error) error {
		if err == nil && (!d.IsDir() || strings.Contains(p, id)) {
			left = append(left, p)
		}
		return err
	})
	if err != nil || len(left) > 0 {
		t.Errorf("after DeleteSnapshot the snapshot directory holds %v (%v)", left, err)
	}
	if _, err := vs.Progress(id); err == nil || !strings.Contains(err.Error(), "no copy with ID") {
		t.Errorf("progress of a deleted snapshot: %v", err)
	}
}

func TestInitRejectsBadConfig(t *testing.T) {
	for _, tc := range []struct {
		config map[string]string
		want   string
	}{
		{map[string]string{}, `snapshotDir=""`},
		{map[string]string{"snapshotDir": "relative"}, "want an absolute directory"},
		{map[string]string{"snapshotDir": "/tmp", "bytesPerSecond": "fast"}, `bytesPerSecond="fast"`},
		{map[string]string{"snapshotDir": "/tmp", "bytesPerSecond": "0"}, "want a positive integer"},
	} {
		vs, _ := NewV1(slog.New(slog.DiscardHandler))
		if err := vs.Init(tc.config); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Init(%v) = %v, want an error with %q", tc.config, err, tc.want)
		}
	}
}

// TestPermissionsOwnersAndLinksAreKept snapshots and restores a tree whose
// files and directories have their own permissions (and, when the test
// runs as root, owners) and which holds symbolic links: the restored tree
// has them all.
func TestPermissionsOwnersAndLinksAreKept(t *testing.T) {
	vol := tree(t, map[string]int{"secret/key": 32, "bin/run": 100, "data/big": bigFile + 1})
	if err := os.Symlink("../data/big", filepath.Join(vol, "bin", "link")); err != nil {
		t.Fatal(err)
	}
	// bin read-only: the copy must still be able to fill it.
	for p, mode := range map[string]os.FileMode{"secret/key": 0o600, "bin/run": 0o755 | os.ModeSetgid, "data/big": 0o640, "secret": 0o700, "bin": 0o555} {
		if err := os.Chmod(filepath.Join(vol, p), mode); err != nil {
			t.Fatal(err)
		}
	}
	root := os.Geteuid() == 0
	if root {
		if err := os.Lchown(filepath.Join(vol, "data", "big"), 1234, 5678); err != nil {
			t.Fatal(err)
		}
	}
	snaps := t.TempDir()
	vs := newV1(t, map[string]string{"snapshotDir": snaps})
	id, err := vs.CreateSnapshot(vol, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	restored, err := vs.CreateVolumeFromSnapshot(id, "", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{filepath.Join(snaps, id), restored} {
		for p, want := range map[string]os.FileMode{"secret/key": 0o600, "bin/run": 0o755 | os.ModeSetgid, "data/big": 0o640,
			"secret": 0o700 | os.ModeDir, "bin": 0o555 | os.ModeDir} {
			info, err := os.Lstat(filepath.Join(dir, p))
			if err != nil || info.Mode() != want {
				t.Errorf("%s in %s: mode %v, %v; want %v", p, dir, info.Mode(), err, want)
			}
		}
		if target, err := os.Readlink(filepath.Join(dir, "bin", "link")); err != nil || target != "../data/big" {
			t.Errorf("link in %s: %q, %v", dir, target, err)
		}
		if root {
			info, _ := os.Lstat(filepath.Join(dir, "data", "big"))
			if st := info.Sys().(*syscall.Stat_t); st.Uid != 1234 || st.Gid != 5678 {
				t.Errorf("owner of data/big in %s: %d:%d, want 1234:5678", dir, st.Uid, st.Gid)
			}
		}
	}
	// A link pointed elsewhere in the snapshot is damage, like a changed file.
	snapLink := filepath.Join(snaps, id, "bin", "link")
	_ = os.Chmod(filepath.Join(snaps, id, "bin"), 0o755)
	if err := os.Remove(snapLink); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", snapLink); err != nil {
		t.Fatal(err)
	}
	if _, err := vs.CreateVolumeFromSnapshot(id, "", "", nil); err == nil || !strings.Contains(err.Error(), "file bin/link of snapshot") {
		t.Errorf("restore from a snapshot with a changed link: %v", err)
	}
}

// TestFileRemovedDuringTheCopyIsLeftOut copies a tree from which a file
// disappears after the walk, as a live volume's temporary files do: the
// copy succeeds without it, and its checksums do not list it.
func TestFileRemovedDuringTheCopyIsLeftOut(t *testing.T) {
	vol := tree(t, map[string]int{"keep": 10, "tmp/wal": 20})
	dst := filepath.Join(t.TempDir(), "copy")
	tc, err := newTreeCopy(vol, dst, 0, defaultAlgorithm)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := tc.plan()
	if err != nil || len(plan.files) != 2 {
		t.Fatalf("plan %+v, %v", plan, err)
	}
	if err := os.Remove(filepath.Join(vol, "tmp", "wal")); err != nil {
		t.Fatal(err)
	}
	if err := tc.run(context.Background(), plan, func(int64) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if got := contents(t, dst); !maps.Equal(got, contents(t, vol)) {
		t.Errorf("copy %v, volume %v", got, contents(t, vol))
	}
	if _, ok := tc.sums["tmp/wal"]; ok || len(tc.sums) != 1 {
		t.Errorf("checksums %v", tc.sums)
	}
}

// TestIDsFromTheBucketNeverLeaveItsDirectories: an ID read back from the
// bucket or the cluster is refused unless this snapshotter could have made
// it, so it never becomes a path outside its directories.
func TestIDsFromTheBucketNeverLeaveItsDirectories(t *testing.T) {
	root := t.TempDir()
	outside := filepath.Join(root, "outside")
	if err := os.MkdirAll(filepath.Join(outside, "keep"), 0o755); err != nil {
		t.Fatal(err)
	}
	config := map[string]string{"snapshotDir": filepath.Join(root, "snapshots")}
	s := newV2(t, config)
	for _, id := range []string{"../outside", "../outside/keep", "/etc", "snap-0123456789abcdef/../../outside", "snap-short", ""} {
		if err := s.DeleteSnapshot(id); err == nil {
			t.Errorf("DeleteSnapshot(%q) was accepted", id)
		}
		if _, err := s.CreateVolumeFromSnapshot(id, "", "", nil); err == nil {
			t.Errorf("CreateVolumeFromSnapshot(%q) was accepted", id)
		}
		if _, err := s.Progress(id); err == nil {
			t.Errorf("Progress(%q) was accepted", id)
		}
		if err := s.Cancel(id); err == nil {
			t.Errorf("Cancel(%q) was accepted", id)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "keep")); err != nil {
		t.Errorf("a directory outside the snapshotter's was touched: %v", err)
	}
	pv := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"hostPath": map[string]any{"path": "/data"}}}}
	if _, err := s.SetVolumeID(pv, "/etc"); err == nil {
		t.Error("SetVolumeID pointed a volume at /etc")
	}
	good := filepath.Join(root, "snapshots", "restored", "vol-0123456789abcdef")
	if out, err := s.SetVolumeID(pv, good); err != nil || out.(*unstructured.Unstructured).Object["spec"].(map[string]any)["hostPath"].(map[string]any)["path"] != good {
		t.Errorf("SetVolumeID of a restored volume: %v", err)
	}
}

// TestSwappedDirectoryNeverLeaksOutsideBytes: a pod swaps a directory of a
// live volume for a symbolic link to the host between the walk and the
// copy. The copy reads files inside the volume's root only: it fails that
// file, and nothing from outside reaches the snapshot.
func TestSwappedDirectoryNeverLeaksOutsideBytes(t *testing.T) {
	root := t.TempDir()
	src, dst, outside := filepath.Join(root, "vol"), filepath.Join(root, "snap"), filepath.Join(root, "host")
	for _, d := range []string{filepath.Join(src, "d"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(src, "d", "f"), []byte("inside"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "f"), []byte("SECRET OF THE HOST"), 0o600); err != nil {
		t.Fatal(err)
	}
	tc, err := newTreeCopy(src, dst, 0, defaultAlgorithm)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := tc.plan()
	if err != nil {
		t.Fatal(err)
	}
	// The swap, after the walk.
	if err := os.RemoveAll(filepath.Join(src, "d")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(src, "d")); err != nil {
		t.Fatal(err)
	}
	err = tc.run(context.Background(), plan, func(int64) error { return nil })
	if err == nil {
		t.Error("the copy of a volume whose directory became a link out of it succeeded")
	}
	_ = filepath.WalkDir(dst, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), "SECRET") {
				t.Errorf("%s holds the host's bytes", p)
			}
		}
		return nil
	})
}

// TestCopyLeftByAnotherProcessIsResumed: a copy whose state names another
// process (the plugin process that ran it died) is started again by the
// first Progress call and completes, whole; answering that call while the
// resumed copy runs shares no memory with it (the race detector, on in
// `make test`, watches).
func TestCopyLeftByAnotherProcessIsResumed(t *testing.T) {
	vol := tree(t, map[string]int{"a": 2 << 20, "b/c": 1 << 20})
	snaps := t.TempDir()
	config := map[string]string{"snapshotDir": snaps, "bytesPerSecond": "2097152"}
	vs := newV2(t, config)
	s := &vs.(*snapshotterV2).snapshotter
	id := newID("snap-")
	left := &state{Source: vol, Target: filepath.Join(snaps, id), Phase: phaseInProgress, PID: -1, Started: time.Now()}
	if err := s.writeState(id, left); err != nil {
		t.Fatal(err)
	}
	_, last := progressUntil(t, vs, id, func(p sdk.OperationProgress) bool { return p.Completed })
	if last.Err != "" || last.NCompleted != 3<<20 || last.NTotal != 3<<20 {
		t.Fatalf("the resumed copy ended with %+v", last)
	}
	if want, got := contents(t, vol), contents(t, filepath.Join(snaps, id)); !maps.Equal(want, got) {
		t.Errorf("the resumed copy differs from the volume:\n got %v\nwant %v", got, want)
	}
}
