package persistence

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"strings"
	"time"

	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// ManifestKeys authenticate a location's manifests. Whoever can write to
// the bucket can write any object there, an encrypted location's included
// (its recipient is public): only a MAC keyed with something the bucket
// never holds tells the server's own backups from planted ones. A signed
// manifest lists every object of its backup by SHA-256, so through it every
// object is authenticated too.
type ManifestKeys struct {
	// Location is the name of the location the keys are of; a manifest
	// binds its backup to it.
	Location string
	// Source names where the keys are kept, for messages.
	Source string
	keys   map[string][]byte // by key ID
	newest string
}

// NewManifestKeys returns the keys of a location, oldest first: manifests
// are signed with the newest, and any of them authenticates one.
func NewManifestKeys(location, source string, keys ...[]byte) *ManifestKeys {
	k := &ManifestKeys{Location: location, Source: source, keys: map[string][]byte{}}
	for _, key := range keys {
		id := keyID(key)
		k.keys[id], k.newest = key, id
	}
	return k
}

// keyID names a key without telling anything of it.
func keyID(key []byte) string {
	sum := sha256.Sum256(append([]byte("salvor.dev/manifest-key-id\x00"), key...))
	return hex.EncodeToString(sum[:8])
}

// SetManifestKeys gives the store the keys that sign the manifests it
// writes and authenticate those it reads. Without them manifests are
// written unsigned, and every backup read is unauthenticated.
func (s *BackupStore) SetManifestKeys(k *ManifestKeys) { s.manifestKeys = k }

// AuthenticationState is what authenticating a backup found.
type AuthenticationState string

const (
	// Authenticated: the manifest is signed with one of the location's
	// keys, for this backup and location, and its items' digest matches.
	Authenticated AuthenticationState = salvorv1.AuthenticationAuthenticated
	// Unauthenticated: there is nothing to check — no manifest (Velero
	// wrote the backup), a manifest without a signature (a Salvor before
	// signing, or one without the key), or a signature by a key this
	// server does not hold.
	Unauthenticated AuthenticationState = salvorv1.AuthenticationUnauthenticated
	// Forged: a signature that does not check out, or a manifest signed
	// for another backup or location. Nothing of the backup may be used.
	Forged AuthenticationState = salvorv1.AuthenticationForged
)

// Authentication is the outcome of authenticating a backup.
type Authentication struct {
	State AuthenticationState
	// KeyID names the key that signed the manifest, when there is one.
	KeyID string
	// Message says what was found, naming the object at fault.
	Message string
}

// ErrForged: an object of a backup is not the one its signed manifest
// names (changed, swapped, rolled back or planted).
var ErrForged = errors.New("salvor: object does not match the backup's signed manifest")

// signedHeader is what a manifest's MAC covers: everything of the
// manifest but its items, which the items' digest stands for.
type signedHeader struct {
	Domain      string         `json:"domain"`
	Version     int            `json:"version"`
	Backup      string         `json:"backup"`
	UID         string         `json:"uid"`
	Location    string         `json:"location"`
	Written     time.Time      `json:"written"`
	Objects     []ObjectDigest `json:"objects"`
	ItemsSHA256 string         `json:"itemsSHA256"`
	KeyID       string         `json:"keyID"`
}

func (m *Manifest) mac(key []byte) string {
	b, err := json.Marshal(signedHeader{Domain: "salvor.dev/manifest", Version: m.Version, Backup: m.Backup, UID: m.UID,
		Location: m.Location, Written: m.Written.UTC(), Objects: m.Objects, ItemsSHA256: m.ItemsSHA256, KeyID: m.KeyID})
	if err != nil {
		panic(err) // plain strings and numbers
	}
	h := hmac.New(sha256.New, key)
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

// itemsHash is the digest of a manifest's items, in order.
type itemsHash struct{ h hash.Hash }

func newItemsHash() itemsHash { return itemsHash{sha256.New()} }

func (i itemsHash) add(d ItemDigest) {
	fmt.Fprintf(i.h, "%d:%s%d:%s", len(d.Path), d.Path, len(d.SHA256), d.SHA256)
}

func (i itemsHash) sum() string { return hex.EncodeToString(i.h.Sum(nil)) }

// sign binds the manifest to the store's location and signs it; without
// keys it stays unsigned. itemsSHA256 is the digest of its items.
func (s *BackupStore) sign(m *Manifest, itemsSHA256 string) {
	m.Location, m.KeyID, m.ItemsSHA256, m.MAC = "", "", "", ""
	k := s.manifestKeys
	if k == nil || k.newest == "" {
		return
	}
	m.Location, m.KeyID, m.ItemsSHA256 = k.Location, k.newest, itemsSHA256
	m.MAC = m.mac(k.keys[k.newest])
}

// judge authenticates a manifest's header (its items' digest is checked
// by whoever reads them).
func (s *BackupStore) judge(m *Manifest, name, uid string) Authentication {
	key := s.manifestKey(name)
	if m.MAC == "" {
		return Authentication{State: Unauthenticated, Message: fmt.Sprintf("the manifest %s is not signed (written without a signing key)", key)}
	}
	k := s.manifestKeys
	if k == nil {
		return Authentication{State: Unauthenticated, KeyID: m.KeyID, Message: "this server holds no signing key for the location"}
	}
	secret, ok := k.keys[m.KeyID]
	if !ok {
		return Authentication{State: Unauthenticated, KeyID: m.KeyID, Message: fmt.Sprintf("the manifest is signed with key %s, which %s does not hold", m.KeyID, k.Source)}
	}
	forged := func(why string) Authentication {
		return Authentication{State: Forged, KeyID: m.KeyID, Message: fmt.Sprintf("%s: %s", key, why)}
	}
	switch {
	case !hmac.Equal([]byte(m.MAC), []byte(m.mac(secret))):
		return forged("its signature does not match its content (the manifest was changed)")
	case m.Backup != name:
		return forged(fmt.Sprintf("signed for backup %q, not %q", m.Backup, name))
	case m.Location != k.Location:
		return forged(fmt.Sprintf("signed for location %q, not %q", m.Location, k.Location))
	case uid != "" && m.UID != "" && m.UID != uid:
		return forged(fmt.Sprintf("signed for backup %s with UID %s, not %s (an older backup of the same name)", name, m.UID, uid))
	}
	return Authentication{State: Authenticated, KeyID: m.KeyID, Message: fmt.Sprintf("signed with key %s of %s", m.KeyID, k.Source)}
}

// judgeWhole authenticates a manifest read whole, its items' digest
// (itemsSHA256, taken as they were read) included.
func (s *BackupStore) judgeWhole(m *Manifest, name, uid, itemsSHA256 string) Authentication {
	a := s.judge(m, name, uid)
	if a.State == Authenticated && itemsSHA256 != m.ItemsSHA256 {
		return Authentication{State: Forged, KeyID: m.KeyID, Message: s.manifestKey(name) + ": its items are not the ones it was signed with"}
	}
	return a
}

// AuthenticateManifest authenticates a manifest GetManifest read (ok
// false: there was none), for a reader that holds it whole anyway.
func (s *BackupStore) AuthenticateManifest(m *Manifest, ok bool, name, uid string) Authentication {
	if !ok {
		return noManifest
	}
	items := newItemsHash()
	for _, d := range m.Items {
		items.add(d)
	}
	return s.judgeWhole(m, name, uid, items.sum())
}

// noManifest is the authentication of a backup without a manifest.
var noManifest = Authentication{State: Unauthenticated, Message: "the backup has no manifest (written by Velero, or by a Salvor before manifests)"}

// AuthenticateHeader authenticates a backup's manifest without reading its
// items (which stand behind the signed digest): cheap enough for a sync
// of every backup of a location.
func (s *BackupStore) AuthenticateHeader(ctx context.Context, name, uid string) (Authentication, error) {
	m := &Manifest{}
	if a, err := s.readManifest(ctx, name, manifestReader{m: m, stopAtItems: true}); a != nil || err != nil {
		return *a, err
	}
	return s.judge(m, name, uid), nil
}

// readManifest reads backup name's manifest through mr. A manifest that is
// missing or cannot be read gives the authentication that stands for it.
func (s *BackupStore) readManifest(ctx context.Context, name string, mr manifestReader) (*Authentication, error) {
	key := s.manifestKey(name)
	ok, err := s.store.ObjectExists(ctx, s.bucket, key)
	if err != nil {
		return &Authentication{}, err
	}
	if !ok {
		a := noManifest
		return &a, nil
	}
	if err := s.getJSON(ctx, key, true, ManifestFile.readLimit(), mr); err != nil {
		return &Authentication{State: Forged, Message: fmt.Sprintf("%s: %v", key, err)}, nil
	}
	return nil, nil
}

// Authenticate checks a backup's signed manifest whole and, when it is
// Authenticated, has every later read of the backup's files through this
// store checked against it: a file that is not the one the manifest names
// fails its read with ErrForged, naming it. uid, when known, is the
// Backup's: a manifest of an older backup of the same name is forged.
func (s *BackupStore) Authenticate(ctx context.Context, name, uid string) (Authentication, error) {
	m := &Manifest{}
	items := newItemsHash()
	if a, err := s.readManifest(ctx, name, manifestReader{m: m, item: func(d ItemDigest) error { items.add(d); return nil }}); a != nil || err != nil {
		return *a, err
	}
	a := s.judgeWhole(m, name, uid, items.sum())
	if a.State != Authenticated {
		return a, nil
	}
	checked := map[string]ObjectDigest{}
	for _, o := range m.Objects {
		checked[o.Name] = o
	}
	s.authMu.Lock()
	defer s.authMu.Unlock()
	if s.authentic == nil {
		s.authentic = map[string]map[string]ObjectDigest{}
	}
	s.authentic[name] = checked
	return a, nil
}

// getObject opens an object of the location; one of a backup this store
// authenticated is checked against its manifest as it is read (see
// checkedReader).
func (s *BackupStore) getObject(ctx context.Context, key string) (io.ReadCloser, error) {
	name, rel, ok := s.backupObject(key)
	if ok && key == s.manifestKey(name) {
		ok = false // authenticated by its signature, not by itself
	}
	var want ObjectDigest
	var known, checking bool
	if ok {
		s.authMu.Lock()
		objects := s.authentic[name]
		s.authMu.Unlock()
		if objects != nil {
			checking = true
			want, known = objects[rel]
		}
	}
	if checking && !known {
		return nil, fmt.Errorf("%w: %s is not in backup %s's signed manifest (planted after the backup was written)", ErrForged, key, name)
	}
	rc, err := s.store.GetObject(ctx, s.bucket, key)
	if err != nil || !checking {
		return rc, err
	}
	return &checkedReader{rc: rc, want: want, key: key, d: NewDigester()}, nil
}

// backupObject splits a key into its backup and the object's name inside
// the backup's directory; a journal entry (authenticated on its own) or
// any other key gives ok false.
func (s *BackupStore) backupObject(key string) (name, rel string, ok bool) {
	rest, found := strings.CutPrefix(key, s.key("backups")+"/")
	if !found {
		return "", "", false
	}
	name, rel, found = strings.Cut(rest, "/")
	if !found || strings.Contains(rel, "/") {
		return "", "", false
	}
	return name, rel, true
}

// checkedReader hashes an object as it is read and, at its end, fails the
// read unless it is the object the manifest names: a reader that must not
// act on a forged object reads it to its end before acting (a restore
// reads the whole tarball before it makes anything).
type checkedReader struct {
	rc   io.ReadCloser
	want ObjectDigest
	key  string
	d    *Digester
	err  error
}

func (c *checkedReader) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.rc.Read(p)
	c.d.Write(p[:n])
	if c.d.size > c.want.Size {
		c.err = fmt.Errorf("%w: %s is longer than the %d bytes its manifest names", ErrForged, c.key, c.want.Size)
		return n, c.err
	}
	if errors.Is(err, io.EOF) {
		if got := c.d.Digest(c.want.Name); got.Size != c.want.Size || got.SHA256 != c.want.SHA256 {
			c.err = fmt.Errorf("%w: %s is not the object its manifest names (sha256 %s, signed %s)", ErrForged, c.key, got.SHA256, c.want.SHA256)
			return n, c.err
		}
	}
	return n, err
}

func (c *checkedReader) Close() error { return c.rc.Close() }

// writtenAuthentication is what a backup this store writes now is: signed
// with the newest key, or, without keys, unauthenticated.
func (s *BackupStore) writtenAuthentication() *salvorv1.BackupAuthentication {
	k := s.manifestKeys
	if k == nil || k.newest == "" {
		return &salvorv1.BackupAuthentication{State: salvorv1.AuthenticationUnauthenticated, Message: "written without a signing key (the server could not read or make it)"}
	}
	return &salvorv1.BackupAuthentication{State: salvorv1.AuthenticationAuthenticated, KeyID: k.newest, Message: "signed with key " + k.newest + " of " + k.Source}
}

// Status is the authentication as a Backup's status records it.
func (a Authentication) Status() *salvorv1.BackupAuthentication {
	return &salvorv1.BackupAuthentication{State: string(a.State), KeyID: a.KeyID, Message: a.Message}
}

// checkAbsent fails when an object found missing is one the signed
// manifest of an authenticated backup names.
func (s *BackupStore) checkAbsent(name, rel, key string) error {
	s.authMu.Lock()
	defer s.authMu.Unlock()
	if _, signed := s.authentic[name][rel]; signed {
		return fmt.Errorf("%w: %s, which the backup's signed manifest names, is gone", ErrForged, key)
	}
	return nil
}
