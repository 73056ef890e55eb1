package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/testbed"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// TestEncryptedLocation: a location with --encryption-key-secret gets a
// key Secret made by the server; a backup of Secrets and ConfigMaps to it
// leaves no object in the bucket that is not encrypted, nor any of their
// values; it restores equal, verifies, and its log downloads. After a key
// rotation new backups use the new key and old ones still restore. A
// second cluster syncs the location only once it has the keys, and says
// what is missing before. With the key Secret deleted (and so made anew),
// a restore of an older backup fails validation naming the backup and the
// key.
func TestEncryptedLocation(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	c.startServer(t)
	cfg := c.s3Location(t, minio, "vault", "backups", true, "--encryption-key-secret", "backup-keys")
	ctx := context.Background()
	bsl := c.waitLocation(t, "vault", salvorv1.BackupStorageLocationPhaseAvailable)
	keySecret := &corev1.Secret{}
	if err := c.client.Get(ctx, client.ObjectKey{Namespace: "salvor", Name: "backup-keys"}, keySecret); err != nil {
		t.Fatalf("the server made no key Secret: %v", err)
	}
	if !strings.HasPrefix(bsl.Status.EncryptionRecipient, "age1") || !strings.Contains(string(keySecret.Data["keys"]), "AGE-SECRET-KEY-1") ||
		!strings.Contains(bsl.Status.Message, "the server created a new encryption key") {
		t.Errorf("location status %+v; key Secret keys %q", bsl.Status, keySecret.Data)
	}
	// Once the keys are kept elsewhere, the mark goes, and the message with it.
	delete(keySecret.Annotations, salvorv1.KeyNotSavedAnnotation)
	if err := c.client.Update(ctx, keySecret); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the location's message cleared", time.Minute, func() (bool, string) {
		b := c.waitLocation(t, "vault", salvorv1.BackupStorageLocationPhaseAvailable)
		return b.Status.Message == "", b.Status.Message
	})

	const secretValue, configValue = "hunter2-s3cr3t-value", "configmap-marker-value"
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "sealed"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "sealed"}, Data: map[string][]byte{"password": []byte(secretValue)}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: "sealed"}, Data: map[string]string{"k": configValue}})
	c.mustSalvor(t, "backup", "create", "first", "--include-namespaces", "sealed", "--wait")

	raw := openObjectStore(t, cfg)
	keys, err := raw.ListObjects(ctx, cfg["bucket"], "backups/")
	if err != nil || len(keys) < 7 {
		t.Fatalf("the bucket holds %v, %v", keys, err)
	}
	for _, k := range keys {
		rc, err := raw.GetObject(ctx, cfg["bucket"], k)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(rc)
		rc.Close()
		if !bytes.HasPrefix(body, []byte("age-encryption.org/v1\n")) {
			t.Errorf("object %s is not encrypted: %.40q", k, body)
		}
		for _, v := range []string{secretValue, base64.StdEncoding.EncodeToString([]byte(secretValue)), configValue} {
			if bytes.Contains(body, []byte(v)) {
				t.Errorf("object %s holds %q", k, v)
			}
		}
	}

	c.mustSalvor(t, "restore", "create", "back", "--from-backup", "first", "--namespace-mappings", "sealed:unsealed", "--wait")
	got := &corev1.Secret{}
	if err := c.client.Get(ctx, client.ObjectKey{Namespace: "unsealed", Name: "db"}, got); err != nil || string(got.Data["password"]) != secretValue {
		t.Errorf("the restored Secret: %v, %v", got.Data, err)
	}
	if out := c.mustSalvor(t, "backup", "verify", "first"); !strings.Contains(out, "Verification: Passed") {
		t.Errorf("verify of an encrypted backup:\n%s", out)
	}
	// The tarball comes encrypted to the CLI's own key and is written plain.
	file := filepath.Join(t.TempDir(), "first.tar.gz")
	c.mustSalvor(t, "backup", "download", "first", "-o", file)
	body, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if cm := downloaded(t, body)["resources/configmaps/namespaces/sealed/settings.json"]; !bytes.Contains(cm, []byte(configValue)) {
		t.Errorf("the downloaded tarball's ConfigMap: %q", cm)
	}
	if out := c.mustSalvor(t, "backup", "logs", "first"); !strings.Contains(out, "backup finished") {
		t.Errorf("the log of an encrypted backup:\n%s", out)
	}
	if out := c.mustSalvor(t, "restore", "describe", "back", "--details"); strings.Contains(out, "not available") {
		t.Errorf("a restore's results from an encrypted location:\n%s", out)
	}

	// A changed byte in the encrypted tarball: the restore fails naming the
	// backup's object, before it creates anything.
	tarKey := "backups/first/first.tar.gz"
	rc, err := raw.GetObject(ctx, cfg["bucket"], tarKey)
	if err != nil {
		t.Fatal(err)
	}
	good, _ := io.ReadAll(rc)
	rc.Close()
	bad := bytes.Clone(good)
	bad[len(bad)-40] ^= 1
	if err := raw.PutObject(ctx, cfg["bucket"], tarKey, bytes.NewReader(bad)); err != nil {
		t.Fatal(err)
	}
	_, _ = c.salvor(t, "restore", "create", "tampered", "--from-backup", "first", "--namespace-mappings", "sealed:tampered", "--wait")
	rs := c.waitRestore(t, "tampered", salvorv1.RestorePhaseFailed, salvorv1.RestorePhaseCompleted, salvorv1.RestorePhasePartiallyFailed, salvorv1.RestorePhaseFailedValidation)
	if rs.Status.Phase != salvorv1.RestorePhaseFailed || !strings.Contains(rs.Status.FailureReason, "object backups/first/first.tar.gz of encrypted location vault") ||
		!strings.Contains(rs.Status.FailureReason, "changed or truncated") {
		t.Errorf("a restore of a tampered encrypted backup: %s %q", rs.Status.Phase, rs.Status.FailureReason)
	}
	if got := versionsIn(t, c, "tampered"); len(got) != 0 {
		t.Errorf("a restore of a tampered backup created %v", got)
	}
	if err := raw.PutObject(ctx, cfg["bucket"], tarKey, bytes.NewReader(good)); err != nil {
		t.Fatal(err)
	}

	// Rotation: a second key; the next backup uses it; the first still restores.
	out := c.mustSalvor(t, "backup-location", "rotate-key", "vault")
	bsl = c.waitLocation(t, "vault", salvorv1.BackupStorageLocationPhaseAvailable)
	if bsl.Status.EncryptionKeys != 2 || !strings.Contains(out, "now has 2 keys") || !strings.Contains(out, bsl.Status.EncryptionRecipient) {
		t.Errorf("after rotate-key: %q; status %+v", out, bsl.Status)
	}
	c.mustSalvor(t, "backup", "create", "second", "--include-namespaces", "sealed", "--wait")
	c.mustSalvor(t, "restore", "create", "back-again", "--from-backup", "first", "--namespace-mappings", "sealed:unsealed-again", "--wait")
	if err := c.client.Get(ctx, client.ObjectKey{Namespace: "salvor", Name: "backup-keys"}, keySecret); err != nil {
		t.Fatal(err)
	}
	bothKeys := keySecret.Data["keys"]

	// Another cluster reading the bucket: without the keys it says what
	// is missing; with them it syncs both backups.
	c2 := startCluster(t)
	c2.startServer(t)
	c2.s3Location(t, minio, "vault", "backups", true, "--encryption-key-secret", "dr-keys/age", "--access-mode", "ReadOnly")
	eventually(t, "the second cluster saying it cannot read the backups", time.Minute, func() (bool, string) {
		b := c2.waitLocation(t, "vault", salvorv1.BackupStorageLocationPhaseAvailable)
		return strings.Contains(b.Status.Message, "2 backups in the location cannot be synced") &&
			strings.Contains(b.Status.Message, "encrypted with a key the location's key Secret does not hold"), b.Status.Message
	})
	drKeys := &corev1.Secret{}
	if err := c2.client.Get(ctx, client.ObjectKey{Namespace: "salvor", Name: "dr-keys"}, drKeys); err != nil {
		t.Fatal(err)
	}
	drKeys.Data["age"] = bothKeys
	if err := c2.client.Update(ctx, drKeys); err != nil {
		t.Fatal(err)
	}
	c2.waitBackup(t, "first", salvorv1.BackupPhaseCompleted)
	c2.waitBackup(t, "second", salvorv1.BackupPhaseCompleted)

	// The key Secret deleted: the server makes a new key, and says so; the
	// older backups cannot be read with it, and a restore says which and why.
	if err := c.client.Delete(ctx, keySecret); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a new key made, and said", time.Minute, func() (bool, string) {
		b := c.waitLocation(t, "vault", salvorv1.BackupStorageLocationPhaseAvailable)
		return b.Status.EncryptionKeys == 1 && strings.Contains(b.Status.Message, "the server created a new encryption key (Secret salvor/backup-keys, key keys)"), b.Status.Message
	})
	_, _ = c.salvor(t, "restore", "create", "lost", "--from-backup", "first", "--namespace-mappings", "sealed:lost")
	rs = c.waitRestore(t, "lost", salvorv1.RestorePhaseFailedValidation, salvorv1.RestorePhaseCompleted, salvorv1.RestorePhaseFailed, salvorv1.RestorePhasePartiallyFailed)
	msg := strings.Join(rs.Status.ValidationErrors, " ")
	if rs.Status.Phase != salvorv1.RestorePhaseFailedValidation || !strings.Contains(msg, "backup first cannot be read with the keys of its encrypted location vault (Secret salvor/backup-keys, key keys)") ||
		!strings.Contains(msg, "does not hold") {
		t.Errorf("a restore whose key is gone: %s %q", rs.Status.Phase, rs.Status.ValidationErrors)
	}
}
