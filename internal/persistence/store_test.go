package persistence

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
	"github.com/salvor-dev/salvor/pkg/objectstore/filesystem"
)

// fsStore calls Salvor's own filesystem object store in process, as the
// host would through its plugin process, and can be told to fail writes.
type fsStore struct {
	*filesystem.Store
	failPut func(key string) error
}

func (s *fsStore) Name() string { return filesystem.Name }
func (s *fsStore) PutObject(ctx context.Context, bucket, key string, body io.Reader) error {
	if s.failPut != nil {
		if err := s.failPut(key); err != nil {
			return err
		}
	}
	return s.Store.PutObjectWithContext(ctx, bucket, key, body)
}
func (s *fsStore) ObjectExists(_ context.Context, bucket, key string) (bool, error) {
	return s.Store.ObjectExists(bucket, key)
}
func (s *fsStore) GetObject(_ context.Context, bucket, key string) (io.ReadCloser, error) {
	return s.Store.GetObject(bucket, key)
}
func (s *fsStore) ListCommonPrefixes(ctx context.Context, bucket, prefix, delim string) ([]string, error) {
	return s.Store.ListCommonPrefixesWithContext(ctx, bucket, prefix, delim)
}
func (s *fsStore) ListObjects(ctx context.Context, bucket, prefix string) ([]string, error) {
	return s.Store.ListObjectsWithContext(ctx, bucket, prefix)
}
func (s *fsStore) DeleteObject(_ context.Context, bucket, key string) error {
	return s.Store.DeleteObject(bucket, key)
}
func (s *fsStore) CreateSignedURL(_ context.Context, bucket, key string, ttl time.Duration) (string, error) {
	return s.Store.CreateSignedURL(bucket, key, ttl)
}

func newStore(t *testing.T, prefix string) (*BackupStore, *fsStore) {
	t.Helper()
	fs := &fsStore{Store: &filesystem.Store{}}
	if err := fs.Init(map[string]string{"root": t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	return New(fs, "bkt", prefix), fs
}

// TestLayoutIsVelero pins every file's key to Velero's layout: Velero reads
// Salvor's locations and Salvor reads Velero's.
func TestLayoutIsVelero(t *testing.T) {
	s, _ := newStore(t, "/team-a/")
	for f, want := range map[File]string{
		TarballFile:             "team-a/backups/b1/b1.tar.gz",
		LogFile:                 "team-a/backups/b1/b1-logs.gz",
		ResultsFile:             "team-a/backups/b1/b1-results.gz",
		ResourceListFile:        "team-a/backups/b1/b1-resource-list.json.gz",
		ItemOperationsFile:      "team-a/backups/b1/b1-itemoperations.json.gz",
		VolumeSnapshotsFile:     "team-a/backups/b1/b1-volumesnapshots.json.gz",
		VolumePluginBackupsFile: "team-a/backups/b1/b1-volumepluginbackups.json.gz",
	} {
		if got := s.BackupFile("b1", f); got != want {
			t.Errorf("BackupFile(%s) = %s, want %s", f, got, want)
		}
	}
	for f, want := range map[File]string{
		LogFile:            "team-a/restores/r1/restore-r1-logs.gz",
		ResultsFile:        "team-a/restores/r1/restore-r1-results.gz",
		ItemOperationsFile: "team-a/restores/r1/restore-r1-itemoperations.json.gz",
	} {
		if got := s.RestoreFile("r1", f); got != want {
			t.Errorf("RestoreFile(%s) = %s, want %s", f, got, want)
		}
	}
	noPrefix, _ := newStore(t, "")
	if got := noPrefix.BackupFile("b1", TarballFile); got != "backups/b1/b1.tar.gz" {
		t.Errorf("without a prefix: %s", got)
	}
	defer func() {
		if recover() == nil {
			t.Error("a file outside the layout did not panic")
		}
	}()
	_ = File(99).Suffix()
}

func backup(name string) *salvorv1.Backup {
	return &salvorv1.Backup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "salvor", ResourceVersion: "7"},
		Spec: salvorv1.BackupSpec{StorageLocation: "default", IncludedNamespaces: []string{"app"}}}
}

// TestABackupIsWholeOnlyWithItsMetadata: files written before the metadata
// do not make a backup; the metadata does, in Salvor's and Velero's form.
func TestABackupIsWholeOnlyWithItsMetadata(t *testing.T) {
	ctx := context.Background()
	s, fs := newStore(t, "")
	if err := s.PutTarball(ctx, "b1", testTarball(t)); err != nil {
		t.Fatal(err)
	}
	f := Finish{Backup: backup("b1"), Logs: strings.NewReader("log"), Results: &Results{},
		ResourceList: map[string][]string{"v1/ConfigMap": {"app/c"}}, ItemOperations: []any{}}
	if err := s.PutFiles(ctx, f); err != nil {
		t.Fatal(err)
	}
	if l, err := s.ListBackups(ctx); err != nil || len(l) != 0 {
		t.Fatalf("before its metadata the backup is listed: %v, %v", l, err)
	}
	if _, err := s.GetBackup(ctx, "b1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("GetBackup before the metadata: %v", err)
	}
	if err := s.PutMetadata(ctx, f.Backup); err != nil {
		t.Fatal(err)
	}
	if l, err := s.ListBackups(ctx); err != nil || !slices.Equal(l, []string{"b1"}) {
		t.Fatalf("ListBackups = %v, %v", l, err)
	}
	got, err := s.GetBackup(ctx, "b1")
	if err != nil || got.Spec.IncludedNamespaces[0] != "app" || got.ResourceVersion != "" || got.Kind != "Backup" {
		t.Fatalf("GetBackup = %+v, %v", got, err)
	}
	// Velero's copy says velero.io/v1.
	rc, err := fs.GetObject(ctx, "bkt", "backups/b1/"+MetadataFile)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(rc)
	rc.Close()
	if !bytes.Contains(raw, []byte(`"apiVersion":"velero.io/v1"`)) {
		t.Errorf("%s: %s", MetadataFile, raw)
	}
	if rl, err := s.GetResourceList(ctx, "b1"); err != nil || rl["v1/ConfigMap"][0] != "app/c" {
		t.Errorf("GetResourceList = %v, %v", rl, err)
	}
	r, err := s.GetResults(ctx, "b1")
	if err != nil || r.Errors.Namespaces == nil || r.Warnings.Velero == nil {
		t.Errorf("results are written normalised, as Velero writes them: %+v, %v", r, err)
	}
	lr, err := s.GetLogs(ctx, "b1")
	if err != nil {
		t.Fatal(err)
	}
	lr.Close()
	if _, err := s.SignedKeyURL(ctx, s.BackupFile("b1", VolumeSnapshotsFile), time.Minute); err == nil || !strings.Contains(err.Error(), "b1-volumesnapshots.json.gz") {
		t.Errorf("a signed URL for a missing file: %v", err)
	}

	if err := s.DeleteBackup(ctx, "b1"); err != nil {
		t.Fatal(err)
	}
	if keys, _ := fs.ListObjectsWithContext(ctx, "bkt", "backups/"); len(keys) != 0 {
		t.Errorf("left after DeleteBackup: %v", keys)
	}
}

// TestFinishBackupLeavesNoHalfBackup: a write that fails leaves nothing
// that could be mistaken for a backup, and removes what the run wrote.
func TestFinishBackupLeavesNoHalfBackup(t *testing.T) {
	ctx := context.Background()
	s, fs := newStore(t, "")
	if err := s.ClaimName(ctx, "b2", string(backup("b2").UID)); err != nil {
		t.Fatal(err)
	}
	fs.failPut = func(key string) error {
		if strings.HasSuffix(key, MetadataFile) {
			return errors.New("503 Slow Down")
		}
		return nil
	}
	err := s.FinishBackup(ctx, Finish{Backup: backup("b2"), Results: &Results{}, ItemOperations: []any{}})
	if err == nil || !strings.Contains(err.Error(), "503 Slow Down") {
		t.Fatalf("FinishBackup = %v", err)
	}
	if l, _ := s.ListBackups(ctx); len(l) != 0 {
		t.Errorf("listed after a failed finish: %v", l)
	}
	if keys, _ := fs.ListObjectsWithContext(ctx, "bkt", "backups/b2/"); len(keys) != 0 {
		t.Errorf("left by the failed finish: %v", keys)
	}
}

// TestDeleteRunFilesOnlyWhatTheRunOwns: a failed run removes the files
// under a name only while the name's owner record is its own; another
// run's files (another cluster's, sharing the bucket) and files under a
// name it never claimed stay.
func TestDeleteRunFilesOnlyWhatTheRunOwns(t *testing.T) {
	ctx := context.Background()
	s, fs := newStore(t, "")
	write := func(name string) {
		if err := s.PutTarball(ctx, name, testTarball(t)); err != nil {
			t.Fatal(err)
		}
		if err := s.PutJSON(ctx, name, ResultsFile, &Results{}); err != nil {
			t.Fatal(err)
		}
	}
	count := func(name string) int {
		keys, _ := fs.ListObjectsWithContext(ctx, "bkt", "backups/"+name+"/")
		return len(keys)
	}
	// Two runs claimed "shared"; the other cluster's claim came last.
	if err := s.ClaimName(ctx, "shared", "mine"); err != nil {
		t.Fatal(err)
	}
	write("shared")
	if err := s.ClaimName(ctx, "shared", "theirs"); err != nil {
		t.Fatal(err)
	}
	if owner, claimed, err := s.Owner(ctx, "shared"); owner != "theirs" || !claimed || err != nil {
		t.Errorf("Owner(shared) = %q, %v, %v; want the last claim", owner, claimed, err)
	}
	if owner, claimed, err := s.Owner(ctx, "unclaimed"); owner != "" || claimed || err != nil {
		t.Errorf("Owner(unclaimed) = %q, %v, %v", owner, claimed, err)
	}
	if err := s.DeleteRunFiles(ctx, "shared", "mine"); !errors.Is(err, ErrNotOwner) {
		t.Errorf("deleting another run's files: %v", err)
	}
	if n := count("shared"); n != 3 {
		t.Errorf("%d files left under the other run's name, want 3", n)
	}
	if err := s.DeleteRunFiles(ctx, "shared", "theirs"); err != nil {
		t.Fatal(err)
	}
	if n := count("shared"); n != 0 {
		t.Errorf("%d files left by the owner's cleanup", n)
	}
	// A failed run keeps its log and results, and the owner record that
	// lets the Backup's deletion remove them later.
	if err := s.ClaimName(ctx, "failed", "mine"); err != nil {
		t.Fatal(err)
	}
	write("failed")
	if err := s.PutLogs(ctx, "failed", strings.NewReader("log")); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRunFiles(ctx, "failed", "mine", LogFile, ResultsFile); err != nil {
		t.Fatal(err)
	}
	if keys, _ := fs.ListObjectsWithContext(ctx, "bkt", "backups/failed/"); len(keys) != 3 {
		t.Errorf("a failed run kept %v, want its log, results and owner record", keys)
	}
	if whole, err := s.IsWhole(ctx, "failed"); whole || err != nil {
		t.Errorf("a failed run's files look whole: %v %v", whole, err)
	}
	if err := s.DeleteRunFiles(ctx, "failed", "mine"); err != nil || count("failed") != 0 {
		t.Errorf("deleting the failed backup left %d files: %v", count("failed"), err)
	}
	// Never claimed (written by Velero, or before the run began): kept.
	write("velero")
	if err := s.DeleteRunFiles(ctx, "velero", "mine"); err != nil {
		t.Fatal(err)
	}
	if n := count("velero"); n != 2 {
		t.Errorf("%d files left under an unclaimed name, want 2", n)
	}
}

func TestRestoreFilesRoundTrip(t *testing.T) {
	ctx := context.Background()
	s, fs := newStore(t, "p")
	in := &Results{}
	in.Warnings.Add(false, "app", "configmap app/c already exists")
	if err := s.PutRestoreJSON(ctx, "r1", ResultsFile, in); err != nil {
		t.Fatal(err)
	}
	out := &Results{}
	if err := s.GetRestoreJSON(ctx, "r1", ResultsFile, out); err != nil || len(out.Warnings.Namespaces["app"]) != 1 {
		t.Fatalf("GetRestoreJSON = %+v, %v", out, err)
	}
	// Stored gzip'd, under Velero's name.
	rc, err := fs.GetObject(ctx, "bkt", "p/restores/r1/restore-r1-results.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if _, err := gzip.NewReader(rc); err != nil {
		t.Errorf("not gzip: %v", err)
	}
	s.PutRestoreLogs(ctx, "r1", strings.NewReader("log"))
	if _, err := s.SignedKeyURL(ctx, s.RestoreFile("r1", LogFile), time.Minute); err != nil {
		t.Errorf("a signed URL of a restore's log: %v", err)
	}
}

// TestReadOnlyLocationIsNeverWritten: every write and delete is refused in
// the bucket; a restore's files live in memory instead.
func TestReadOnlyLocationIsNeverWritten(t *testing.T) {
	ctx := context.Background()
	rw, fs := newStore(t, "")
	if err := rw.PutTarball(ctx, "b1", testTarball(t)); err != nil {
		t.Fatal(err)
	}
	if err := rw.PutMetadata(ctx, backup("b1")); err != nil {
		t.Fatal(err)
	}
	scratch := &Scratch{}
	ro := NewReadOnly(fs, "bkt", "", scratch)

	for what, err := range map[string]error{
		"PutTarball":   ro.PutTarball(ctx, "b2", testTarball(t)),
		"PutMetadata":  ro.PutMetadata(ctx, backup("b2")),
		"PutJSON":      ro.PutJSON(ctx, "b1", ResultsFile, &Results{}),
		"DeleteBackup": ro.DeleteBackup(ctx, "b1"),
		"ClaimName":    ro.ClaimName(ctx, "b2", "uid"),
		"FinishBackup": ro.FinishBackup(ctx, Finish{Backup: backup("b3"), Results: &Results{}}),
	} {
		if !errors.Is(err, ErrReadOnly) {
			t.Errorf("%s on a ReadOnly location: %v", what, err)
		}
	}
	if l, err := ro.ListBackups(ctx); err != nil || !slices.Equal(l, []string{"b1"}) {
		t.Errorf("reading a ReadOnly location: %v, %v", l, err)
	}

	in := &Results{}
	in.Errors.Add(false, "app", "boom")
	if err := ro.PutRestoreJSON(ctx, "r1", ResultsFile, in); err != nil {
		t.Fatalf("a restore's results: %v", err)
	}
	out := &Results{}
	if err := ro.GetRestoreJSON(ctx, "r1", ResultsFile, out); err != nil || out.Errors.Count() != 1 {
		t.Errorf("a restore's results read back: %+v, %v", out, err)
	}
	keys, _ := fs.ListObjectsWithContext(ctx, "bkt", "")
	if want := []string{"backups/b1/b1-salvor-manifest.json.gz", "backups/b1/b1.tar.gz", "backups/b1/salvor-backup.json", "backups/b1/velero-backup.json"}; !slices.Equal(keys, want) {
		t.Errorf("the bucket holds %v; want only what the ReadWrite store wrote, %v", keys, want)
	}
	// A file in memory is handed out inline, whole, while it is small
	// enough for a DownloadRequest's status.
	u, err := ro.SignedKeyURL(ctx, ro.RestoreFile("r1", ResultsFile), time.Minute)
	kept, _ := scratch.get(ro.RestoreFile("r1", ResultsFile))
	if err != nil || u != "data:application/octet-stream;base64,"+base64.StdEncoding.EncodeToString(kept) || len(kept) == 0 {
		t.Errorf("the URL of a restore's file in memory: %.80q, %v", u, err)
	}
	big := make([]byte, MaxInlineBytes+1)
	ro.PutRestoreLogs(ctx, "r2", bytes.NewReader(big))
	if _, err := ro.SignedKeyURL(ctx, ro.RestoreFile("r2", LogFile), time.Minute); err == nil || !strings.Contains(err.Error(), "memory") || !strings.Contains(err.Error(), "too large") {
		t.Errorf("the URL of a file in memory too large to inline: %v", err)
	}
}

func TestScratchIsBounded(t *testing.T) {
	s := &Scratch{MaxBytes: 10}
	s.put("a", []byte("12345"))
	s.put("b", []byte("12345"))
	s.put("c", []byte("1"))
	if _, ok := s.get("a"); ok {
		t.Error("the oldest file was kept past the bound")
	}
	for _, k := range []string{"b", "c"} {
		if _, ok := s.get(k); !ok {
			t.Errorf("%s was dropped", k)
		}
	}
}

// TestAppendLog: lines appended to a backup's log read after its own, as
// one gzip stream; a backup without a log gets one.
func TestAppendLog(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t, "")
	var first bytes.Buffer
	gz := gzip.NewWriter(&first)
	_, _ = gz.Write([]byte("{\"msg\":\"first pass\"}\n"))
	_ = gz.Close()
	if err := s.PutLogs(ctx, "b", &first); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"b", "new"} {
		if err := s.AppendLog(ctx, name, []byte("{\"msg\":\"backup finished\"}\n")); err != nil {
			t.Fatal(err)
		}
	}
	read := func(name string) string {
		rc, err := s.GetLogs(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		zr, err := gzip.NewReader(rc)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if got := read("b"); got != "{\"msg\":\"first pass\"}\n{\"msg\":\"backup finished\"}\n" {
		t.Errorf("appended log reads %q", got)
	}
	if got := read("new"); got != "{\"msg\":\"backup finished\"}\n" {
		t.Errorf("a log made by appending reads %q", got)
	}
}

// listJSON is a resource list that writes itself, as a backup's does.
type listJSON string

func (l listJSON) WriteJSON(w io.Writer) error {
	_, err := io.WriteString(w, string(l))
	return err
}

// TestResourceListStreams writes a resource list as a stream (a JSONWriter)
// and reads it back whole and as the summary restores check against: its
// keys, the CRDs it holds and the namespaces it holds items in.
func TestResourceListStreams(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t, "")
	list := listJSON(`{"apiextensions.k8s.io/v1/CustomResourceDefinition":["widgets.example.io"],` +
		`"v1/ConfigMap":["app/a","app/b","web/c"],"v1/Namespace":["app","empty"]}`)
	if err := s.PutJSON(ctx, "b1", ResourceListFile, list); err != nil {
		t.Fatal(err)
	}
	whole, err := s.GetResourceList(ctx, "b1")
	if err != nil || len(whole["v1/ConfigMap"]) != 3 {
		t.Fatalf("GetResourceList = %v, %v", whole, err)
	}
	sum, err := s.GetListSummary(ctx, "b1")
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Keys) != 3 || !sum.Keys["v1/ConfigMap"] || !slices.Equal(sum.CRDs, []string{"widgets.example.io"}) {
		t.Errorf("summary keys %v, CRDs %v", sum.Keys, sum.CRDs)
	}
	if want := ListedNamespaces(whole); fmt.Sprint(sum.Namespaces) != fmt.Sprint(want) || len(want) != 3 {
		t.Errorf("summary namespaces %v, listed %v", sum.Namespaces, want)
	}
	// A list that is not one fails, naming the file.
	if err := s.PutJSON(ctx, "b2", ResourceListFile, listJSON(`{"v1/ConfigMap":"app/a"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetListSummary(ctx, "b2"); err == nil || !strings.Contains(err.Error(), "b2-resource-list.json.gz") {
		t.Errorf("a malformed list: %v", err)
	}
}

// plantedPrefixes answers a listing with directories a bucket's writer
// made (S3 keys may hold "..", which a filesystem cannot), and records
// every key asked about.
type plantedPrefixes struct {
	*fsStore
	extra []string
	asked []string
}

func (p *plantedPrefixes) ListCommonPrefixes(ctx context.Context, bucket, prefix, delim string) ([]string, error) {
	got, err := p.fsStore.ListCommonPrefixes(ctx, bucket, prefix, delim)
	return append(got, p.extra...), err
}

func (p *plantedPrefixes) ObjectExists(ctx context.Context, bucket, key string) (bool, error) {
	p.asked = append(p.asked, key)
	return p.fsStore.ObjectExists(ctx, bucket, key)
}

// TestBackupsNamesOnlyWhatABackupCanBe: a directory under backups/ whose
// name no Backup can have is listed apart and never read: "..", as part of
// a key, would lead to the prefix's own root.
func TestBackupsNamesOnlyWhatABackupCanBe(t *testing.T) {
	ctx := context.Background()
	_, fs := newStore(t, "team")
	for _, key := range []string{"team/backups/ok/velero-backup.json", "team/backups/Bad_Name/velero-backup.json", "team/velero-backup.json"} {
		if err := fs.PutObject(ctx, "bkt", key, strings.NewReader("{}")); err != nil {
			t.Fatal(err)
		}
	}
	planted := &plantedPrefixes{fsStore: fs, extra: []string{"team/backups/../", "team/backups/./"}}
	names, invalid, err := New(planted, "bkt", "team").Backups(ctx)
	if err != nil || !slices.Equal(names, []string{"ok"}) || !slices.Equal(invalid, []string{".", "..", "Bad_Name"}) {
		t.Fatalf("Backups() = %v, %v, %v", names, invalid, err)
	}
	for _, k := range planted.asked {
		if !strings.HasPrefix(k, "team/backups/ok/") {
			t.Errorf("read %s, outside the backups it lists", k)
		}
	}
}
