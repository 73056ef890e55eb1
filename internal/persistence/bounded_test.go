package persistence

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/salvor-dev/salvor/internal/archive"
)

// gzipBomb is a gzip'd JSON array of n copies of elem: a few KiB in the
// bucket for a large n.
func gzipBomb(t *testing.T, elem string, n int) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	chunk := []byte(strings.Repeat(elem+",", 4096))
	_, _ = zw.Write([]byte("["))
	for i := 0; i < n/4096; i++ {
		_, _ = zw.Write(chunk)
	}
	_, _ = zw.Write([]byte(elem + "]"))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestSideFilesAreBoundedWhileDecoded: files planted in the bucket that
// decode into far more memory than their size are refused while they are
// read, naming the file, and the heap stays small; files as Salvor and
// Velero write them, and JSON whose strings hold what the count looks for,
// read as before.
func TestSideFilesAreBoundedWhileDecoded(t *testing.T) {
	ctx := context.Background()
	s, fs := newStore(t, "")
	put := func(key string, body []byte) {
		t.Helper()
		if err := fs.PutObject(ctx, "bkt", key, bytes.NewReader(body)); err != nil {
			t.Fatal(err)
		}
	}

	for _, tc := range []struct {
		name, file string
		body       []byte
		want       string // in the error; "" for none
	}{
		// 4 M empty objects in 12 MB of JSON: each becomes a whole struct.
		{"volume info of empty objects", "b1/b1-volumeinfo.json.gz", gzipBomb(t, "{}", 4<<20), "JSON values"},
		// 64 MB in 64 K volumes of long names: bytes, not values.
		{"volume info of long names", "b2/b2-volumeinfo.json.gz", gzipBomb(t, `{"pvcName":"`+strings.Repeat("x", 1<<10)+`"}`, 64<<10), "bytes (decompressed)"},
		{"a few volumes", "b3/b3-volumeinfo.json.gz", gzipped(t, `[{"pvcName":"a,{[","pvName":"p\"{,"}]`), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name, _, _ := strings.Cut(tc.file, "/")
			put("backups/"+tc.file, tc.body)
			var before runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, err := s.VeleroVolumes(ctx, name)
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("a file as written: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.file) {
				t.Fatalf("got %v, want ErrTooLarge saying %q and naming %s", err, tc.want, tc.file)
			}
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 512<<20 {
				t.Errorf("reading it allocated %d MiB", grew>>20)
			}
		})
	}

	// Velero's metadata file, 8 MiB of labels: no Backup is that large.
	put("backups/big/velero-backup.json", []byte(`{"metadata":{"name":"big","labels":{"a":"`+strings.Repeat("x", 8<<20)+`"}}}`))
	if _, err := s.GetBackup(ctx, "big"); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "backups/big/velero-backup.json") {
		t.Errorf("an 8 MiB metadata file: %v", err)
	}
}

// TestDigestTarballBoundsEntries: hashing a tarball reads each entry with
// the bound a restore reads it with, so a planted entry of GiBs is refused,
// not held in memory.
func TestDigestTarballBoundsEntries(t *testing.T) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	size := int64(archive.MaxEntrySize + 1)
	if err := tw.WriteHeader(&tar.Header{Name: "resources/configmaps/namespaces/n/big.json", Size: size, Mode: 0o644, Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	if _, err := io.CopyN(tw, zeros{}, size); err != nil {
		t.Fatal(err)
	}
	_ = tw.Close()
	_ = zw.Close()
	_, err := DigestTarball("b.tar.gz", &buf)
	if !errors.Is(err, archive.ErrInvalid) || !strings.Contains(err.Error(), "big.json is larger than") {
		t.Errorf("a %d-byte entry: %v", size, err)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }
