package controller

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/encryption"
	"github.com/salvor-dev/salvor/internal/persistence"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// JournalKeySecret is the Secret, in the server's namespace, holding the
// key that authenticates backups' journal entries (persistence.JournalEntry):
// a journal entry leads to a cancel or a delete after a restart, so only
// one this cluster's server wrote is acted on, and the key that proves it
// is kept in the cluster, never in the bucket.
const JournalKeySecret = "salvor-journal-key"

// SigningKeySecret is the Secret, in the server's namespace, holding the
// key from which each unencrypted location's manifest-signing key is
// derived (an encrypted location's derive from its own keys): a backup's
// signed manifest authenticates every object of it, so that one planted
// in the bucket is told from the server's own. A cluster that restores
// another's backups as authenticated holds a copy of it.
const SigningKeySecret = "salvor-signing-key"

// clusterKeyRetry is how long a failure to read or make a cluster key
// stands before it is tried again: every store a location opens asks for
// the keys, and a server without the right to read Secrets would otherwise
// ask the API server each time.
const clusterKeyRetry = time.Minute

// clusterKey is one key kept in a Secret of the server's namespace, read
// once (or why it could not be, and when).
type clusterKey struct {
	key    []byte
	err    error
	failed time.Time
}

// clusterKey returns the key in the Secret named secret, made at random on
// first use.
func (l *Locations) clusterKey(ctx context.Context, secret string) ([]byte, error) {
	l.keyMu.Lock()
	defer l.keyMu.Unlock()
	if l.keys == nil {
		l.keys = map[string]*clusterKey{}
	}
	k := l.keys[secret]
	if k == nil {
		k = &clusterKey{}
		l.keys[secret] = k
	}
	if k.key != nil {
		return k.key, nil
	}
	if k.err != nil && time.Since(k.failed) < clusterKeyRetry {
		return nil, k.err
	}
	key, err := l.readOrMakeKey(ctx, secret)
	if err != nil {
		k.err, k.failed = err, time.Now()
		return nil, err
	}
	k.key, k.err = key, nil
	return key, nil
}

func (l *Locations) readOrMakeKey(ctx context.Context, name string) ([]byte, error) {
	key := client.ObjectKey{Namespace: l.Namespace, Name: name}
	for range 2 {
		secret := &corev1.Secret{}
		err := l.Secrets.Get(ctx, key, secret)
		if err == nil {
			if k := secret.Data["key"]; len(k) >= 32 {
				return k, nil
			}
			return nil, fmt.Errorf("secret %s: its key is missing or shorter than 32 bytes; delete it to have a new one made", key)
		}
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("reading secret %s: %w", key, err)
		}
		k := make([]byte, 32)
		if _, err := rand.Read(k); err != nil {
			return nil, err
		}
		err = l.Client.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: l.Namespace, Labels: map[string]string{"app.kubernetes.io/name": "salvor"}},
			Data:       map[string][]byte{"key": k},
		})
		if err == nil {
			return k, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("making secret %s: %w", key, err)
		}
		// Another server made it first: read theirs.
	}
	return nil, fmt.Errorf("secret %s appeared and went while being read", key)
}

// manifestKeys are the keys that sign and authenticate a location's
// manifests: derived from an encrypted location's own keys, so whoever
// holds them (a disaster-recovery cluster) authenticates its backups too;
// else from the cluster's signing key and the location's name.
func (l *Locations) manifestKeys(ctx context.Context, bsl *salvorv1.BackupStorageLocation, keys *encryption.Keys) (*persistence.ManifestKeys, error) {
	if keys != nil {
		return persistence.NewManifestKeys(bsl.Name, "the location's key secret "+keySecretName(l.Namespace, bsl.Spec.Encryption.KeySecret), keys.SigningKeys()...), nil
	}
	root, err := l.clusterKey(ctx, SigningKeySecret)
	if err != nil {
		return nil, err
	}
	m := hmac.New(sha256.New, root)
	m.Write([]byte("salvor.dev/location-signing-key\x00" + bsl.Name))
	return persistence.NewManifestKeys(bsl.Name, "secret "+l.Namespace+"/"+SigningKeySecret, m.Sum(nil)), nil
}
