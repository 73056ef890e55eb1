package persistence

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// getJSON reads the JSON file key into v, reading no more of it than
// limit: the bucket is untrusted, and a few KiB of gzip can hold GiBs of
// JSON that would take the server's memory.
func (s *BackupStore) getJSON(ctx context.Context, key string, gz bool, limit readLimit, v any) error {
	rc, err := s.getObject(ctx, key)
	if err != nil {
		return err
	}
	defer rc.Close()
	var r io.Reader = rc
	if gz {
		zr, err := gzip.NewReader(rc)
		if err != nil {
			return fmt.Errorf("%s is not gzip: %w", key, err)
		}
		defer zr.Close()
		r = zr
	}
	dec := json.NewDecoder(&bounded{r: r, limit: limit, key: key})
	if sd, ok := v.(streamDecoder); ok {
		err = sd.decodeFrom(dec)
	} else {
		err = dec.Decode(v)
	}
	if errors.Is(err, ErrTooLarge) || errors.Is(err, ErrForged) {
		return err
	}
	if err != nil {
		return fmt.Errorf("%s is not valid JSON: %w", key, err)
	}
	if c, ok := rc.(*checkedReader); ok {
		// The check is made at the object's end (bounded by its signed size).
		if _, err := io.Copy(io.Discard, c); err != nil {
			return err
		}
	}
	return nil
}

// ErrTooLarge: a file in the location is larger than what Salvor writes
// there could be; it is not read.
var ErrTooLarge = errors.New("salvor: file too large")

// bounded reads r, failing once more than limit.bytes came out of it, or
// more than limit.values JSON values (each '{', '[' and ',' outside
// strings starts one): a decoded value costs far more memory than its
// bytes (an empty object in a file becomes a whole struct), so bytes
// alone do not bound what decoding takes.
type bounded struct {
	r     io.Reader
	limit readLimit
	key   string
	n     readLimit // read so far
	// inString and escaped carry the scan across reads.
	inString, escaped bool
}

func (b *bounded) Read(p []byte) (int, error) {
	if err := b.over(); err != nil {
		return 0, err
	}
	if left := b.limit.bytes - b.n.bytes; int64(len(p)) > left+1 {
		p = p[:left+1]
	}
	n, err := b.r.Read(p)
	b.n.bytes += int64(n)
	for _, c := range p[:n] {
		switch {
		case b.escaped:
			b.escaped = false
		case b.inString && c == '\\':
			b.escaped = true
		case c == '"':
			b.inString = !b.inString
		case !b.inString && (c == '{' || c == '[' || c == ','):
			b.n.values++
		}
	}
	if over := b.over(); over != nil {
		return n, over
	}
	return n, err
}

func (b *bounded) over() error {
	switch {
	case b.n.bytes > b.limit.bytes:
		return fmt.Errorf("%w: %s holds more than %d bytes (decompressed), more than Salvor writes there; not read", ErrTooLarge, b.key, b.limit.bytes)
	case b.n.values > b.limit.values:
		return fmt.Errorf("%w: %s holds more than %d JSON values, more than Salvor writes there; not read", ErrTooLarge, b.key, b.limit.values)
	}
	return nil
}

// streamDecoder is a value that reads its JSON piece by piece, for a file
// too large to hold in memory whole.
type streamDecoder interface {
	decodeFrom(dec *json.Decoder) error
}

// GetBackup reads a backup's metadata: Salvor's file if present, else
// Velero's (a backup written by Velero).
func (s *BackupStore) GetBackup(ctx context.Context, name string) (*salvorv1.Backup, error) {
	ok, err := s.store.ObjectExists(ctx, s.bucket, s.key("backups", name, MetadataFile))
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, name)
	}
	b := &salvorv1.Backup{}
	key := s.key("backups", name, SalvorMetadataFile)
	if ok, _ := s.store.ObjectExists(ctx, s.bucket, key); !ok {
		key = s.key("backups", name, MetadataFile)
	}
	if err := s.getJSON(ctx, key, false, metadataLimit, b); err != nil {
		return nil, err
	}
	b.APIVersion, b.Kind = salvorv1.GroupVersion.String(), "Backup"
	return b, nil
}

// GetResults reads a backup's results.
func (s *BackupStore) GetResults(ctx context.Context, name string) (*Results, error) {
	r := &Results{}
	return r, s.GetBackupJSON(ctx, name, ResultsFile, r)
}

// GetResourceList reads a backup's resource list.
func (s *BackupStore) GetResourceList(ctx context.Context, name string) (map[string][]string, error) {
	var r map[string][]string
	return r, s.GetBackupJSON(ctx, name, ResourceListFile, &r)
}

// GetItemOperations reads a backup's item operations into v.
func (s *BackupStore) GetItemOperations(ctx context.Context, name string, v any) error {
	return s.GetBackupJSON(ctx, name, ItemOperationsFile, v)
}

// GetVolumeSnapshots reads a backup's volume snapshots into v; a backup
// without the file has none (ok false).
func (s *BackupStore) GetVolumeSnapshots(ctx context.Context, name string, v any) (bool, error) {
	return s.getOptionalJSON(ctx, name, VolumeSnapshotsFile, v)
}

// GetBackupJSON reads one of a backup's gzip'd JSON files into v.
func (s *BackupStore) GetBackupJSON(ctx context.Context, name string, f File, v any) error {
	return s.getJSON(ctx, s.BackupFile(name, f), true, f.readLimit(), v)
}

// ListedNamespaces are the namespaces a backup's resource list holds items
// of, or Namespace objects of: entries are "<namespace>/<name>" for
// namespaced items and "<name>" for the others.
func ListedNamespaces(list map[string][]string) map[string]bool {
	sum := newListSummary()
	for key, items := range list {
		for _, item := range items {
			sum.add(key, item)
		}
	}
	return sum.Namespaces
}

// ListSummary is what a restore's checks need of a backup's resource list:
// its keys (group/version/Kind, "v1/ConfigMap" for the core group), the
// names of the CustomResourceDefinitions it holds and the namespaces it
// holds items in (see ListedNamespaces). It is read as a stream: a large
// backup's list is never held whole.
type ListSummary struct {
	Keys       map[string]bool
	CRDs       []string
	Namespaces map[string]bool
}

func newListSummary() *ListSummary {
	return &ListSummary{Keys: map[string]bool{}, Namespaces: map[string]bool{}}
}

func (l *ListSummary) add(key, item string) {
	l.Keys[key] = true
	if ns, _, namespaced := strings.Cut(item, "/"); namespaced {
		l.Namespaces[ns] = true
	} else if key == "v1/Namespace" {
		l.Namespaces[item] = true
	}
	if key == "apiextensions.k8s.io/v1/CustomResourceDefinition" {
		l.CRDs = append(l.CRDs, item)
	}
}

func (l *ListSummary) decodeFrom(dec *json.Decoder) error {
	if err := expect(dec, json.Delim('{')); err != nil {
		return err
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := t.(string)
		l.Keys[key] = true
		if err := expect(dec, json.Delim('[')); err != nil {
			return err
		}
		for dec.More() {
			var item string
			if err := dec.Decode(&item); err != nil {
				return err
			}
			l.add(key, item)
		}
		if err := expect(dec, json.Delim(']')); err != nil {
			return err
		}
	}
	return expect(dec, json.Delim('}'))
}

// GetListSummary reads a backup's resource list as a ListSummary.
func (s *BackupStore) GetListSummary(ctx context.Context, name string) (*ListSummary, error) {
	sum := newListSummary()
	return sum, s.GetBackupJSON(ctx, name, ResourceListFile, sum)
}
