package controller

import (
	"context"
	"crypto/rand"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// JournalKeySecret is the Secret, in the server's namespace, holding the
// key that authenticates backups' journal entries (persistence.JournalEntry):
// a journal entry leads to a cancel or a delete after a restart, so only
// one this cluster's server wrote is acted on, and the key that proves it
// is kept in the cluster, never in the bucket.
const JournalKeySecret = "salvor-journal-key"

// journalKeyRetry is how long a failure to read or make the journal key
// stands before it is tried again: every store a location opens asks for
// the key, and a server without the right to read Secrets would otherwise
// ask the API server each time.
const journalKeyRetry = time.Minute

// journalKey returns the journal key, made at random on first use.
func (l *Locations) journalKey(ctx context.Context) ([]byte, error) {
	l.keyMu.Lock()
	defer l.keyMu.Unlock()
	if l.jkey != nil {
		return l.jkey, nil
	}
	if l.jkeyErr != nil && time.Since(l.jkeyFailed) < journalKeyRetry {
		return nil, l.jkeyErr
	}
	k, err := l.readOrMakeJournalKey(ctx)
	if err != nil {
		l.jkeyErr, l.jkeyFailed = err, time.Now()
		return nil, err
	}
	l.jkey, l.jkeyErr = k, nil
	return k, nil
}

func (l *Locations) readOrMakeJournalKey(ctx context.Context) ([]byte, error) {
	key := client.ObjectKey{Namespace: l.Namespace, Name: JournalKeySecret}
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
			return nil, fmt.Errorf("reading the journal key (secret %s): %w", key, err)
		}
		k := make([]byte, 32)
		if _, err := rand.Read(k); err != nil {
			return nil, err
		}
		err = l.Client.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: JournalKeySecret, Namespace: l.Namespace, Labels: map[string]string{"app.kubernetes.io/name": "salvor"}},
			Data:       map[string][]byte{"key": k},
		})
		if err == nil {
			return k, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("making the journal key (secret %s): %w", key, err)
		}
		// Another server made it first: read theirs.
	}
	return nil, fmt.Errorf("secret %s appeared and went while being read", key)
}
