package datamover

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// ErrNoPassword: a location's repository password is not in the cluster
// and may not be made here.
var ErrNoPassword = errors.New("salvor: no kopia repository password")

// PasswordKeyOf is the key of the password Secret that holds location
// bsl's repository password: PasswordKey for every unencrypted location
// (unless LocationPasswordKey has one of its own there), and
// LocationPasswordKey for each encrypted location, whose password derives
// from its keys.
func PasswordKeyOf(bsl *salvorv1.BackupStorageLocation) string {
	if bsl.Spec.Encryption == nil {
		return PasswordKey
	}
	return LocationPasswordKey(bsl)
}

// LocationPasswordKey is the key of the password Secret for location
// bsl's own password. An unencrypted location's there wins over the
// shared one: how the repositories of a location Velero wrote (with
// Velero's password) are read beside Salvor's own.
func LocationPasswordKey(bsl *salvorv1.BackupStorageLocation) string {
	key := PasswordKey + "-" + bsl.Name
	if len(key) > 253 { // a Secret's key is at most 253 characters
		sum := sha256.Sum256([]byte(bsl.Name))
		key = PasswordKey + "-" + hex.EncodeToString(sum[:16])
	}
	return key
}

// Passwords keeps the kopia repositories' passwords in the Secret
// PasswordSecret of the server's namespace: one made at random, on first
// use, for the unencrypted locations; for each encrypted location one
// derived from the location's keys, so that only the keys' holders can
// read its volume data, and a cluster given the keys (a disaster-recovery
// one) derives it again.
type Passwords struct {
	Client    ctrl.Client
	Reader    ctrl.Reader
	Namespace string
	// Derive gives an encrypted location's password from its keys (nil:
	// encrypted locations move no data).
	Derive func(ctx context.Context, bsl *salvorv1.BackupStorageLocation) (string, error)
}

// Ensure puts bsl's password in the Secret when it is not there: a derived
// one always, a random one only when random is true (an upload's; never a
// restore's, for a new password opens nothing — that is ErrNoPassword). A
// password already there is kept as it is (it may be Velero's, copied to
// restore Velero's data).
func (p *Passwords) Ensure(ctx context.Context, bsl *salvorv1.BackupStorageLocation, random bool) error {
	_, err := p.get(ctx, bsl, random)
	return err
}

// Get returns bsl's password, deriving an encrypted location's when it
// is not there yet.
func (p *Passwords) Get(ctx context.Context, bsl *salvorv1.BackupStorageLocation) (string, error) {
	return p.get(ctx, bsl, false)
}

func (p *Passwords) get(ctx context.Context, bsl *salvorv1.BackupStorageLocation, random bool) (string, error) {
	key := PasswordKeyOf(bsl)
	what := fmt.Sprintf("Secret %s/%s key %s", p.Namespace, PasswordSecret, key)
	s := &corev1.Secret{}
	err := p.Reader.Get(ctx, ctrl.ObjectKey{Namespace: p.Namespace, Name: PasswordSecret}, s)
	if err != nil && !apierrors.IsNotFound(err) {
		return "", fmt.Errorf("reading the kopia repositories' password (%s): %w", what, err)
	}
	stored := string(s.Data[key])
	if bsl.Spec.Encryption != nil {
		// Derived each time: the Secret only hands it to mover pods, and
		// one derived from keys since replaced (a Secret of keys made
		// anew, then put back) must not stand.
		if p.Derive == nil {
			return "", fmt.Errorf("%w: backup storage location %s is encrypted, and this server cannot derive its repository password from its keys", ErrNoPassword, bsl.Name)
		}
		pw, err := p.Derive(ctx, bsl)
		if err != nil {
			return "", fmt.Errorf("deriving the repository password of encrypted location %s from its keys: %w", bsl.Name, err)
		}
		if pw == stored {
			return pw, nil
		}
		return pw, p.store(ctx, key, pw, true)
	}
	if own := string(s.Data[LocationPasswordKey(bsl)]); own != "" {
		return own, nil
	}
	if stored != "" {
		return stored, nil
	}
	var pw string
	switch {
	case random:
		b := make([]byte, 32)
		if _, err := rand.Read(b); err != nil {
			return "", err
		}
		pw = base64.RawURLEncoding.EncodeToString(b)
	default:
		return "", fmt.Errorf("%w: %s does not exist: in a cluster other than the backup's, copy the Secret from the server's namespace there", ErrNoPassword, what)
	}
	return pw, p.store(ctx, key, pw, false)
}

// store adds key to the password Secret, making the Secret if need be; a
// key another writer put there first wins unless replace.
func (p *Passwords) store(ctx context.Context, key, pw string, replace bool) error {
	for range 3 {
		s := &corev1.Secret{}
		err := p.Reader.Get(ctx, ctrl.ObjectKey{Namespace: p.Namespace, Name: PasswordSecret}, s)
		if apierrors.IsNotFound(err) {
			s = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: PasswordSecret, Labels: map[string]string{ComponentLabel: Component}},
				Type: corev1.SecretTypeOpaque, Data: map[string][]byte{key: []byte(pw)}}
			err = p.Client.Create(ctx, s)
			if apierrors.IsAlreadyExists(err) {
				continue
			}
		} else if err == nil {
			if len(s.Data[key]) > 0 && (!replace || string(s.Data[key]) == pw) {
				return nil
			}
			patch := ctrl.MergeFromWithOptions(s.DeepCopy(), ctrl.MergeFromWithOptimisticLock{})
			if s.Data == nil {
				s.Data = map[string][]byte{}
			}
			s.Data[key] = []byte(pw)
			// A patch (what the server may do to Secrets), which conflicts
			// when another writer came between.
			err = p.Client.Patch(ctx, s, patch)
			if apierrors.IsConflict(err) {
				continue
			}
		}
		if err != nil {
			return fmt.Errorf("keeping the kopia repositories' password (Secret %s/%s key %s): %w", p.Namespace, PasswordSecret, key, err)
		}
		return nil
	}
	return fmt.Errorf("keeping the kopia repositories' password (Secret %s/%s key %s): the Secret kept changing", p.Namespace, PasswordSecret, key)
}

// PasswordIn is location bsl's repository password as Secret s (the
// password Secret) holds it, as a mover pod is given it (passwordEnv): an
// encrypted location's derived one; for the others the location's own,
// else the shared one. Empty: none there.
func PasswordIn(s *corev1.Secret, bsl *salvorv1.BackupStorageLocation) string {
	if bsl.Spec.Encryption != nil {
		return string(s.Data[PasswordKeyOf(bsl)])
	}
	return cmp.Or(string(s.Data[LocationPasswordKey(bsl)]), string(s.Data[PasswordKey]))
}
