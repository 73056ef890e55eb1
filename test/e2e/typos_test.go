package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/testbed"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// TestWarningsWhereDataIsMissed: a namespace filter or mapping that
// matches nothing is a warning naming the closest namespace there is, and
// with --strict a validation failure that makes --wait exit non-zero; a
// volume left unsnapshotted for want of a snapshot location is a warning
// naming it, unless the backup asked for no snapshots.
func TestWarningsWhereDataIsMissed(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	c.startServer(t)
	c.s3Location(t, minio, "primary", "backups", true)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app"}}, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "plain"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "app"}, Data: map[string]string{"k": "v"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "plain"}, Data: map[string]string{"k": "v"}})

	// A backup: a warning, listed by describe --details.
	c.mustSalvor(t, "backup", "create", "typo", "--include-namespaces", "ap,plain", "--wait")
	b := c.waitBackup(t, "typo", salvorv1.BackupPhaseCompleted)
	if b.Status.Warnings != 1 {
		t.Errorf("a backup with a namespace typo has %d warnings, want 1", b.Status.Warnings)
	}
	desc := c.mustSalvor(t, "backup", "describe", "typo", "--details")
	if !strings.Contains(desc, `namespace "ap" in includedNamespaces matches no namespace in the cluster: did you mean "app"?`) {
		t.Errorf("backup describe --details does not show the typo:\n%s", desc)
	}
	// With --strict: refused, and --wait says so with a non-zero exit.
	out, err := c.salvor(t, "backup", "create", "strict", "--include-namespaces", "ap", "--strict", "--wait")
	if err == nil || !strings.Contains(out, "FailedValidation") {
		t.Errorf("a strict backup with a typo: %v\n%s", err, out)
	}
	if b := c.waitBackup(t, "strict", salvorv1.BackupPhaseFailedValidation); len(b.Status.ValidationErrors) != 1 ||
		!strings.Contains(b.Status.ValidationErrors[0], `did you mean "app"?`) {
		t.Errorf("strict backup's validation errors: %q", b.Status.ValidationErrors)
	}
	c.mustSalvor(t, "backup", "create", "whole", "--include-namespaces", "app,plain", "--strict", "--wait")

	// A restore: a namespace and a mapping the backup does not hold.
	c.mustSalvor(t, "restore", "create", "typo", "--from-backup", "whole", "--include-namespaces", "plian,app",
		"--namespace-mappings", "plian:plain2,app:app2", "--wait")
	rs := &salvorv1.Restore{}
	if err := c.client.Get(t.Context(), client.ObjectKey{Namespace: "salvor", Name: "typo"}, rs); err != nil || rs.Status.Warnings != 2 {
		t.Errorf("a restore with a namespace and a mapping typo: %d warnings, %v", rs.Status.Warnings, err)
	}
	desc = c.mustSalvor(t, "restore", "describe", "typo", "--details")
	for _, w := range []string{`namespace "plian" in includedNamespaces matches no namespace in backup whole: did you mean "plain"?`,
		`namespace "plian" in namespaceMapping matches no namespace in backup whole`} {
		if !strings.Contains(desc, w) {
			t.Errorf("restore describe --details lacks %q:\n%s", w, desc)
		}
	}
	if err := c.client.Get(t.Context(), client.ObjectKey{Namespace: "app2", Name: "c"}, &corev1.ConfigMap{}); err != nil {
		t.Errorf("what was spelled right was restored: %v", err)
	}
	out, err = c.salvor(t, "restore", "create", "strict", "--from-backup", "whole", "--include-namespaces", "plian", "--strict", "--wait")
	if err == nil || !strings.Contains(out, "FailedValidation") {
		t.Errorf("a strict restore with a typo: %v\n%s", err, out)
	}
	if err := c.client.Get(t.Context(), client.ObjectKey{Namespace: "salvor", Name: "strict"}, rs); err != nil || rs.Status.Phase != salvorv1.RestorePhaseFailedValidation ||
		len(rs.Status.ValidationErrors) != 1 || !strings.Contains(rs.Status.ValidationErrors[0], `did you mean "plain"?`) {
		t.Errorf("strict restore: %s %q %v", rs.Status.Phase, rs.Status.ValidationErrors, err)
	}

	// The backup's restores go with it (Velero's rule), their logs too.
	if logs := c.mustSalvor(t, "restore", "logs", "typo"); !strings.Contains(logs, `"restore":"typo"`) {
		t.Errorf("restore logs:\n%s", logs)
	}
	c.mustSalvor(t, "backup", "delete", "whole", "--confirm")
	eventually(t, "backup whole deleted", time.Minute, func() (bool, string) {
		err := c.client.Get(t.Context(), client.ObjectKey{Namespace: "salvor", Name: "whole"}, &salvorv1.Backup{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	for _, name := range []string{"typo", "strict"} {
		if err := c.client.Get(t.Context(), client.ObjectKey{Namespace: "salvor", Name: name}, &salvorv1.Restore{}); !apierrors.IsNotFound(err) {
			t.Errorf("restore %s of the deleted backup stayed: %v", name, err)
		}
	}

	// A bound volume and no snapshot location: its data is not in the backup.
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "vols"}})
	c.create(t, hostPathVolume("vols-pv", t.TempDir(), "vols", "data")...)
	c.mustSalvor(t, "backup", "create", "vols", "--include-namespaces", "vols", "--wait")
	if b := c.waitBackup(t, "vols", salvorv1.BackupPhaseCompleted); b.Status.Warnings != 1 {
		t.Errorf("a backup with a volume no location snapshots: %d warnings, want 1", b.Status.Warnings)
	}
	if desc := c.mustSalvor(t, "backup", "describe", "vols", "--details"); !strings.Contains(desc,
		"persistentvolumes vols-pv: not snapshotted, its data is not in the backup: no volume snapshot location serves it") {
		t.Errorf("describe --details does not list the skipped volume:\n%s", desc)
	}
	c.mustSalvor(t, "backup", "create", "vols-nosnap", "--include-namespaces", "vols", "--snapshot-volumes=false", "--wait")
	if b := c.waitBackup(t, "vols-nosnap", salvorv1.BackupPhaseCompleted); b.Status.Warnings != 0 {
		t.Errorf("a backup asked not to snapshot warns %d times", b.Status.Warnings)
	}
}
