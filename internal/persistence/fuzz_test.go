package persistence

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
)

// FuzzSideFiles feeds every reader of a backup's JSON files in the bucket
// (metadata, journal, results, resource list and its summary, item
// operations, manifest and its signature, Velero's volume records) whatever the bucket may
// hold, raw and gzip'd: none may panic, and a refusal for size is
// ErrTooLarge.
func FuzzSideFiles(f *testing.F) {
	for _, seed := range []string{
		`{"apiVersion":"velero.io/v1","kind":"Backup","metadata":{"name":"b"},"status":{"phase":"Completed"}}`,
		`{"kind":"snapshot","location":"l","id":"s","mac":"00"}`,
		`{"v1/ConfigMap":["ns/a","ns/b"],"v1/Namespace":["ns"]}`,
		`[{"spec":{"operationID":"x","backupItemAction":"p"},"status":{"phase":"InProgress"}}]`,
		`[{"pvcName":"a","pvName":"p","backupMethod":"PodVolumeBackup"}]`,
		`{"version":1,"backup":"b","items":[{"path":"resources/x","sha256":"00"}]}`,
		`{"version":1,"backup":"b","location":"primary","keyID":"x","itemsSHA256":"00","mac":"00","objects":[{"name":"velero-backup.json","size":3,"sha256":"00"}],"items":[]}`,
		`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`,
		`{"a":"\"{[,","b":[{},{},{}]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx := context.Background()
		fs := memStore{}
		s := New(fs, "bkt", "")
		s.SetManifestKeys(NewManifestKeys("primary", "the fuzzer", bytes.Repeat([]byte{7}, 32)))
		var gz bytes.Buffer
		zw := gzip.NewWriter(&gz)
		_, _ = zw.Write(data)
		_ = zw.Close()
		for _, o := range []struct {
			key  string
			body []byte
		}{
			{"backups/b/velero-backup.json", data},
			{"backups/b/journal/snapshot-x.json", data},
			{"backups/b/b" + ResultsFile.Suffix(), gz.Bytes()},
			{"backups/b/b" + ResourceListFile.Suffix(), gz.Bytes()},
			{"backups/b/b" + ItemOperationsFile.Suffix(), gz.Bytes()},
			{"backups/b/b" + ManifestFile.Suffix(), gz.Bytes()},
			{"backups/b/b" + VolumeInfoFile.Suffix(), gz.Bytes()},
			{"backups/b/b" + PodVolumeBackupsFile.Suffix(), data}, // not gzip'd: refused
		} {
			fs["bkt/"+o.key] = o.body
		}
		var ops []map[string]any
		for _, err := range []error{
			second(s.GetBackup(ctx, "b")),
			second(s.ReadJournal(ctx, "b")),
			second(s.GetResults(ctx, "b")),
			second(s.GetResourceList(ctx, "b")),
			second(s.GetListSummary(ctx, "b")),
			s.GetItemOperations(ctx, "b", &ops),
			third(s.GetManifest(ctx, "b")),
			second(s.AuthenticateHeader(ctx, "b", "")),
			second(s.Authenticate(ctx, "b", "")),
			second(s.VeleroVolumes(ctx, "b")),
		} {
			if err != nil && strings.Contains(err.Error(), "more than Salvor writes there") && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("a refusal for size that is not ErrTooLarge: %v", err)
			}
		}
	})
}

func second[T any](_ T, err error) error { return err }

func third[T, U any](_ T, _ U, err error) error { return err }

// memStore is an object store in memory, for the fuzzer's speed.
type memStore map[string][]byte

func (memStore) Name() string { return "memory" }
func (m memStore) PutObject(_ context.Context, bucket, key string, body io.Reader) error {
	b, err := io.ReadAll(body)
	m[bucket+"/"+key] = b
	return err
}
func (m memStore) ObjectExists(_ context.Context, bucket, key string) (bool, error) {
	_, ok := m[bucket+"/"+key]
	return ok, nil
}
func (m memStore) GetObject(_ context.Context, bucket, key string) (io.ReadCloser, error) {
	b, ok := m[bucket+"/"+key]
	if !ok {
		return nil, fmt.Errorf("%s: no such object", key)
	}
	return io.NopCloser(bytes.NewReader(b)), nil
}
func (m memStore) ListCommonPrefixes(context.Context, string, string, string) ([]string, error) {
	return nil, nil
}
func (m memStore) ListObjects(_ context.Context, bucket, prefix string) ([]string, error) {
	var out []string
	for k := range m {
		if key, ok := strings.CutPrefix(k, bucket+"/"); ok && strings.HasPrefix(key, prefix) {
			out = append(out, key)
		}
	}
	return out, nil
}
func (m memStore) DeleteObject(_ context.Context, bucket, key string) error {
	delete(m, bucket+"/"+key)
	return nil
}
func (memStore) CreateSignedURL(context.Context, string, string, time.Duration) (string, error) {
	return "", errors.New("memory store: no URLs")
}
