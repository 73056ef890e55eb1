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
	switch {
	case apierrors.IsNotFound(err):
		key, kerr := encryption.NewKey(time.Now())
		if kerr != nil {
			return nil, false, kerr
		}
		secret = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: sel.Name, Namespace: l.Namespace,
			Labels:      map[string]string{"app.kubernetes.io/name": "salvor"},
			Annotations: map[string]string{salvorv1.KeyNotSavedAnnotation: notSaved(bsl)}}, Data: map[string][]byte{sel.Key: []byte(key)}}
		if err := l.Client.Create(ctx, secret); err != nil {
			return nil, false, fmt.Errorf("backup storage location %s: creating its encryption key (%s): %w", bsl.Name, what, err)
		}
	case err != nil:
		return nil, false, fmt.Errorf("backup storage location %s: reading its encryption key (%s): %w", bsl.Name, what, err)
	case len(secret.Data[sel.Key]) == 0:
		key, kerr := encryption.NewKey(time.Now())
		if kerr != nil {
			return nil, false, kerr
		}
		patch := client.MergeFrom(secret.DeepCopy())
		if secret.Data == nil {
			secret.Data = map[string][]byte{}
		}
		secret.Data[sel.Key] = []byte(key)
		if secret.Annotations == nil {
			secret.Annotations = map[string]string{}
		}
		secret.Annotations[salvorv1.KeyNotSavedAnnotation] = notSaved(bsl)
		if err := l.Client.Patch(ctx, secret, patch); err != nil {
			return nil, false, fmt.Errorf("backup storage location %s: adding its encryption key (%s): %w", bsl.Name, what, err)
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

// RotateKey adds a new key to an encrypted location's key Secret: new
// objects are encrypted to it; the older keys stay, so older backups stay
// readable.
func (l *Locations) RotateKey(ctx context.Context, bsl *salvorv1.BackupStorageLocation) (*encryption.Keys, error) {
	if _, _, err := l.EncryptionKeys(ctx, bsl); err != nil {
		return nil, err
	}
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
