package datamover

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/testbed"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// TestPasswords keeps the repositories' passwords on a real API server: an
// upload makes the unencrypted locations' one at random and later ones
// keep it; a restore never makes one (ErrNoPassword, saying to copy the
// Secret); an encrypted location's is derived from its keys under a key of
// its own, put back when changed, and refused when it cannot be derived.
func TestPasswords(t *testing.T) {
	c, server := testbed.SharedServerNamespace(t)
	ctx := context.Background()
	plain := &salvorv1.BackupStorageLocation{ObjectMeta: metav1.ObjectMeta{Name: "primary", Namespace: server}}
	vault := &salvorv1.BackupStorageLocation{ObjectMeta: metav1.ObjectMeta{Name: "vault", Namespace: server},
		Spec: salvorv1.BackupStorageLocationSpec{Encryption: &salvorv1.LocationEncryption{}}}
	derived := "derived-from-the-keys"
	p := &Passwords{Client: c, Reader: c, Namespace: server, Derive: func(context.Context, *salvorv1.BackupStorageLocation) (string, error) { return derived, nil }}
	secret := func() map[string][]byte {
		t.Helper()
		s := &corev1.Secret{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: server, Name: PasswordSecret}, s); err != nil {
			t.Fatal(err)
		}
		return s.Data
	}

	if _, err := p.Get(ctx, plain); !errors.Is(err, ErrNoPassword) || !strings.Contains(err.Error(), "copy the Secret") {
		t.Errorf("a restore's password before any upload: %v, want ErrNoPassword", err)
	}
	if err := p.Ensure(ctx, plain, true); err != nil {
		t.Fatal(err)
	}
	first := string(secret()[PasswordKey])
	if got, err := p.Get(ctx, plain); err != nil || got != first || len(first) < 40 {
		t.Errorf("the unencrypted locations' password: %q (%v), made %q", got, err, first)
	}
	if err := p.Ensure(ctx, plain, true); err != nil || string(secret()[PasswordKey]) != first {
		t.Errorf("a second upload changed the password: %v", err)
	}

	if got, err := p.Get(ctx, vault); err != nil || got != derived || string(secret()["repository-password-vault"]) != derived || string(secret()[PasswordKey]) != first {
		t.Errorf("the encrypted location's password: %q (%v), Secret %v", got, err, secret())
	}
	derived = "the-keys-put-back"
	if got, err := p.Get(ctx, vault); err != nil || got != derived || string(secret()["repository-password-vault"]) != derived {
		t.Errorf("the encrypted location's password after its keys changed: %q (%v)", got, err)
	}
	p.Derive = nil
	if _, err := p.Get(ctx, vault); !errors.Is(err, ErrNoPassword) {
		t.Errorf("an encrypted location without derivation: %v, want ErrNoPassword", err)
	}
	// An unencrypted location given a password of its own (Velero's, for
	// the repositories Velero wrote there) opens with it; the others keep
	// the shared one.
	velero := &salvorv1.BackupStorageLocation{ObjectMeta: metav1.ObjectMeta{Name: "velero", Namespace: server}}
	if err := p.store(ctx, "repository-password-velero", "static-passw0rd", false); err != nil {
		t.Fatal(err)
	}
	if got, err := p.Get(ctx, velero); err != nil || got != "static-passw0rd" {
		t.Errorf("a location's own password: %q (%v)", got, err)
	}
	if got, err := p.Get(ctx, plain); err != nil || got != first {
		t.Errorf("the shared password beside a location's own: %q (%v), want %q", got, err, first)
	}
	// Mover pods take the location's own key: an encrypted location's
	// alone; an unencrypted one's first, then the shared one.
	du := &salvorv1.DataUpload{ObjectMeta: metav1.ObjectMeta{Name: "up", Namespace: server}}
	for bsl, want := range map[*salvorv1.BackupStorageLocation][]string{plain: {PasswordKey, "repository-password-primary"}, velero: {PasswordKey, "repository-password-velero"},
		vault: {"repository-password-vault"}} {
		env := (Pods{Image: "salvor"}).UploadPod(du, bsl, 1).Spec.Containers[0].Env
		var got []string
		for _, e := range env {
			if ref := e.ValueFrom.SecretKeyRef; ref.Name == PasswordSecret {
				got = append(got, ref.Key)
			}
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("location %s: the mover pod's password comes from keys %v, want %v", bsl.Name, got, want)
		}
	}
	for _, tc := range []struct{ shared, own, want string }{{"s", "", "s"}, {"s", "o", "o"}, {"", "o", "o"}, {"", "", ""}} {
		env := map[string]string{PasswordEnv: tc.shared, LocationPasswordEnv: tc.own}
		if got := MoverPassword(func(k string) string { return env[k] }); got != tc.want {
			t.Errorf("MoverPassword(shared %q, own %q) = %q, want %q", tc.shared, tc.own, got, tc.want)
		}
	}
}
