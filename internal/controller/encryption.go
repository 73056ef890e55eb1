package controller

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/encryption"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// keySecretName names an encrypted location's key, for messages.
func keySecretName(namespace string, sel corev1.SecretKeySelector) string {
	return fmt.Sprintf("Secret %s/%s, key %s", namespace, sel.Name, sel.Key)
}

// EncryptionKeys returns an encrypted location's keys. When its Secret or
// key does not exist, it is made with a new key and marked
// (KeyNotSavedAnnotation): the keys were never made, or were deleted — the
// location's older objects then stay unreadable until their key is put
// back. unsaved is true while the mark is there.
func (l *Locations) EncryptionKeys(ctx context.Context, bsl *salvorv1.BackupStorageLocation) (keys *encryption.Keys, unsaved bool, err error) {
	sel := bsl.Spec.Encryption.KeySecret
	what := keySecretName(l.Namespace, sel)
	if sel.Name == "" || sel.Key == "" {
		return nil, false, fmt.Errorf("backup storage location %s: spec.encryption.keySecret needs a name and a key", bsl.Name)
	}
	secret := &corev1.Secret{}
	err = l.Secrets.Get(ctx, client.ObjectKey{Namespace: l.Namespace, Name: sel.Name}, secret)
	missing := apierrors.IsNotFound(err)
	if err != nil && !missing {
		return nil, false, fmt.Errorf("backup storage location %s: reading its encryption key (%s): %w", bsl.Name, what, err)
	}
	if missing || len(secret.Data[sel.Key]) == 0 {
		// A new key, marked until someone says it is kept elsewhere.
		key, err := encryption.NewKey(time.Now())
		if err != nil {
			return nil, false, err
		}
		patch := client.MergeFrom(secret.DeepCopy())
		if missing {
			secret = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: sel.Name, Namespace: l.Namespace,
				Labels: map[string]string{"app.kubernetes.io/name": "salvor"}}}
		}
		if secret.Data == nil {
			secret.Data = map[string][]byte{}
		}
		if secret.Annotations == nil {
			secret.Annotations = map[string]string{}
		}
		secret.Data[sel.Key], secret.Annotations[salvorv1.KeyNotSavedAnnotation] = []byte(key), notSaved(bsl)
		if missing {
			err = l.Client.Create(ctx, secret)
		} else {
			err = l.Client.Patch(ctx, secret, patch)
		}
		if err != nil {
			return nil, false, fmt.Errorf("backup storage location %s: making its encryption key (%s): %w", bsl.Name, what, err)
		}
	}
	keys, err = encryption.ParseKeys(secret.Data[sel.Key])
	if err != nil {
		return nil, false, fmt.Errorf("backup storage location %s: encryption key (%s) %w", bsl.Name, what, err)
	}
	return keys, secret.Annotations[salvorv1.KeyNotSavedAnnotation] != "", nil
}

func notSaved(bsl *salvorv1.BackupStorageLocation) string {
	return fmt.Sprintf("made by the Salvor server for location %s at %s; remove this annotation once the keys are kept outside the cluster", bsl.Name, time.Now().UTC().Format(time.RFC3339))
}

// RotateKey adds a new key to an encrypted location's key Secret (made
// already, by EncryptionKeys): new objects are encrypted to it; the older
// keys stay, so older backups stay readable.
func (l *Locations) RotateKey(ctx context.Context, bsl *salvorv1.BackupStorageLocation) (*encryption.Keys, error) {
	sel := bsl.Spec.Encryption.KeySecret
	secret := &corev1.Secret{}
	if err := l.Secrets.Get(ctx, client.ObjectKey{Namespace: l.Namespace, Name: sel.Name}, secret); err != nil {
		return nil, err
	}
	data, err := encryption.AddKey(secret.Data[sel.Key], time.Now())
	if err != nil {
		return nil, err
	}
	// The resourceVersion makes the patch fail rather than lose a key
	// another writer added meanwhile.
	patch := client.MergeFromWithOptions(secret.DeepCopy(), client.MergeFromWithOptimisticLock{})
	secret.Data[sel.Key] = data
	if err := l.Client.Patch(ctx, secret, patch); err != nil {
		return nil, fmt.Errorf("backup storage location %s: adding a key (%s): %w", bsl.Name, keySecretName(l.Namespace, sel), err)
	}
	return encryption.ParseKeys(data)
}
