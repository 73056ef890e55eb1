package persistence

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// ManifestVersion is the version of the manifest's format.
const ManifestVersion = 1

// Manifest is what a whole backup holds, by SHA-256: every object Salvor
// stored for it and every item in its tarball. It is written just before
// the metadata, so a backup that looks whole always has one; verification
// compares the location with it.
type Manifest struct {
	Version int    `json:"version"`
	Backup  string `json:"backup"`
	// UID is the Backup's, as the run that wrote the files knew it.
	UID     string    `json:"uid,omitempty"`
	Written time.Time `json:"written"`
	// Objects are the backup's files, by name inside backups/<name>/
	// (the metadata files included; the manifest itself is not).
	Objects []ObjectDigest `json:"objects"`
	// Location, KeyID, ItemsSHA256 and MAC sign the manifest (see
	// ManifestKeys): the MAC covers every field above and the digest of
	// the items, so the items may follow it in the stream. An unsigned
	// manifest has none of them.
	Location    string `json:"location,omitempty"`
	KeyID       string `json:"keyID,omitempty"`
	ItemsSHA256 string `json:"itemsSHA256,omitempty"`
	MAC         string `json:"mac,omitempty"`
	// Items are the tarball's item entries (resources/...), in its order.
	// They come last, so a reader of the header need not read them.
	Items []ItemDigest `json:"items"`
}

// Object returns the digest of the object named name, if the manifest has it.
func (m *Manifest) Object(name string) (ObjectDigest, bool) {
	for _, o := range m.Objects {
		if o.Name == name {
			return o, true
		}
	}
	return ObjectDigest{}, false
}

// putTarballDigesting streams a tarball to the store and hashes it on the
// way; the digest is remembered only if the whole stream went out and
// parsed.
func (s *BackupStore) putTarballDigesting(ctx context.Context, name string, r io.Reader) error {
	key := s.BackupFile(name, TarballFile)
	s.written.forget(key)
	pr, pw := io.Pipe()
	done := make(chan struct{})
	var dg TarballDigest
	var derr error
	go func() {
		defer close(done)
		dg, derr = DigestTarball(name+TarballFile.Suffix(), pr)
		// Whatever the digest made of it, the upload must read on.
		_, _ = io.Copy(io.Discard, pr)
	}()
	err := s.store.PutObject(ctx, s.bucket, key, io.TeeReader(r, pw))
	pw.Close()
	<-done
	if err == nil && derr == nil {
		s.written.put(key, dg)
	} else {
		dg.Items.Close()
	}
	return err
}

// PutTarballDigested streams a tarball whose item entries the writer
// handed to items as it wrote them, so the manifest gets them without the
// tarball being read again; the object's own digest is taken on the way.
// items belongs to the store from here on.
func (s *BackupStore) PutTarballDigested(ctx context.Context, name string, r io.Reader, items *ItemDigests) error {
	key := s.BackupFile(name, TarballFile)
	s.written.forget(key)
	d := NewDigester()
	err := s.store.PutObject(ctx, s.bucket, key, io.TeeReader(r, d))
	if err == nil {
		err = items.w.Flush()
	}
	if err != nil {
		items.Close()
		return err
	}
	s.written.put(key, TarballDigest{Object: d.Digest(name + TarballFile.Suffix()), Items: items})
	return nil
}

// ManifestFile's key.
func (s *BackupStore) manifestKey(name string) string { return s.BackupFile(name, ManifestFile) }

// seal writes the manifest of a backup whose metadata (salvor and Velero
// forms, given) is about to be written: every object under the backup's
// name is hashed (the tarball from what this process wrote, when it
// remembers it, else read back), and so are the metadata files' bytes.
func (s *BackupStore) seal(ctx context.Context, name, uid string, metadata map[string][]byte) error {
	m := &Manifest{Version: ManifestVersion, Backup: name, UID: uid, Written: time.Now().UTC()}
	keys, err := s.store.ListObjects(ctx, s.bucket, s.key("backups", name)+"/")
	if err != nil {
		return fmt.Errorf("listing backup %s to write its manifest: %w", name, err)
	}
	dir := s.key("backups", name) + "/"
	tarKey := s.BackupFile(name, TarballFile)
	var items *ItemDigests
	defer func() { items.Close() }()
	for _, k := range keys {
		rel := strings.TrimPrefix(k, dir)
		if k == s.manifestKey(name) || metadata[rel] != nil || strings.HasPrefix(rel, "journal/") {
			continue
		}
		if k == tarKey {
			d, ok := s.written.take(k)
			if !ok {
				if d, err = s.readTarballDigest(ctx, name); err != nil {
					return err
				}
			}
			m.Objects = append(m.Objects, d.Object)
			items = d.Items
			continue
		}
		d, err := s.readDigest(ctx, k, rel)
		if err != nil {
			return err
		}
		m.Objects = append(m.Objects, d)
	}
	for rel, b := range metadata {
		d, _ := DigestObject(rel, bytes.NewReader(b))
		m.Objects = append(m.Objects, d)
	}
	sort.Slice(m.Objects, func(i, j int) bool { return m.Objects[i].Name < m.Objects[j].Name })
	return s.putManifest(ctx, m, items)
}

// putManifest writes a manifest whose items are m.Items or, when items is
// not nil, those of items, streamed from the server's disk.
func (s *BackupStore) putManifest(ctx context.Context, m *Manifest, items *ItemDigests) error {
	ih := newItemsHash()
	if items != nil {
		if err := items.Each(func(d ItemDigest) error { ih.add(d); return nil }); err != nil {
			return err
		}
	} else {
		for _, d := range m.Items {
			ih.add(d)
		}
	}
	s.sign(m, ih.sum())
	err := s.PutJSON(ctx, m.Backup, ManifestFile, manifestWriter{m, items})
	if err != nil {
		return fmt.Errorf("writing the manifest of backup %s: %w", m.Backup, err)
	}
	return nil
}

// manifestWriter streams a manifest: its header, then its items one by one.
type manifestWriter struct {
	m     *Manifest
	items *ItemDigests
}

func (mw manifestWriter) WriteJSON(w io.Writer) error {
	header := *mw.m
	header.Items = nil
	b, err := json.Marshal(header)
	if err != nil {
		return err
	}
	// The header ends with "items":null}: the items go in its place.
	head, ok := bytes.CutSuffix(b, []byte(`"items":null}`))
	if !ok {
		return fmt.Errorf("encoding a manifest: unexpected header %.80s", b)
	}
	bw := bufio.NewWriter(w)
	bw.Write(head)
	bw.WriteString(`"items":[`)
	n := 0
	each := func(d ItemDigest) error {
		b, err := json.Marshal(d)
		if err != nil {
			return err
		}
		if n > 0 {
			bw.WriteByte(',')
		}
		n++
		_, err = bw.Write(b)
		return err
	}
	if mw.items != nil {
		err = mw.items.Each(each)
	} else {
		for _, d := range mw.m.Items {
			if err = each(d); err != nil {
				break
			}
		}
	}
	if err != nil {
		return err
	}
	bw.WriteString("]}\n")
	return bw.Flush()
}

func (s *BackupStore) readDigest(ctx context.Context, key, rel string) (ObjectDigest, error) {
	rc, err := s.store.GetObject(ctx, s.bucket, key)
	if err != nil {
		return ObjectDigest{}, fmt.Errorf("reading %s: %w", key, err)
	}
	defer rc.Close()
	d, err := DigestObject(rel, rc)
	if err != nil {
		return ObjectDigest{}, fmt.Errorf("reading %s: %w", key, err)
	}
	return d, nil
}

func (s *BackupStore) readTarballDigest(ctx context.Context, name string) (TarballDigest, error) {
	key := s.BackupFile(name, TarballFile)
	rc, err := s.store.GetObject(ctx, s.bucket, key)
	if err != nil {
		return TarballDigest{}, fmt.Errorf("reading %s: %w", key, err)
	}
	defer rc.Close()
	d, err := DigestTarball(name+TarballFile.Suffix(), rc)
	if err != nil {
		return TarballDigest{}, fmt.Errorf("reading %s: %w", key, err)
	}
	return d, nil
}

// GetManifest reads a backup's manifest; a backup without one (written by
// Velero, or by a Salvor before manifests) gives ok false.
func (s *BackupStore) GetManifest(ctx context.Context, name string) (*Manifest, bool, error) {
	key := s.manifestKey(name)
	ok, err := s.store.ObjectExists(ctx, s.bucket, key)
	if err != nil || !ok {
		return nil, false, err
	}
	m := &Manifest{}
	read := manifestReader{m: m, item: func(d ItemDigest) error { m.Items = append(m.Items, d); return nil }}
	if err := s.GetBackupJSON(ctx, name, ManifestFile, read); err != nil {
		return nil, true, err
	}
	if err := m.check(key, name); err != nil {
		return nil, true, err
	}
	return m, true, nil
}

func (m *Manifest) check(key, name string) error {
	if m.Version != ManifestVersion {
		return fmt.Errorf("%s: manifest version %d is not one this Salvor reads (%d)", key, m.Version, ManifestVersion)
	}
	if m.Backup != name {
		return fmt.Errorf("%s: the manifest is of backup %q, not %q", key, m.Backup, name)
	}
	return nil
}

// manifestReader reads a manifest's fields into m and hands its items to
// item one at a time, so a caller need not hold them all.
type manifestReader struct {
	m    *Manifest
	item func(ItemDigest) error
	// stopAtItems ends the read where the items begin: the header is
	// all a caller wants.
	stopAtItems bool
}

func (mr manifestReader) decodeFrom(dec *json.Decoder) error {
	if err := expect(dec, json.Delim('{')); err != nil {
		return err
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		var v any
		switch t {
		case "version":
			v = &mr.m.Version
		case "backup":
			v = &mr.m.Backup
		case "uid":
			v = &mr.m.UID
		case "written":
			v = &mr.m.Written
		case "objects":
			v = &mr.m.Objects
		case "location":
			v = &mr.m.Location
		case "keyID":
			v = &mr.m.KeyID
		case "itemsSHA256":
			v = &mr.m.ItemsSHA256
		case "mac":
			v = &mr.m.MAC
		case "items":
			if mr.stopAtItems {
				return nil
			}
			if err := mr.items(dec); err != nil {
				return err
			}
			continue
		default:
			v = &json.RawMessage{}
		}
		if err := dec.Decode(v); err != nil {
			return err
		}
	}
	return expect(dec, json.Delim('}'))
}

func (mr manifestReader) items(dec *json.Decoder) error {
	t, err := dec.Token()
	if err != nil || t == nil { // null: no items
		return err
	}
	if t != json.Delim('[') {
		return fmt.Errorf("the manifest's items are not a list")
	}
	for dec.More() {
		var d ItemDigest
		if err := dec.Decode(&d); err != nil {
			return err
		}
		if mr.item == nil {
			continue
		}
		if err := mr.item(d); err != nil {
			return err
		}
	}
	return expect(dec, json.Delim(']'))
}

func expect(dec *json.Decoder, want json.Delim) error {
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if t != want {
		return fmt.Errorf("expected %v, found %v", want, t)
	}
	return nil
}

// reseal brings a manifest's entry for one object up to date after it was
// changed on purpose (a log's end line added once the backup was whole).
// A backup without a manifest stays without one.
func (s *BackupStore) reseal(ctx context.Context, name string, f File) error {
	key := s.manifestKey(name)
	ok, err := s.store.ObjectExists(ctx, s.bucket, key)
	if err != nil || !ok {
		return err
	}
	// The items pass through a file: a large backup's would not fit in memory.
	items, err := NewItemDigests()
	if err != nil {
		return err
	}
	defer items.Close()
	m := &Manifest{}
	ih := newItemsHash()
	add := func(d ItemDigest) error { ih.add(d); return items.add(d) }
	if err := s.GetBackupJSON(ctx, name, ManifestFile, manifestReader{m: m, item: add}); err != nil {
		return err
	}
	if err := m.check(key, name); err != nil {
		return err
	}
	// Signing anew what is read here would sign whatever the bucket holds:
	// only a manifest this location's keys signed is signed again.
	if s.manifestKeys != nil {
		if a := s.judgeWhole(m, name, m.UID, ih.sum()); a.State != Authenticated {
			return fmt.Errorf("%w: not signing the manifest of backup %s anew: %s", ErrForged, name, a.Message)
		}
	}
	rel := name + f.Suffix()
	d, err := s.readDigest(ctx, s.BackupFile(name, f), rel)
	if err != nil {
		return err
	}
	found := false
	for i := range m.Objects {
		if m.Objects[i].Name == rel {
			m.Objects[i], found = d, true
		}
	}
	if !found {
		m.Objects = append(m.Objects, d)
		sort.Slice(m.Objects, func(i, j int) bool { return m.Objects[i].Name < m.Objects[j].Name })
	}
	return s.putManifest(ctx, m, items)
}

// BackupObjects lists the names (inside backups/<name>/) of every object
// stored under a backup's name, its journal aside.
func (s *BackupStore) BackupObjects(ctx context.Context, name string) ([]string, error) {
	dir := s.key("backups", name) + "/"
	keys, err := s.store.ListObjects(ctx, s.bucket, dir)
	if err != nil {
		return nil, fmt.Errorf("listing backup %s: %w", name, err)
	}
	var out []string
	for _, k := range keys {
		rel := strings.TrimPrefix(k, dir)
		if !strings.HasPrefix(rel, "journal/") {
			out = append(out, rel)
		}
	}
	sort.Strings(out)
	return out, nil
}

// OpenBackupObject opens one object of a backup by its name inside
// backups/<name>/ (as BackupObjects and the manifest give it). The name is
// checked: it may not leave the backup's directory.
func (s *BackupStore) OpenBackupObject(ctx context.Context, name, rel string) (io.ReadCloser, error) {
	if rel == "" || strings.Contains(rel, "/") || rel == "." || rel == ".." {
		return nil, fmt.Errorf("backup %s: %q is not the name of a file of the backup", name, rel)
	}
	return s.store.GetObject(ctx, s.bucket, s.key("backups", name, rel))
}

// BackupObjectExists tells whether one object of a backup is stored.
func (s *BackupStore) BackupObjectExists(ctx context.Context, name, rel string) (bool, error) {
	if rel == "" || strings.Contains(rel, "/") || rel == "." || rel == ".." {
		return false, fmt.Errorf("backup %s: %q is not the name of a file of the backup", name, rel)
	}
	return s.store.ObjectExists(ctx, s.bucket, s.key("backups", name, rel))
}

// ReadGzip reads a gzip stream to its end, to check it.
func ReadGzip(r io.Reader) error {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return fmt.Errorf("not gzip: %w", err)
	}
	defer zr.Close()
	if _, err := io.Copy(io.Discard, zr); err != nil {
		return fmt.Errorf("not gzip: %w", err)
	}
	return nil
}

// StoredBytes is the size of backup name's files in the location, as
// its manifest records them (the header only is read); ok is false for a
// backup without one (written by Velero, or unfinished).
func (s *BackupStore) StoredBytes(ctx context.Context, name string) (n int64, ok bool, err error) {
	ok, err = s.store.ObjectExists(ctx, s.bucket, s.manifestKey(name))
	if err != nil || !ok {
		return 0, false, err
	}
	m := &Manifest{}
	if err := s.GetBackupJSON(ctx, name, ManifestFile, manifestReader{m: m, stopAtItems: true}); err != nil {
		return 0, true, err
	}
	if err := m.check(s.manifestKey(name), name); err != nil {
		return 0, true, err
	}
	for _, o := range m.Objects {
		if o.Size > 0 {
			n += o.Size
		}
	}
	return n, true, nil
}
