package controller

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/backup"
	"github.com/salvor-dev/salvor/internal/restore"
	"github.com/salvor-dev/salvor/internal/testbed"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// TestPhaseTransitions drives the backup and restore reconcilers on a real
// API server through the transitions that need no object store: a spec
// that is wrong ends FailedValidation saying what to fix, a finished one is
// left alone, a restore of a backup that is not finished is refused.
func TestPhaseTransitions(t *testing.T) {
	cfg := testbed.SharedControlPlane(t)
	c, server := testbed.SharedServerNamespace(t)
	ctx := context.Background()
	disc := discovery.NewDiscoveryClientForConfigOrDie(cfg)
	locations := &Locations{Client: c, Namespace: server}
	log := slog.New(slog.DiscardHandler)
	br := &BackupReconciler{Client: c, APIReader: c, Engine: &backup.Engine{Discovery: disc}, Locations: locations, Log: log, Runs: &Runs{}, MaxAttempts: 3}
	rr := &RestoreReconciler{Client: c, APIReader: c, Engine: &restore.Engine{Discovery: disc, Dynamic: dynamic.NewForConfigOrDie(cfg)}, Locations: locations, Log: log, MaxAttempts: 3}
	if err := c.Create(ctx, &salvorv1.BackupStorageLocation{ObjectMeta: metav1.ObjectMeta{Name: "dr", Namespace: server},
		Spec: salvorv1.BackupStorageLocationSpec{Provider: "salvor.dev/filesystem", ObjectStorage: salvorv1.ObjectStorageLocation{Bucket: "b"},
			AccessMode: salvorv1.BackupStorageLocationAccessModeReadOnly}}); err != nil {
		t.Fatal(err)
	}
	reconcileBackup := func(b *salvorv1.Backup) *salvorv1.Backup {
		t.Helper()
		if err := c.Create(ctx, b); err != nil {
			t.Fatal(err)
		}
		if _, err := br.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: server, Name: b.Name}}); err != nil {
			t.Fatalf("Reconcile %s: %v", b.Name, err)
		}
		got := &salvorv1.Backup{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(b), got); err != nil {
			t.Fatal(err)
		}
		return got
	}

	for _, tc := range []struct {
		name string
		spec salvorv1.BackupSpec
		want []string
	}{
		{"filters-contradict", salvorv1.BackupSpec{StorageLocation: "dr", IncludedNamespaces: []string{"app"}, ExcludedNamespaces: []string{"app"}},
			[]string{`namespace "app" is both included and excluded`}},
		{"no-location", salvorv1.BackupSpec{StorageLocation: "nowhere"},
			[]string{`backup storage location "nowhere" does not exist in namespace ` + server}},
		{"read-only-location", salvorv1.BackupSpec{StorageLocation: "dr"},
			[]string{`backup storage location "dr" is ReadOnly`}},
		{"unknown-resource", salvorv1.BackupSpec{StorageLocation: "dr", IncludedResources: []string{"configmap", "widgetz"}},
			[]string{`includedResources: "widgetz" is not a resource`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := reconcileBackup(&salvorv1.Backup{ObjectMeta: metav1.ObjectMeta{Name: tc.name, Namespace: server}, Spec: tc.spec})
			all := strings.Join(got.Status.ValidationErrors, "\n")
			if got.Status.Phase != salvorv1.BackupPhaseFailedValidation {
				t.Fatalf("phase %q, want FailedValidation (%s)", got.Status.Phase, all)
			}
			for _, w := range tc.want {
				if !strings.Contains(all, w) {
					t.Errorf("validation errors %q lack %q", all, w)
				}
			}
		})
	}

	// A finished backup is left as it is.
	done := &salvorv1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "done", Namespace: server}, Spec: salvorv1.BackupSpec{StorageLocation: "nowhere"}}
	if err := c.Create(ctx, done); err != nil {
		t.Fatal(err)
	}
	done.Status.Phase = salvorv1.BackupPhaseCompleted
	if err := c.Status().Update(ctx, done); err != nil {
		t.Fatal(err)
	}
	if _, err := br.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: server, Name: "done"}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(done), done); err != nil || done.Status.Phase != salvorv1.BackupPhaseCompleted {
		t.Errorf("a Completed backup went to %q (%v)", done.Status.Phase, err)
	}

	// Restores: of a backup that failed validation, and of none.
	for _, tc := range []struct{ name, backup, want string }{
		{"of-invalid", "no-location", `backup "no-location" is FailedValidation: only a Completed or PartiallyFailed backup can be restored`},
		{"of-nothing", "absent", `backup "absent" does not exist in namespace ` + server},
	} {
		rs := &salvorv1.Restore{ObjectMeta: metav1.ObjectMeta{Name: tc.name, Namespace: server}, Spec: salvorv1.RestoreSpec{BackupName: tc.backup}}
		if err := c.Create(ctx, rs); err != nil {
			t.Fatal(err)
		}
		if _, err := rr.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: server, Name: tc.name}}); err != nil {
			t.Fatal(err)
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(rs), rs); err != nil {
			t.Fatal(err)
		}
		if rs.Status.Phase != salvorv1.RestorePhaseFailedValidation || !strings.Contains(strings.Join(rs.Status.ValidationErrors, "\n"), tc.want) {
			t.Errorf("restore %s: %s %q", tc.name, rs.Status.Phase, rs.Status.ValidationErrors)
		}
	}

	// The mappings of the restore's namespace are judged with its spec:
	// two ConfigMaps mapping storage classes, or an image row that is not
	// "old,new", fail its validation naming them, before any backup is read.
	for _, cm := range []*corev1.ConfigMap{
		{ObjectMeta: metav1.ObjectMeta{Name: "classes-a", Namespace: server, Labels: map[string]string{"velero.io/plugin-config": "", "velero.io/change-storage-class": "RestoreItemAction"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "classes-b", Namespace: server, Labels: map[string]string{"velero.io/plugin-config": "", "velero.io/change-storage-class": "RestoreItemAction"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "images", Namespace: server, Labels: map[string]string{"velero.io/plugin-config": "", "velero.io/change-image-name": "RestoreItemAction"}},
			Data: map[string]string{"registry": "registry.a mirror.b"}},
	} {
		if err := c.Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
	}
	rs := &salvorv1.Restore{ObjectMeta: metav1.ObjectMeta{Name: "mapped-badly", Namespace: server}, Spec: salvorv1.RestoreSpec{BackupName: "absent"}}
	if err := c.Create(ctx, rs); err != nil {
		t.Fatal(err)
	}
	if _, err := rr.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: server, Name: rs.Name}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(rs), rs); err != nil {
		t.Fatal(err)
	}
	all := strings.Join(rs.Status.ValidationErrors, "\n")
	for _, want := range []string{
		"ConfigMaps classes-a, classes-b in " + server + " all map storage classes (labelled velero.io/plugin-config,velero.io/change-storage-class=RestoreItemAction): keep one",
		`ConfigMap ` + server + `/images maps image names, but its key registry holds "registry.a mirror.b": write "old,new"`,
	} {
		if rs.Status.Phase != salvorv1.RestorePhaseFailedValidation || !strings.Contains(all, want) {
			t.Errorf("restore with bad mappings: %s, validation errors %q lack %q", rs.Status.Phase, all, want)
		}
	}
}

// TestBackupTTL: a backup's own ttl wins; without one, the server's
// default, shortened to an immutable location's retainFor.
func TestBackupTTL(t *testing.T) {
	locked := &salvorv1.BackupStorageLocation{ObjectMeta: metav1.ObjectMeta{Name: "locked"},
		Spec: salvorv1.BackupStorageLocationSpec{Immutability: &salvorv1.LocationImmutability{RetainFor: metav1.Duration{Duration: time.Hour}}}}
	plain := &salvorv1.BackupStorageLocation{ObjectMeta: metav1.ObjectMeta{Name: "plain"}}
	for _, tc := range []struct {
		own, dflt time.Duration
		bsl       *salvorv1.BackupStorageLocation
		want      time.Duration
		from      string
	}{
		{2 * time.Hour, 720 * time.Hour, locked, 2 * time.Hour, "ttl"},
		{0, 720 * time.Hour, locked, time.Hour, "location locked's immutability.retainFor"},
		{0, 30 * time.Minute, locked, 30 * time.Minute, "the server's default ttl (--default-backup-ttl)"},
		{0, 720 * time.Hour, plain, 720 * time.Hour, "the server's default ttl (--default-backup-ttl)"},
		{0, 720 * time.Hour, nil, 720 * time.Hour, "the server's default ttl (--default-backup-ttl)"},
	} {
		got, from := backupTTL(tc.own, tc.dflt, tc.bsl)
		if got != tc.want || from != tc.from {
			t.Errorf("backupTTL(%s, %s, %v) = %s from %q, want %s from %q", tc.own, tc.dflt, tc.bsl != nil, got, from, tc.want, tc.from)
		}
	}
}
