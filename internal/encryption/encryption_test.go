package encryption

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

func keys(t *testing.T, data []byte) *Keys {
	t.Helper()
	k, err := ParseKeys(data)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func seal(t *testing.T, k *Keys, plain []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := k.Encrypt(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(plain); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func open(k *Keys, sealed []byte) ([]byte, error) {
	r, err := k.Decrypt(bytes.NewReader(sealed))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(r)
}

func TestEncryption(t *testing.T) {
	first, _ := NewKey(time.Now())
	k1 := keys(t, []byte(first))
	// Several chunks (64 KiB each) and a part of one.
	plain := make([]byte, 5<<20+12345)
	rand.Read(plain)
	sealed := seal(t, k1, plain)
	if bytes.Contains(sealed, plain[:64]) {
		t.Fatal("the ciphertext holds the plaintext")
	}

	for _, tc := range []struct {
		name string
		data func() []byte
		keys *Keys
		err  error
	}{
		{"round trip", func() []byte { return sealed }, k1, nil},
		{"a flipped byte", func() []byte { b := bytes.Clone(sealed); b[len(b)/2] ^= 1; return b }, k1, ErrCorrupt},
		{"a flipped byte in the last chunk", func() []byte { b := bytes.Clone(sealed); b[len(b)-3] ^= 1; return b }, k1, ErrCorrupt},
		{"truncated at a chunk boundary", func() []byte { return sealed[:len(sealed)-12345-16] }, k1, ErrCorrupt},
		{"truncated", func() []byte { return sealed[:len(sealed)/3] }, k1, ErrCorrupt},
		{"plaintext put in its place", func() []byte { return []byte(`{"kind":"Backup"}`) }, k1, ErrCorrupt},
		{"another key", func() []byte { return sealed }, func() *Keys { o, _ := NewKey(time.Now()); return keys(t, []byte(o)) }(), ErrNoKey},
	} {
		got, err := open(tc.keys, tc.data())
		switch {
		case tc.err == nil && (err != nil || !bytes.Equal(got, plain)):
			t.Errorf("%s: %d bytes, %v", tc.name, len(got), err)
		case tc.err != nil && !errors.Is(err, tc.err):
			t.Errorf("%s: error %v, want %v", tc.name, err, tc.err)
		}
	}
}

// TestRotation: after a key is added, new objects use it, and objects
// sealed with the older key still open; a Secret without the older key
// cannot open them.
func TestRotation(t *testing.T) {
	first, _ := NewKey(time.Now())
	old := keys(t, []byte(first))
	sealedOld := seal(t, old, []byte("before"))
	rotated, err := AddKey([]byte(first), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	both := keys(t, rotated)
	if both.Count() != 2 || both.Recipient() == old.Recipient() {
		t.Fatalf("after rotation: %d keys, recipient %s (was %s)", both.Count(), both.Recipient(), old.Recipient())
	}
	sealedNew := seal(t, both, []byte("after"))
	if got, err := open(both, sealedOld); err != nil || string(got) != "before" {
		t.Errorf("an object of the old key after rotation: %q, %v", got, err)
	}
	if _, err := open(old, sealedNew); !errors.Is(err, ErrNoKey) {
		t.Errorf("an object of the new key with only the old: %v", err)
	}
	newest := string(rotated[len(first):])
	if _, err := open(keys(t, []byte(newest)), sealedOld); !errors.Is(err, ErrNoKey) {
		t.Errorf("an object of a removed key: %v", err)
	}
	if _, err := ParseKeys([]byte("# nothing\n")); err == nil {
		t.Error("a Secret without keys parsed")
	}
	if _, err := ParseKeys([]byte("AGE-SECRET-KEY-1NOTAKEY\n")); err == nil || !strings.Contains(err.Error(), "age") {
		t.Errorf("a malformed key: %v", err)
	}
}

// TestDerivedKeys: what a location's keys derive — manifest-signing keys,
// one per key in order, and its repositories' password — is the same for
// whoever holds the keys, differs from one set of keys to another, and the
// password stays the same when a key is added (a rotation) but differs
// from one location to another.
func TestDerivedKeys(t *testing.T) {
	now := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	one, err := NewKey(now)
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewKey(now)
	if err != nil {
		t.Fatal(err)
	}
	parse := func(data string) *Keys {
		t.Helper()
		k, err := ParseKeys([]byte(data))
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	a, again, b := parse(one), parse(one), parse(other)
	rotated, err := AddKey([]byte(one), now)
	if err != nil {
		t.Fatal(err)
	}
	r := parse(string(rotated))
	if a.RepositoryPassword("vault") != again.RepositoryPassword("vault") || len(a.RepositoryPassword("vault")) < 40 {
		t.Errorf("the same keys derive different passwords, or a short one: %q", a.RepositoryPassword("vault"))
	}
	if a.RepositoryPassword("vault") == b.RepositoryPassword("vault") || a.RepositoryPassword("vault") == a.RepositoryPassword("other") {
		t.Error("other keys, or another location, derive the same password")
	}
	if r.RepositoryPassword("vault") != a.RepositoryPassword("vault") {
		t.Error("adding a key changed the repositories' password")
	}
	sa, sr := a.SigningKeys(), r.SigningKeys()
	if len(sa) != 1 || len(sr) != 2 || string(sa[0]) != string(sr[0]) || string(sr[1]) == string(sr[0]) || string(b.SigningKeys()[0]) == string(sa[0]) {
		t.Errorf("signing keys: %d then %d after a rotation; the first must stay and the new one differ", len(sa), len(sr))
	}
}
