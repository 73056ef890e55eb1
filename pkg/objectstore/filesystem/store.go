package filesystem

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/salvor-dev/salvor/pkg/plugin/sdk"
)

// Name is the built-in store's plugin name.
const Name = "salvor.dev/filesystem"

// New returns an uninitialised store, as a plugin factory.
func New(*slog.Logger) (sdk.ObjectStore, error) { return &Store{}, nil }

// Store keeps objects as files; see the package doc.
type Store struct{ root string }

var _ sdk.ObjectStore = (*Store)(nil)

func (s *Store) Init(config map[string]string) error {
	for k := range config {
		switch k {
		case "root", "bucket", "prefix", "caCert":
		default:
			return fmt.Errorf("config key %q is not known; the filesystem store takes root", k)
		}
	}
	root := config["root"]
	if root == "" || !filepath.IsAbs(root) {
		return fmt.Errorf("config root=%q: want an absolute directory path", root)
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return fmt.Errorf("creating root %s: %w", root, err)
	}
	s.root = root
	return nil
}

// file maps bucket and key to a path, refusing anything that would leave
// the bucket's directory.
func (s *Store) file(bucket, key string) (string, error) {
	if s.root == "" {
		return "", errors.New("the store was not initialised")
	}
	dir, err := BucketDir(s.root, bucket)
	if err != nil {
		return "", err
	}
	clean := path.Clean("/" + key)
	if key == "" || clean != "/"+strings.TrimSuffix(key, "/") || strings.HasSuffix(key, "/") {
		return "", fmt.Errorf("key %q is not a clean relative path", key)
	}
	return filepath.Join(dir, filepath.FromSlash(clean)), nil
}

// CheckConfinedDir says why dir cannot be a directory that filesystem
// locations' roots are confined to (salvor install and salvor server
// --filesystem-location-dir): it is a directory of the nodes, mounted at
// the same path in the server's pod and the node agent's, so it must be a
// clean absolute path, and not /, which would confine nothing.
func CheckConfinedDir(dir string) error {
	if !path.IsAbs(dir) || path.Clean(dir) != dir || dir == "/" {
		return errors.New("want a clean absolute path of a directory other than /")
	}
	return nil
}

// BucketDir is bucket's directory in root: a bucket is one plain directory
// of root, never a path that leaves it. Volume data kept in a filesystem
// location (kopia's repositories) is laid out under the same directories.
func BucketDir(root, bucket string) (string, error) {
	if bucket == "" || strings.ContainsAny(bucket, `/\`) || bucket == "." || bucket == ".." {
		return "", fmt.Errorf("bucket %q: want a plain directory name", bucket)
	}
	return filepath.Join(root, bucket), nil
}

func (s *Store) PutObject(bucket, key string, body io.Reader) error {
	return s.PutObjectWithContext(context.Background(), bucket, key, body)
}

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// PutObjectWithContext writes to a temporary file and renames it into place,
// so a reader never sees half an object, and stops when the host gives up.
func (s *Store) PutObjectWithContext(ctx context.Context, bucket, key string, body io.Reader) error {
	name, err := s.file(bucket, key)
	if err != nil {
		return err
	}
	tmp, err := s.createTemp(filepath.Dir(name))
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, ctxReader{ctx, body}); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s/%s: %w", bucket, key, err)
	}
	// The bytes reach the disk before the name does: without the sync, a
	// crash soon after the rename can leave the object's name on an empty
	// file, and a backup whose metadata was written would look whole.
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s/%s: %w", bucket, key, err)
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), name); err != nil {
		return err
	}
	return syncDir(filepath.Dir(name))
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		// Some file systems (and Windows) cannot sync a directory; the
		// file itself is synced already.
		return fmt.Errorf("syncing directory %s: %w", dir, err)
	}
	return nil
}

func (s *Store) ObjectExists(bucket, key string) (bool, error) {
	name, err := s.file(bucket, key)
	if err != nil {
		return false, err
	}
	info, err := os.Stat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil && info.Mode().IsRegular(), err
}

func (s *Store) GetObject(bucket, key string) (io.ReadCloser, error) {
	name, err := s.file(bucket, key)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("object %s/%s does not exist", bucket, key)
	}
	return f, err
}

// keys lists every object key in bucket that starts with prefix, walking
// only the directory the prefix points into.
func (s *Store) keys(ctx context.Context, bucket, prefix string) ([]string, error) {
	if s.root == "" {
		return nil, errors.New("the store was not initialised")
	}
	dir, err := BucketDir(s.root, bucket)
	if err != nil {
		return nil, err
	}
	start := dir
	if i := strings.LastIndex(prefix, "/"); i > 0 {
		start = filepath.Join(dir, filepath.FromSlash(path.Clean("/"+prefix[:i])))
	}
	var out []string
	err = filepath.WalkDir(start, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() || strings.HasPrefix(d.Name(), ".put-") {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		if key := filepath.ToSlash(rel); strings.HasPrefix(key, prefix) {
			out = append(out, key)
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}

func (s *Store) ListObjects(bucket, prefix string) ([]string, error) {
	return s.keys(context.Background(), bucket, prefix)
}

// ListObjectsWithContext stops a long listing when the host gives up.
func (s *Store) ListObjectsWithContext(ctx context.Context, bucket, prefix string) ([]string, error) {
	return s.keys(ctx, bucket, prefix)
}

func (s *Store) ListCommonPrefixes(bucket, prefix, delimiter string) ([]string, error) {
	return s.ListCommonPrefixesWithContext(context.Background(), bucket, prefix, delimiter)
}

// ListCommonPrefixesWithContext stops a long listing when the host gives up.
func (s *Store) ListCommonPrefixesWithContext(ctx context.Context, bucket, prefix, delimiter string) ([]string, error) {
	keys, err := s.keys(ctx, bucket, prefix)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, k := range keys {
		rest := strings.TrimPrefix(k, prefix)
		if i := strings.Index(rest, delimiter); i >= 0 {
			p := prefix + rest[:i+len(delimiter)]
			if len(out) == 0 || out[len(out)-1] != p {
				out = append(out, p)
			}
		}
	}
	return out, nil
}

// createTemp makes a temporary file in dir, making dir first. A delete
// may remove dir, emptied, between the two (DeleteObject): then dir is
// made again.
func (s *Store) createTemp(dir string) (*os.File, error) {
	for try := 0; ; try++ {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		tmp, err := os.CreateTemp(dir, ".put-*")
		if errors.Is(err, fs.ErrNotExist) && try < 3 {
			continue
		}
		return tmp, err
	}
}

// DeleteObject removes an object's file, and then each directory above it
// that this left empty, up to the bucket's: an object store has no empty
// directories, and a deleted backup leaves none behind.
func (s *Store) DeleteObject(bucket, key string) error {
	name, err := s.file(bucket, key)
	if err != nil {
		return err
	}
	if err := os.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	top := filepath.Join(s.root, bucket)
	for dir := filepath.Dir(name); dir != top && strings.HasPrefix(dir, top+string(filepath.Separator)); dir = filepath.Dir(dir) {
		// Fails (and stops) at the first directory that holds anything.
		if os.Remove(dir) != nil {
			break
		}
	}
	return nil
}

// CreateSignedURL returns a file URL: a local directory has nothing to sign.
func (s *Store) CreateSignedURL(bucket, key string, _ time.Duration) (string, error) {
	name, err := s.file(bucket, key)
	if err != nil {
		return "", err
	}
	return "file://" + filepath.ToSlash(name), nil
}
