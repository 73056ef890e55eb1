package objectstore_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/salvor-dev/salvor/internal/plugin/host"
	"github.com/salvor-dev/salvor/internal/testbed"
	"github.com/salvor-dev/salvor/internal/testbin"
)

var salvor string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "salvor-objectstore-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if salvor, err = testbin.Build(dir, "salvor", "./cmd/salvor"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func builtins(t *testing.T) *host.Manager {
	t.Helper()
	m := host.NewManager(host.Options{Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(m.Close)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := m.Add(ctx, host.Command{Path: salvor, Args: []string{"run-plugins"}}); err != nil {
		t.Fatal(err)
	}
	return m
}

// contract is what every object store must do, as Salvor uses it.
func contract(t *testing.T, s host.ObjectStore, bucket string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	big := make([]byte, 12<<20+7) // larger than one multipart part and many plugin chunks
	if _, err := rand.Read(big); err != nil {
		t.Fatal(err)
	}
	objects := map[string][]byte{
		"backups/b1/velero-backup.json":  []byte(`{"kind":"Backup"}`),
		"backups/b1/b1.tar.gz":           big,
		"backups/b2/velero-backup.json":  []byte(`{}`),
		"restores/r1/restore-r1-logs.gz": {},
		"metadata/revision":              []byte("x"),
	}
	for k, v := range objects {
		if err := s.PutObject(ctx, bucket, k, bytes.NewReader(v)); err != nil {
			t.Fatalf("PutObject %s: %v", k, err)
		}
	}
	for k, v := range objects {
		rc, err := s.GetObject(ctx, bucket, k)
		if err != nil {
			t.Fatalf("GetObject %s: %v", k, err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || !bytes.Equal(got, v) {
			t.Errorf("GetObject %s: %d bytes (want %d), %v", k, len(got), len(v), err)
		}
	}
	top, err := s.ListCommonPrefixes(ctx, bucket, "", "/")
	if err != nil || strings.Join(top, ",") != "backups/,metadata/,restores/" {
		t.Errorf("top-level prefixes %v, %v", top, err)
	}
	sub, err := s.ListCommonPrefixes(ctx, bucket, "backups/", "/")
	if err != nil || strings.Join(sub, ",") != "backups/b1/,backups/b2/" {
		t.Errorf("backups/ prefixes %v, %v", sub, err)
	}
	keys, err := s.ListObjects(ctx, bucket, "backups/b1/")
	if err != nil || strings.Join(keys, ",") != "backups/b1/b1.tar.gz,backups/b1/velero-backup.json" {
		t.Errorf("ListObjects %v, %v", keys, err)
	}
	if ok, err := s.ObjectExists(ctx, bucket, "backups/b1/b1.tar.gz"); !ok || err != nil {
		t.Errorf("ObjectExists = %v, %v", ok, err)
	}
	if ok, err := s.ObjectExists(ctx, bucket, "backups/b9/nothing"); ok || err != nil {
		t.Errorf("ObjectExists(missing) = %v, %v", ok, err)
	}
	if _, err := s.GetObject(ctx, bucket, "backups/b9/nothing"); err == nil {
		t.Error("GetObject of a missing key succeeded")
	}
	if err := s.DeleteObject(ctx, bucket, "backups/b2/velero-backup.json"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := s.ObjectExists(ctx, bucket, "backups/b2/velero-backup.json"); ok {
		t.Error("object still there after DeleteObject")
	}
	url, err := s.CreateSignedURL(ctx, bucket, "backups/b1/velero-backup.json", time.Minute)
	if err != nil || url == "" {
		t.Errorf("CreateSignedURL = %q, %v", url, err)
	}
	if strings.HasPrefix(url, "http") {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(b) != `{"kind":"Backup"}` {
			t.Errorf("signed URL answered %d %q", resp.StatusCode, b)
		}
	}
}

func TestFilesystem(t *testing.T) {
	root := t.TempDir()
	s, err := host.Get(context.Background(), builtins(t), host.ObjectStores, "salvor.dev/filesystem", map[string]string{"root": root, "bucket": "bkt"})
	if err != nil {
		t.Fatal(err)
	}
	contract(t, s, "bkt")
	if _, err := os.Stat(filepath.Join(root, "bkt", "backups", "b1", "b1.tar.gz")); err != nil {
		t.Errorf("object not stored as a file: %v", err)
	}
	// A deleted object leaves no empty directory (b2 held one object),
	// and a directory still holding one stays, as does the bucket.
	if _, err := os.Stat(filepath.Join(root, "bkt", "backups", "b2")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the emptied directory of backups/b2: %v", err)
	}
	for _, key := range []string{"restores/r1/restore-r1-logs.gz", "metadata/revision"} {
		if err := s.DeleteObject(context.Background(), "bkt", key); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := os.ReadDir(filepath.Join(root, "bkt"))
	if err != nil || len(entries) != 1 || entries[0].Name() != "backups" {
		t.Errorf("the bucket after deleting all but backups/b1: %v, %v", entries, err)
	}
	// Written again where a directory went.
	if err := s.PutObject(context.Background(), "bkt", "backups/b2/velero-backup.json", strings.NewReader("{}")); err != nil {
		t.Errorf("PutObject where a deleted directory was: %v", err)
	}
	for _, key := range []string{"../x", "/abs", "a/../../b", "a/"} {
		if err := s.PutObject(context.Background(), "bkt", key, strings.NewReader("x")); err == nil {
			t.Errorf("PutObject(%q) succeeded", key)
		}
	}
	if err := s.PutObject(context.Background(), "../bkt", "k", strings.NewReader("x")); err == nil {
		t.Error("a bucket outside root was accepted")
	}
	if _, err := host.Get(context.Background(), builtins(t), host.ObjectStores, "salvor.dev/filesystem", map[string]string{"root": root, "region": "x"}); err == nil ||
		!strings.Contains(err.Error(), `config key "region" is not known`) {
		t.Errorf("unknown config key: %v", err)
	}
}

func TestS3OnMinIO(t *testing.T) {
	minio := testbed.StartMinIO(t, "bkt")
	cfg := map[string]string{
		"region": "minio", "s3Url": minio.Endpoint, "s3ForcePathStyle": "true",
		"credentialsFile": minio.CredentialsFile(t), "bucket": "bkt",
	}
	m := builtins(t)
	s, err := host.Get(context.Background(), m, host.ObjectStores, "salvor.dev/s3", cfg)
	if err != nil {
		t.Fatal(err)
	}
	contract(t, s, "bkt")

	for _, tc := range []struct {
		name string
		cfg  map[string]string
		want string
	}{
		{"unknown key", map[string]string{"s3Url": minio.Endpoint, "colour": "red"}, "config keys [colour] are not known"},
		{"bad bool", map[string]string{"s3Url": minio.Endpoint, "s3ForcePathStyle": "yes please"}, `s3ForcePathStyle="yes please"`},
		{"no region", map[string]string{}, "config region is required"},
		{"bad CA", map[string]string{"s3Url": minio.Endpoint, "caCert": "not a cert"}, "no PEM certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := host.Get(context.Background(), m, host.ObjectStores, "salvor.dev/s3", tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Init: %v, want %q", err, tc.want)
			}
		})
	}
	// Wrong credentials fail on use with the server's reason.
	bad := map[string]string{"s3Url": minio.Endpoint, "s3ForcePathStyle": "true", "credentialsFile": writeCreds(t, "nobody", "wrong")}
	s, err = host.Get(context.Background(), m, host.ObjectStores, "salvor.dev/s3", bad)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ListObjects(context.Background(), "bkt", ""); err == nil || !strings.Contains(err.Error(), "InvalidAccessKeyId") {
		t.Errorf("listing with bad credentials: %v", err)
	}
}

func writeCreds(t *testing.T, id, secret string) string {
	p := filepath.Join(t.TempDir(), "creds")
	if err := os.WriteFile(p, []byte(fmt.Sprintf("[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n", id, secret)), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
