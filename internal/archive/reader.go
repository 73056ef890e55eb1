package archive

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// MaxEntrySize bounds one entry: no Kubernetes object comes near it (etcd
// refuses objects over 1.5 MiB), so a larger entry is hostile or corrupt.
const MaxEntrySize = 16 << 20

// ErrInvalid wraps every reason a tarball is refused.
var ErrInvalid = errors.New("salvor: invalid backup tarball")

// Entry is one item read from a tarball.
type Entry struct {
	// Path is the entry's name in the tarball.
	Path string
	// Resource and Group name the item's resource; Version is set for
	// entries under a "<version>-preferredversion" directory.
	Resource, Group, Version string
	Namespace, Name          string
	Object                   *unstructured.Unstructured
	// Raw is the entry's JSON as the tarball holds it: it parsed into
	// Object.
	Raw []byte
}

// Read reads a whole tarball, calling fn for every item entry, after
// checking every entry. It returns the format version. An error from fn
// stops the read and is returned as is.
func Read(r io.Reader, fn func(Entry) error) (string, error) {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return "", fmt.Errorf("%w: not gzip: %v", ErrInvalid, err)
	}
	defer gz.Close()
	tr := tar.NewReader(gz)
	version := ""
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", fmt.Errorf("%w: %v", ErrInvalid, err)
		}
		if err := checkHeader(hdr); err != nil {
			return "", err
		}
		if hdr.Typeflag == tar.TypeDir {
			continue
		}
		// The header's size is checked above; the read stays bounded even
		// if the entry holds more than it says.
		body := bytes.NewBuffer(make([]byte, 0, hdr.Size+bytes.MinRead))
		_, err = body.ReadFrom(io.LimitReader(tr, MaxEntrySize+1))
		if err != nil {
			return "", fmt.Errorf("%w: reading %s: %v", ErrInvalid, hdr.Name, err)
		}
		if body.Len() > MaxEntrySize {
			return "", fmt.Errorf("%w: entry %s is larger than %d bytes", ErrInvalid, hdr.Name, MaxEntrySize)
		}
		name := path.Clean(hdr.Name)
		if name == VersionFile {
			version = strings.TrimSpace(body.String())
			if !supported(version) {
				return "", fmt.Errorf("%w: format version %q is not one Salvor reads (1.x)", ErrInvalid, version)
			}
			continue
		}
		e, ok, err := parsePath(name)
		if err != nil {
			return "", err
		}
		if !ok {
			continue
		}
		fields, err := DecodeObject(body.Bytes())
		obj := &unstructured.Unstructured{Object: fields}
		if err != nil {
			return "", fmt.Errorf("%w: entry %s is not valid JSON: %v", ErrInvalid, hdr.Name, err)
		}
		if obj.Object == nil || obj.GetKind() == "" || obj.GetName() == "" {
			return "", fmt.Errorf("%w: entry %s is not a Kubernetes object (no kind or name)", ErrInvalid, hdr.Name)
		}
		e.Object, e.Raw = obj, body.Bytes()
		if err := fn(e); err != nil {
			return "", err
		}
	}
	if version == "" {
		return "", fmt.Errorf("%w: no %s entry", ErrInvalid, VersionFile)
	}
	return version, nil
}

// Misfiled says why an entry's JSON names another object than its path
// does, "" when they agree. Filters, policies and mappings judge an item by
// its path, and the API server acts on the name in its JSON: a backup is
// untrusted, so an item whose two names differ is not one whose judgement
// can be trusted, and is not restored. A namespaced item's JSON may leave
// its namespace out (the path gives it); a cluster-scoped item's may not
// name one.
func (e Entry) Misfiled() string {
	if e.Object == nil {
		return ""
	}
	if name := e.Object.GetName(); name != e.Name {
		return fmt.Sprintf("entry %s holds an object named %q, not %q as its path says", e.Path, name, e.Name)
	}
	if ns := e.Object.GetNamespace(); ns != "" && ns != e.Namespace {
		if e.Namespace == "" {
			return fmt.Sprintf("entry %s is filed as cluster-scoped but holds an object in namespace %q", e.Path, ns)
		}
		return fmt.Sprintf("entry %s holds an object in namespace %q, not %q as its path says", e.Path, ns, e.Namespace)
	}
	return ""
}

func supported(version string) bool {
	return strings.HasPrefix(version, "1.")
}

func checkHeader(hdr *tar.Header) error {
	name := hdr.Name
	switch {
	case strings.HasPrefix(name, "/") || strings.HasPrefix(name, `\`):
		return fmt.Errorf("%w: entry %s has an absolute path", ErrInvalid, name)
	case strings.Contains(name, `\`):
		return fmt.Errorf("%w: entry %s has a backslash in its path", ErrInvalid, name)
	}
	for _, part := range strings.Split(name, "/") {
		if part == ".." {
			return fmt.Errorf("%w: entry %s leaves the archive (..)", ErrInvalid, name)
		}
	}
	switch hdr.Typeflag {
	case tar.TypeReg, tar.TypeDir:
	default:
		return fmt.Errorf("%w: entry %s is not a regular file (type %q)", ErrInvalid, name, hdr.Typeflag)
	}
	if hdr.Size > MaxEntrySize {
		return fmt.Errorf("%w: entry %s is larger than %d bytes", ErrInvalid, name, MaxEntrySize)
	}
	return nil
}

// parsePath reads resources/<res>[.<group>]/[<version>-preferredversion/]
// (namespaces/<ns>|cluster)/<name>.json. Entries outside resources/ are
// not items (ok false); malformed ones under it are errors.
func parsePath(name string) (Entry, bool, error) {
	parts := strings.Split(name, "/")
	if parts[0] != "resources" {
		return Entry{}, false, nil
	}
	bad := func(why string) (Entry, bool, error) {
		return Entry{}, false, fmt.Errorf("%w: entry %s: %s", ErrInvalid, name, why)
	}
	if len(parts) < 4 {
		return bad("too short for resources/<resource>/(namespaces/<ns>|cluster)/<name>.json")
	}
	e := Entry{Path: name}
	e.Resource, e.Group, _ = strings.Cut(parts[1], ".")
	rest := parts[2:]
	if v, ok := strings.CutSuffix(rest[0], "-preferredversion"); ok {
		e.Version = v
		rest = rest[1:]
	} else if rest[0] != "namespaces" && rest[0] != "cluster" {
		// Another version's copy (<version>/...): read its scope the same way.
		e.Version = rest[0]
		rest = rest[1:]
	}
	switch {
	case len(rest) == 3 && rest[0] == "namespaces":
		e.Namespace = rest[1]
		rest = rest[2:]
	case len(rest) == 2 && rest[0] == "cluster":
		rest = rest[1:]
	default:
		return bad("not under namespaces/<ns>/ or cluster/")
	}
	n, ok := strings.CutSuffix(rest[0], ".json")
	if !ok || n == "" {
		return bad("not a <name>.json file")
	}
	e.Name = n
	return e, true, nil
}
