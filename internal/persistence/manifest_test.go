package persistence

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"slices"
	"strings"
	"testing"
)

// testTarball is a small gzip'd tar with a version entry and two items.
func testTarball(t *testing.T) io.Reader {
	t.Helper()
	return bytes.NewReader(tarballOf(t, map[string]string{
		"metadata/version":                           "1.1.0",
		"resources/configmaps/namespaces/app/a.json": `{"kind":"ConfigMap","metadata":{"name":"a"}}`,
		"resources/configmaps/namespaces/app/b.json": `{"kind":"ConfigMap","metadata":{"name":"b"}}`,
	}))
}

func tarballOf(t *testing.T, entries map[string]string) []byte {
	t.Helper()
	return observedTarball(t, entries, nil)
}

// observedTarball is tarballOf handing each entry to observe as it is
// written, as archive.Writer does.
func observedTarball(t *testing.T, entries map[string]string, observe func(name string, body []byte) error) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if err := tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(entries[n])), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(entries[n])); err != nil {
			t.Fatal(err)
		}
		if observe != nil {
			if err := observe(n, []byte(entries[n])); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func sum(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// TestManifestCoversEveryFile: the manifest written with the metadata has
// every object of the backup (metadata included) by SHA-256 and size, and
// every item of the tarball; it is the same whether the tarball's digest
// was taken while uploading it, its items handed over by the writer as it
// wrote them (as backups do), or read back (after a restart).
func TestManifestCoversEveryFile(t *testing.T) {
	ctx := context.Background()
	for _, mode := range []string{"streamed", "observed", "read back"} {
		readBack := mode == "read back"
		s, fs := newStore(t, "team")
		var err error
		if mode == "observed" {
			items, ierr := NewItemDigests()
			if ierr != nil {
				t.Fatal(ierr)
			}
			tarball := observedTarball(t, map[string]string{
				"metadata/version":                           "1.1.0",
				"resources/configmaps/namespaces/app/a.json": `{"kind":"ConfigMap","metadata":{"name":"a"}}`,
				"resources/configmaps/namespaces/app/b.json": `{"kind":"ConfigMap","metadata":{"name":"b"}}`,
			}, items.Observe)
			err = s.PutTarballDigested(ctx, "b1", bytes.NewReader(tarball), items)
		} else {
			err = s.PutTarball(ctx, "b1", testTarball(t))
		}
		if err != nil {
			t.Fatal(err)
		}
		if readBack {
			s = New(fs, "bkt", "team") // another store: nothing remembered
		}
		f := Finish{Backup: backup("b1"), Logs: strings.NewReader("log"), Results: &Results{},
			ResourceList: map[string][]string{"v1/ConfigMap": {"app/a", "app/b"}}, ItemOperations: []any{}}
		if err := s.FinishBackup(ctx, f); err != nil {
			t.Fatal(err)
		}
		m, ok, err := s.GetManifest(ctx, "b1")
		if err != nil || !ok {
			t.Fatalf("%s: manifest %v %v", mode, ok, err)
		}
		var names []string
		for _, o := range m.Objects {
			names = append(names, o.Name)
			rc, err := s.OpenBackupObject(ctx, "b1", o.Name)
			if err != nil {
				t.Fatal(err)
			}
			d, _ := DigestObject(o.Name, rc)
			rc.Close()
			if d != o {
				t.Errorf("%s: %s is %+v in the manifest, %+v stored", mode, o.Name, o, d)
			}
		}
		want := []string{"b1-itemoperations.json.gz", "b1-logs.gz", "b1-resource-list.json.gz", "b1-results.gz", "b1-salvor-owner.json", "b1.tar.gz", "salvor-backup.json", "velero-backup.json"}
		if f.Backup.UID == "" {
			want = slices.DeleteFunc(want, func(n string) bool { return n == "b1-salvor-owner.json" })
		}
		if !slices.Equal(names, want) {
			t.Errorf("%s: manifest objects %v, want %v", mode, names, want)
		}
		wantItems := []ItemDigest{
			{Path: "resources/configmaps/namespaces/app/a.json", SHA256: sum(`{"kind":"ConfigMap","metadata":{"name":"a"}}`)},
			{Path: "resources/configmaps/namespaces/app/b.json", SHA256: sum(`{"kind":"ConfigMap","metadata":{"name":"b"}}`)},
		}
		if !slices.Equal(m.Items, wantItems) {
			t.Errorf("%s: items %+v, want %+v", mode, m.Items, wantItems)
		}
		// What the backup holds in the location: its files' sizes.
		var stored int64
		for _, o := range m.Objects {
			stored += o.Size
		}
		if n, ok, err := s.StoredBytes(ctx, "b1"); err != nil || !ok || n != stored || n == 0 {
			t.Errorf("%s: StoredBytes %d %v %v, want %d", mode, n, ok, err, stored)
		}
	}
	empty, _ := newStore(t, "team")
	if n, ok, err := empty.StoredBytes(ctx, "b1"); ok || err != nil || n != 0 {
		t.Errorf("StoredBytes of a backup without a manifest: %d %v %v", n, ok, err)
	}
}

// TestAppendLogReseals: a log's end line, added once the backup is whole,
// is in the manifest too.
func TestAppendLogReseals(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t, "")
	if err := s.PutTarball(ctx, "b1", testTarball(t)); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishBackup(ctx, Finish{Backup: backup("b1"), Logs: bytes.NewReader(gzipped(t, "first\n")), Results: &Results{}, ItemOperations: []any{}}); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendLog(ctx, "b1", []byte("last\n")); err != nil {
		t.Fatal(err)
	}
	m, _, err := s.GetManifest(ctx, "b1")
	if err != nil {
		t.Fatal(err)
	}
	rc, _ := s.OpenBackupObject(ctx, "b1", "b1-logs.gz")
	d, _ := DigestObject("b1-logs.gz", rc)
	rc.Close()
	if got, _ := m.Object("b1-logs.gz"); got != d {
		t.Errorf("log in the manifest %+v, stored %+v", got, d)
	}
}

func gzipped(t *testing.T, s string) []byte {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	gz.Write([]byte(s))
	gz.Close()
	return buf.Bytes()
}

// TestManifestRefusesWhatIsNotItsBackup: a manifest naming another backup
// (copied over, or a crafted bucket) is an error, not a pass.
func TestManifestRefusesWhatIsNotItsBackup(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t, "")
	if err := s.putManifest(ctx, &Manifest{Version: ManifestVersion, Backup: "other"}, nil); err != nil {
		t.Fatal(err)
	}
	// putManifest writes under the manifest's own backup name; copy it.
	rc, _ := s.store.GetObject(ctx, s.bucket, s.manifestKey("other"))
	b, _ := io.ReadAll(rc)
	rc.Close()
	s.store.PutObject(ctx, s.bucket, s.manifestKey("b1"), bytes.NewReader(b))
	if _, _, err := s.GetManifest(ctx, "b1"); err == nil || !strings.Contains(err.Error(), `backup "other"`) {
		t.Errorf("a manifest of another backup: %v", err)
	}
	if _, err := s.OpenBackupObject(ctx, "b1", "../b2/b2.tar.gz"); err == nil {
		t.Error("an object name leaving the backup's directory was opened")
	}
}
