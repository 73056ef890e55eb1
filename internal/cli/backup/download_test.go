package backup

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func gzTar(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, body := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			t.Fatal(err)
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

// TestSaveKeepsOnlyAWholeTarball: a download is renamed into place only
// once read through as a whole gzip tar; one cut short, damaged or not a
// tarball at all leaves no file (and no temporary one) behind.
func TestSaveKeepsOnlyAWholeTarball(t *testing.T) {
	whole := gzTar(t, map[string]string{"metadata/version": "1.1.0", "resources/configmaps/namespaces/app/cfg.json": strings.Repeat(`{"a":1}`, 5000)})
	damaged := bytes.Clone(whole)
	damaged[len(damaged)/2] ^= 0xff
	for _, tc := range []struct {
		name string
		body []byte
		want string // in the error; "" for none
	}{
		{"whole", whole, ""},
		{"cut short", whole[:len(whole)-20], "damaged or cut short"},
		{"cut in the trailer", whole[:len(whole)-4], "damaged or cut short"},
		{"damaged", damaged, "backup b"},
		{"not gzip", []byte("<Error>AccessDenied</Error>"), "not gzip-compressed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "b-data.tar.gz")
			err := save(bytes.NewReader(tc.body), path, "b")
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				got, err := os.ReadFile(path)
				if err != nil || !bytes.Equal(got, tc.body) {
					t.Fatalf("file holds %d bytes (%v), want the %d downloaded", len(got), err, len(tc.body))
				}
				if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
					t.Errorf("file mode %v: the tarball holds Secrets, want 0600", fi.Mode().Perm())
				}
			} else if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("save: %v, want an error saying %q", err, tc.want)
			}
			left, _ := os.ReadDir(dir)
			wantFiles := 0
			if tc.want == "" {
				wantFiles = 1
			}
			if len(left) != wantFiles {
				t.Errorf("%d files left in the directory, want %d", len(left), wantFiles)
			}
		})
	}
}

// TestOpenDataURL: a restore's file handed out inline (a ReadOnly
// location's, kept in the server's memory) reads back as it was; a data:
// URL that is not base64, or whose base64 is broken, is an error.
func TestOpenDataURL(t *testing.T) {
	rc, err := open(context.Background(), "data:application/octet-stream;base64,"+base64.StdEncoding.EncodeToString([]byte("results")), nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	if err != nil || string(got) != "results" {
		t.Errorf("read %q, %v", got, err)
	}
	for _, bad := range []string{"data:text/plain,results", "data:application/octet-stream;base64,@@@", "data:no-comma"} {
		if _, err := open(context.Background(), bad, nil); err == nil {
			t.Errorf("open(%q) succeeded", bad)
		}
	}
}
