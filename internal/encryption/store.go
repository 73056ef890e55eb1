package encryption

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/salvor-dev/salvor/internal/plugin/host"
)

// Store is an object store whose objects are encrypted with Keys: what
// goes in is encrypted, what comes out is checked and decrypted. Names and
// sizes stay visible in the bucket; contents do not.
type Store struct {
	host.ObjectStore
	Keys *Keys
	// Location and KeySecret name the location and its key Secret, for
	// errors.
	Location, KeySecret string
}

// Inner is the store below the encryption.
func (s *Store) Inner() host.ObjectStore { return s.ObjectStore }

// PutObject encrypts body as it streams to the store.
func (s *Store) PutObject(ctx context.Context, bucket, key string, body io.Reader) error {
	enc := s.Keys.EncryptStream(body)
	// Closing stops the encryption if the store gives up reading.
	defer enc.Close()
	return s.ObjectStore.PutObject(ctx, bucket, key, enc)
}

// GetObject returns an object's plaintext; an object encrypted with a key
// the Secret does not hold, or changed, is an error naming it.
func (s *Store) GetObject(ctx context.Context, bucket, key string) (io.ReadCloser, error) {
	rc, err := s.ObjectStore.GetObject(ctx, bucket, key)
	if err != nil {
		return nil, err
	}
	pr, err := s.Keys.Decrypt(rc)
	if err != nil {
		rc.Close()
		return nil, s.explain(key, err)
	}
	return &plaintext{r: pr, c: rc, s: s, key: key}, nil
}

func (s *Store) explain(key string, err error) error {
	if errors.Is(err, ErrNoKey) {
		return fmt.Errorf("object %s of encrypted location %s is %w (%s): restore the key that wrote it to the Secret", key, s.Location, err, s.KeySecret)
	}
	return fmt.Errorf("object %s of encrypted location %s: %w", key, s.Location, err)
}

// CreateSignedURL is refused: a URL would give the ciphertext, which only
// the server can read.
func (s *Store) CreateSignedURL(ctx context.Context, bucket, key string, ttl time.Duration) (string, error) {
	return "", fmt.Errorf("location %s is encrypted: its objects are readable only through the server, not by URL", s.Location)
}

type plaintext struct {
	r   io.Reader
	c   io.Closer
	s   *Store
	key string
}

func (p *plaintext) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if err != nil && err != io.EOF {
		err = p.s.explain(p.key, err)
	}
	return n, err
}

func (p *plaintext) Close() error { return p.c.Close() }
