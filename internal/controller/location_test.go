package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// TestLocationPeriods: Velero's validationFrequency and backupSyncPeriod
// set when a location is checked again and whether a check syncs.
func TestLocationPeriods(t *testing.T) {
	d := func(x time.Duration) *metav1.Duration { return &metav1.Duration{Duration: x} }
	now := time.Date(2026, 11, 27, 4, 0, 0, 0, time.UTC)
	synced := func(ago time.Duration) *metav1.Time { t := metav1.NewTime(now.Add(-ago)); return &t }
	for _, tc := range []struct {
		name       string
		validation *metav1.Duration
		sync       *metav1.Duration
		lastSync   *metav1.Time
		next       time.Duration
		due        bool
		server     *metav1.Duration // the server's --backup-sync-period
	}{
		{"neither: the server's interval, sync at every check", nil, nil, synced(time.Second), time.Minute, true, nil},
		{"validation only", d(5 * time.Minute), nil, synced(time.Second), 5 * time.Minute, true, nil},
		{"a shorter sync period brings the check forward", d(5 * time.Minute), d(2 * time.Minute), synced(time.Minute), 2 * time.Minute, false, nil},
		{"sync period passed", nil, d(2 * time.Minute), synced(2 * time.Minute), time.Minute, true, nil},
		{"a second early counts", nil, d(2 * time.Minute), synced(2*time.Minute - 500*time.Millisecond), time.Minute, true, nil},
		{"never synced yet", nil, d(time.Hour), nil, time.Minute, true, nil},
		{"sync period zero: never", nil, d(0), nil, time.Minute, false, nil},
		{"validation zero: only on change", d(0), nil, nil, 0, true, nil},
		{"validation zero, sync period set: the sync period", d(0), d(10 * time.Minute), synced(time.Minute), 10 * time.Minute, false, nil},
		{"the server's sync period for a location without one", nil, nil, synced(10 * time.Second), 30 * time.Second, false, d(30 * time.Second)},
		{"the server's sync period passed", nil, nil, synced(31 * time.Second), 30 * time.Second, true, d(30 * time.Second)},
		{"the server's zero sync period: never", nil, nil, nil, time.Minute, false, d(0)},
		{"the location's sync period over the server's", nil, d(time.Hour), synced(time.Minute), time.Minute, false, d(0)},
	} {
		bsl := &salvorv1.BackupStorageLocation{Spec: salvorv1.BackupStorageLocationSpec{ValidationFrequency: tc.validation, BackupSyncPeriod: tc.sync},
			Status: salvorv1.BackupStorageLocationStatus{LastSyncedTime: tc.lastSync}}
		if got := nextCheck(bsl, time.Minute, tc.server); got != tc.next {
			t.Errorf("%s: next check in %s, want %s", tc.name, got, tc.next)
		}
		if got := syncDue(bsl, now, tc.server); got != tc.due {
			t.Errorf("%s: sync due %v, want %v", tc.name, got, tc.due)
		}
	}
}

// TestLocationCACert: Velero's objectStorage.caCert reaches the plugin as
// config caCert, unless the config gives its own.
func TestLocationCACert(t *testing.T) {
	l := &Locations{}
	bsl := &salvorv1.BackupStorageLocation{Spec: salvorv1.BackupStorageLocationSpec{Provider: "salvor.dev/s3",
		ObjectStorage: salvorv1.ObjectStorageLocation{Bucket: "b", CACert: []byte("-----BEGIN CERTIFICATE-----\n")}}}
	config, err := l.config(context.Background(), bsl)
	if err != nil || config["caCert"] != "-----BEGIN CERTIFICATE-----\n" || config["bucket"] != "b" {
		t.Errorf("config %v (%v)", config, err)
	}
	bsl.Spec.Config = map[string]string{"caCert": "from config"}
	if config, err := l.config(context.Background(), bsl); err != nil || config["caCert"] != "from config" {
		t.Errorf("config %v (%v): the config's caCert should win", config, err)
	}
}

// TestLocationChanges: a location is checked out of turn when its spec,
// annotations or labels change, never because its own check wrote status.
func TestLocationChanges(t *testing.T) {
	old := &salvorv1.BackupStorageLocation{ObjectMeta: metav1.ObjectMeta{Name: "l", Generation: 1, Annotations: map[string]string{"a": "1"}}}
	for _, tc := range []struct {
		name   string
		change func(*salvorv1.BackupStorageLocation)
		want   bool
	}{
		{"status written by a check", func(b *salvorv1.BackupStorageLocation) {
			now := metav1.Now()
			b.Status.LastValidationTime, b.Status.Phase = &now, salvorv1.BackupStorageLocationPhaseAvailable
		}, false},
		{"spec changed", func(b *salvorv1.BackupStorageLocation) { b.Generation = 2 }, true},
		{"key rotation asked", func(b *salvorv1.BackupStorageLocation) {
			b.Annotations = map[string]string{"a": "1", salvorv1.RotateKeyAnnotation: "x"}
		}, true},
		{"labelled", func(b *salvorv1.BackupStorageLocation) { b.Labels = map[string]string{"team": "a"} }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			updated := old.DeepCopy()
			tc.change(updated)
			if got := locationChanges.Update(event.UpdateEvent{ObjectOld: old, ObjectNew: updated}); got != tc.want {
				t.Errorf("checked again: %v, want %v", got, tc.want)
			}
		})
	}
	if !locationChanges.Create(event.CreateEvent{Object: old}) {
		t.Error("a new location is not checked")
	}
}

// TestFilesystemLocationsConfined: a server that keeps filesystem
// locations to the directories its pod mounts refuses a root anywhere
// else (its pod's own disk), naming the root and what to do; one that is
// not confined, or a location of another provider, is not judged.
func TestFilesystemLocationsConfined(t *testing.T) {
	location := func(provider, root string) *salvorv1.BackupStorageLocation {
		return &salvorv1.BackupStorageLocation{ObjectMeta: metav1.ObjectMeta{Name: "loc"}, Spec: salvorv1.BackupStorageLocationSpec{Provider: provider,
			ObjectStorage: salvorv1.ObjectStorageLocation{Bucket: "b"}, Config: map[string]string{"root": root}}}
	}
	for _, tc := range []struct {
		name     string
		confined bool
		dirs     []string
		provider string
		root     string
		want     string // a part of the error; "" for none
	}{
		{"unconfined", false, nil, "salvor.dev/filesystem", "/tmp/anywhere", ""},
		{"the directory itself", true, []string{"/srv/backups"}, "salvor.dev/filesystem", "/srv/backups", ""},
		{"in the directory", true, []string{"/srv/backups"}, "salvor.dev/filesystem", "/srv/backups/team/a", ""},
		{"bare provider name", true, []string{"/srv/backups"}, "filesystem", "/tmp/x", "is not in /srv/backups"},
		{"in the second directory", true, []string{"/srv/a", "/srv/b/"}, "salvor.dev/filesystem", "/srv/b/c", ""},
		{"scratch disk", true, []string{"/srv/backups"}, "salvor.dev/filesystem", "/tmp/backups", "config root /tmp/backups is not in /srv/backups"},
		{"a look-alike sibling", true, []string{"/srv/backups"}, "salvor.dev/filesystem", "/srv/backups2", "is not in"},
		{"climbing out", true, []string{"/srv/backups"}, "salvor.dev/filesystem", "/srv/backups/../../tmp", "config root /tmp is not in"},
		{"nothing mounted", true, nil, "salvor.dev/filesystem", "/srv/backups", "mounts no directory for filesystem locations"},
		{"relative", true, []string{"/srv/backups"}, "salvor.dev/filesystem", "srv/backups", "want an absolute directory path"},
		{"another provider", true, nil, "salvor.dev/s3", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &Locations{ConfineFilesystem: tc.confined, FilesystemDirs: tc.dirs}
			_, err := l.config(context.Background(), location(tc.provider, tc.root))
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}
