package encryption

import (
	"bytes"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"time"

	"filippo.io/age"
)

// Keys are a location's keys: every identity decrypts, the newest
// (last) encrypts.
type Keys struct {
	identities []age.Identity
	newest     *age.X25519Identity
}

// ErrNoKey: an object was encrypted with a key the Secret does not hold
// (removed, or another location's).
var ErrNoKey = errors.New("salvor: encrypted with a key the location's key Secret does not hold")

// ErrCorrupt: an object's bytes were changed or cut short.
var ErrCorrupt = errors.New("salvor: not as written (changed or truncated): its authentication failed")

// ParseKeys reads a key Secret's value: age identities
// (AGE-SECRET-KEY-1...), one per line, oldest first; # comments allowed.
func ParseKeys(data []byte) (*Keys, error) {
	ids, err := age.ParseIdentities(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("not a list of age keys: %w", err)
	}
	k := &Keys{identities: ids}
	for i := len(ids) - 1; i >= 0; i-- {
		if x, ok := ids[i].(*age.X25519Identity); ok {
			k.newest = x
			break
		}
	}
	if k.newest == nil {
		return nil, errors.New("holds no X25519 age key (AGE-SECRET-KEY-1...)")
	}
	return k, nil
}

// Count is how many keys there are.
func (k *Keys) Count() int { return len(k.identities) }

// Recipient is the public half of the newest key: what is encrypted now.
func (k *Keys) Recipient() string { return k.newest.Recipient().String() }

// NewKey returns a new key as a line of a key Secret, with a comment
// saying when it was made.
func NewKey(now time.Time) (string, error) {
	id, err := age.GenerateX25519Identity()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("# created %s, public key %s\n%s\n", now.UTC().Format(time.RFC3339), id.Recipient(), id), nil
}

// AddKey appends a new key to a key Secret's value: it becomes the newest.
func AddKey(data []byte, now time.Time) ([]byte, error) {
	key, err := NewKey(now)
	if err != nil {
		return nil, err
	}
	out := bytes.TrimRight(data, "\n")
	if len(out) > 0 {
		out = append(out, '\n')
	}
	return append(out, key...), nil
}

// Encrypt returns a writer whose bytes reach w encrypted to the newest
// key; Close must be called to seal the last chunk.
func (k *Keys) Encrypt(w io.Writer) (io.WriteCloser, error) {
	return age.Encrypt(w, k.newest.Recipient())
}

// EncryptStream reads r and returns its encryption, as a stream.
func (k *Keys) EncryptStream(r io.Reader) io.ReadCloser {
	return stream(r, k.newest.Recipient())
}

// stream encrypts r to recipient as it is read; closing the result stops
// the encryption.
func stream(r io.Reader, recipient age.Recipient) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		w, err := age.Encrypt(pw, recipient)
		if err == nil {
			_, err = io.Copy(w, r)
			if cerr := w.Close(); err == nil {
				err = cerr
			}
		}
		pw.CloseWithError(err)
	}()
	return pr
}

// Decrypt returns r's plaintext, checked chunk by chunk as it is read: a
// read returns ErrCorrupt (wrapped) as soon as a chunk fails, and the end
// of a truncated stream is an error, never a short plaintext.
func (k *Keys) Decrypt(r io.Reader) (io.Reader, error) {
	pr, err := age.Decrypt(r, k.identities...)
	if err != nil {
		// age names what it could not parse (its intro line, its header)
		// in err; it exports a type only for the wrong-key case.
		var noMatch *age.NoIdentityMatchError
		if errors.As(err, &noMatch) {
			return nil, ErrNoKey
		}
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return &checkedReader{r: pr}, nil
}

type checkedReader struct{ r io.Reader }

func (c *checkedReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return n, err
}

// ToRecipient returns r encrypted to an age public key (age1...), as a
// stream: how a file of an encrypted location leaves the server for a
// client that holds only its own key.
func ToRecipient(r io.Reader, recipient string) (io.ReadCloser, error) {
	rcpt, err := age.ParseX25519Recipient(recipient)
	if err != nil {
		return nil, fmt.Errorf("recipient %q is not an age public key: %w", recipient, err)
	}
	return stream(r, rcpt), nil
}

// SigningKeys derive from each of the location's keys, oldest first, a key
// that authenticates what is written to the location (a backup's signed
// manifest): an object encrypted to the public recipient proves nothing of
// its writer, but only the holders of the secret keys can derive these.
func (k *Keys) SigningKeys() [][]byte {
	var out [][]byte
	for _, id := range k.identities {
		x, ok := id.(*age.X25519Identity)
		if !ok {
			continue
		}
		key, err := hkdf.Key(sha256.New, []byte(x.String()), nil, "salvor.dev/manifest-signing-key", 32)
		if err != nil {
			panic(err) // only for lengths HKDF cannot give
		}
		out = append(out, key)
	}
	return out
}

// RepositoryPassword derives, from the location's oldest key, the password
// of the kopia repositories that hold the location's volume data: only the
// keys' holders can derive it, and adding a key (a rotation) does not
// change it. location names the location, so two locations sharing keys
// have different passwords.
func (k *Keys) RepositoryPassword(location string) string {
	for _, id := range k.identities {
		x, ok := id.(*age.X25519Identity)
		if !ok {
			continue
		}
		key, err := hkdf.Key(sha256.New, []byte(x.String()), []byte(location), "salvor.dev/kopia-repository-password", 32)
		if err != nil {
			panic(err)
		}
		return base64.RawURLEncoding.EncodeToString(key)
	}
	panic("encryption: keys without an X25519 key") // ParseKeys refuses those
}
