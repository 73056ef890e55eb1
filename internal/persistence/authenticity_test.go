package persistence

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

var (
	keyA = bytes.Repeat([]byte{1}, 32)
	keyB = bytes.Repeat([]byte{2}, 32)
)

// writeSigned writes a whole backup named name through s, with UID uid.
func writeSigned(t *testing.T, s *BackupStore, name, uid string, items map[string]string) *salvorv1.Backup {
	t.Helper()
	ctx := context.Background()
	entries := map[string]string{"metadata/version": "1.1.0"}
	for k, v := range items {
		entries[k] = v
	}
	if err := s.PutTarball(ctx, name, bytes.NewReader(tarballOf(t, entries))); err != nil {
		t.Fatal(err)
	}
	b := backup(name)
	b.UID = types.UID(uid)
	f := Finish{Backup: b, Logs: strings.NewReader("log"), Results: &Results{},
		ResourceList: map[string][]string{"v1/ConfigMap": {"app/a"}}, ItemOperations: []any{}}
	if err := s.FinishBackup(ctx, f); err != nil {
		t.Fatal(err)
	}
	return b
}

func copyObject(t *testing.T, fs *fsStore, from, to string) {
	t.Helper()
	ctx := context.Background()
	rc, err := fs.GetObject(ctx, "bkt", from)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(rc)
	rc.Close()
	if err := fs.PutObject(ctx, "bkt", to, bytes.NewReader(body)); err != nil {
		t.Fatal(err)
	}
}

// readAll reads every file a restore reads of a backup, each to its end.
func readBackup(s *BackupStore, name string) error {
	ctx := context.Background()
	if _, err := s.GetBackup(ctx, name); err != nil {
		return err
	}
	if _, err := s.GetResourceList(ctx, name); err != nil {
		return err
	}
	var snaps []any
	if _, err := s.GetVolumeSnapshots(ctx, name, &snaps); err != nil {
		return err
	}
	rc, err := s.GetTarball(ctx, name)
	if err != nil {
		return err
	}
	defer rc.Close()
	_, err = io.Copy(io.Discard, rc)
	return err
}

// TestBackupsAreAuthenticated: a backup written with a location's keys is
// authenticated and reads back whole; every way a bucket writer could
// change it — an object changed, another backup's object swapped in, a
// file planted beside them, the manifest changed, re-signed with another
// key, copied from another backup or an older one of the same name — is
// found, naming what is at fault, and a backup written without keys (as
// Velero writes) is unauthenticated, not forged.
func TestBackupsAreAuthenticated(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		// attack changes the bucket after backups b1 (UID u1) and b2
		// were written with keyA for location "primary".
		attack func(t *testing.T, s *BackupStore, fs *fsStore)
		// reader is the store the backup is read with (default: keyA).
		reader func(fs *fsStore) *BackupStore
		uid    string
		// state of b1, and, when it is Authenticated, what a read of
		// its files says (empty: nothing wrong).
		state   AuthenticationState
		message string
		readErr string
	}{
		{name: "untouched", state: Authenticated, message: "signed with key"},
		{name: "tarball changed", state: Authenticated, readErr: "team/backups/b1/b1.tar.gz is not the object its manifest names",
			attack: func(t *testing.T, s *BackupStore, fs *fsStore) {
				body := tarballOf(t, map[string]string{"metadata/version": "1.1.0", "resources/configmaps/namespaces/app/a.json": `{"planted":true}`})
				if err := fs.PutObject(ctx, "bkt", s.BackupFile("b1", TarballFile), bytes.NewReader(body)); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "tarball swapped from another backup", state: Authenticated, readErr: "team/backups/b1/b1.tar.gz is longer than",
			attack: func(t *testing.T, s *BackupStore, fs *fsStore) {
				copyObject(t, fs, s.BackupFile("b2", TarballFile), s.BackupFile("b1", TarballFile))
			}},
		{name: "metadata changed", state: Authenticated, readErr: "salvor-backup.json is not the object its manifest names",
			attack: func(t *testing.T, s *BackupStore, fs *fsStore) {
				copyObject(t, fs, "team/backups/b2/salvor-backup.json", "team/backups/b1/salvor-backup.json")
			}},
		{name: "manifest swapped from another backup", state: Forged, message: `signed for backup "b2", not "b1"`,
			attack: func(t *testing.T, s *BackupStore, fs *fsStore) {
				copyObject(t, fs, s.BackupFile("b2", ManifestFile), s.BackupFile("b1", ManifestFile))
			}},
		{name: "manifest re-signed with another key", state: Unauthenticated, message: "which secret salvor/keys does not hold",
			attack: func(t *testing.T, s *BackupStore, fs *fsStore) {
				other := New(fs, "bkt", "team")
				other.SetManifestKeys(NewManifestKeys("primary", "the attacker", keyB))
				writeSigned(t, other, "b1", "u1", map[string]string{"resources/configmaps/namespaces/app/a.json": `{"planted":true}`})
			}},
		{name: "manifest of an older backup of the name", uid: "u1-new", state: Forged, message: "with UID u1, not u1-new"},
		{name: "manifest changed", state: Forged, message: "its signature does not match its content",
			attack: func(t *testing.T, s *BackupStore, fs *fsStore) {
				m, _, err := s.GetManifest(ctx, "b1")
				if err != nil {
					t.Fatal(err)
				}
				m.Objects = m.Objects[1:]
				if err := s.PutJSON(ctx, "b1", ManifestFile, m); err != nil { // keeps its MAC
					t.Fatal(err)
				}
			}},
		{name: "items of the manifest changed", state: Forged, message: "its items are not the ones it was signed with",
			attack: func(t *testing.T, s *BackupStore, fs *fsStore) {
				m, _, err := s.GetManifest(ctx, "b1")
				if err != nil {
					t.Fatal(err)
				}
				m.Items[0].SHA256 = sum("planted")
				if err := s.PutJSON(ctx, "b1", ManifestFile, m); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "a file planted beside the signed ones", state: Authenticated, readErr: "b1-volumesnapshots.json.gz is not in backup b1's signed manifest",
			attack: func(t *testing.T, s *BackupStore, fs *fsStore) {
				if err := New(fs, "bkt", "team").PutJSON(ctx, "b1", VolumeSnapshotsFile, []any{}); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "read through another location", state: Forged, message: `signed for location "primary", not "secondary"`,
			reader: func(fs *fsStore) *BackupStore {
				s := New(fs, "bkt", "team")
				s.SetManifestKeys(NewManifestKeys("secondary", "secret salvor/keys", keyA))
				return s
			}},
		{name: "read without keys", state: Unauthenticated, message: "holds no signing key",
			reader: func(fs *fsStore) *BackupStore { return New(fs, "bkt", "team") }},
		{name: "read with the key rotated (old key kept)", state: Authenticated,
			reader: func(fs *fsStore) *BackupStore {
				s := New(fs, "bkt", "team")
				s.SetManifestKeys(NewManifestKeys("primary", "secret salvor/keys", keyA, keyB))
				return s
			}},
		{name: "manifest deleted", state: Unauthenticated, message: "has no manifest",
			attack: func(t *testing.T, s *BackupStore, fs *fsStore) {
				if err := fs.DeleteObject(ctx, "bkt", s.BackupFile("b1", ManifestFile)); err != nil {
					t.Fatal(err)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, fs := newStore(t, "team")
			s.SetManifestKeys(NewManifestKeys("primary", "secret salvor/keys", keyA))
			b1 := writeSigned(t, s, "b1", "u1", map[string]string{"resources/configmaps/namespaces/app/a.json": `{"kind":"ConfigMap","metadata":{"name":"a"}}`})
			if got := b1.Status.Authentication; got == nil || got.State != salvorv1.AuthenticationAuthenticated {
				t.Fatalf("the written backup's status: %+v, want Authenticated", got)
			}
			writeSigned(t, s, "b2", "u2", map[string]string{"resources/configmaps/namespaces/app/a.json": `{"kind":"ConfigMap","metadata":{"name":"other"}}`})
			if tc.attack != nil {
				tc.attack(t, s, fs)
			}
			reader := New(fs, "bkt", "team")
			reader.SetManifestKeys(NewManifestKeys("primary", "secret salvor/keys", keyA))
			if tc.reader != nil {
				reader = tc.reader(fs)
			}
			uid := "u1"
			if tc.uid != "" {
				uid = tc.uid
			}
			header, err := reader.AuthenticateHeader(ctx, "b1", uid)
			if err != nil {
				t.Fatal(err)
			}
			a, err := reader.Authenticate(ctx, "b1", uid)
			if err != nil {
				t.Fatal(err)
			}
			if a.State != tc.state || !strings.Contains(a.Message, tc.message) {
				t.Errorf("Authenticate: %s (%s), want %s saying %q", a.State, a.Message, tc.state, tc.message)
			}
			// The header alone cannot see changed items; all else it sees.
			if want := tc.state; header.State != want && !(tc.name == "items of the manifest changed" && header.State == Authenticated) {
				t.Errorf("AuthenticateHeader: %s (%s), want %s", header.State, header.Message, want)
			}
			if a.State != Authenticated {
				return
			}
			err = readBackup(reader, "b1")
			switch {
			case tc.readErr == "" && err != nil:
				t.Errorf("reading the authenticated backup: %v", err)
			case tc.readErr != "" && (!errors.Is(err, ErrForged) || !strings.Contains(err.Error(), tc.readErr)):
				t.Errorf("reading the backup: %v, want ErrForged saying %q", err, tc.readErr)
			}
		})
	}
}

// TestResealKeepsTheSignature: a log's end line added once the backup is
// whole signs the manifest anew; a manifest changed in the bucket is not
// signed anew (the server would sign the attacker's).
func TestResealKeepsTheSignature(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t, "team")
	s.SetManifestKeys(NewManifestKeys("primary", "secret salvor/keys", keyA))
	writeSigned(t, s, "b1", "u1", nil)
	if err := s.AppendLog(ctx, "b1", []byte(`{"msg":"backup finished"}`+"\n")); err != nil {
		t.Fatal(err)
	}
	if a, err := s.Authenticate(ctx, "b1", "u1"); err != nil || a.State != Authenticated {
		t.Fatalf("after the log's end was added: %+v %v", a, err)
	}
	rc, err := s.GetLogs(ctx, "b1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, rc); err != nil {
		t.Errorf("the log with its end line does not match the manifest signed anew: %v", err)
	}
	rc.Close()

	m, _, _ := s.GetManifest(ctx, "b1")
	m.Objects = append(m.Objects, ObjectDigest{Name: "planted", SHA256: sum("x")})
	if err := s.PutJSON(ctx, "b1", ManifestFile, m); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendLog(ctx, "b1", []byte(`{"msg":"again"}`+"\n")); !errors.Is(err, ErrForged) {
		t.Errorf("resealing a changed manifest: %v, want ErrForged", err)
	}
}
