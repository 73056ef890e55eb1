package snapshots

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/itemoperation"
	"github.com/salvor-dev/salvor/internal/operations"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// OperationPrefix prefixes the "plugin" of a snapshot in the operations
// tracker, to tell it from a BackupItemAction's operation.
const OperationPrefix = "snapshot:"

// progressName makes a valid object name from a snapshot ID; the full ID is in
// the resource's status.
func progressName(backupName, snapshotID string) string {
	clean := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			return r
		case r >= 'A' && r <= 'Z':
			return r + ('a' - 'A')
		}
		return '-'
	}, snapshotID)
	clean = strings.Trim(clean, "-")
	sum := sha256.Sum256([]byte(backupName + "/" + snapshotID))
	suffix := hex.EncodeToString(sum[:4])
	if len(clean) > 50 {
		clean = strings.Trim(clean[:50], "-")
	}
	if clean == "" {
		return "snapshot-" + suffix
	}
	return clean + "-" + suffix
}

// View is the backup's snapshots as operations it waits for, each
// followed through statuses[i].
func View(snaps []VolumeSnapshot, statuses []itemoperation.Status) []operations.Operation {
	out := make([]operations.Operation, len(snaps))
	for i := range snaps {
		out[i] = operations.Operation{
			Plugin:      OperationPrefix + snaps[i].Spec.Location,
			OperationID: snaps[i].Status.ProviderSnapshotID,
			Item:        "persistentvolume " + snaps[i].Spec.PersistentVolumeName,
			Status:      &statuses[i],
		}
	}
	return out
}

// Sync copies the tracker's view back into the snapshot records.
func Sync(snaps []VolumeSnapshot, statuses []itemoperation.Status) {
	for i := range snaps {
		st := statuses[i]
		snaps[i].Status.Phase = string(st.Phase)
		snaps[i].Status.Error = st.Error
		snaps[i].Status.BytesDone, snaps[i].Status.TotalBytes = st.NCompleted, st.NTotal
		snaps[i].Status.Description = st.Description
		snaps[i].Status.Updated = st.Updated
	}
}

// Taken are the snapshots, by provider and ID, this cluster
// recorded backup b taking: each in a VolumePluginBackup written as it was
// taken. A backup synced from its location has none that count: its
// VolumePluginBackups were made from the location's files. The bucket's
// own list proves nothing — whoever can write there could name any
// snapshot the snapshotter reaches — so only these are deleted with the
// backup or, unless a restore trusts the backup's snapshots, made into
// volumes.
// It returns the backup's VolumePluginBackups too.
func Taken(ctx context.Context, c client.Client, b *salvorv1.Backup) (map[[2]string]bool, *salvorv1.VolumePluginBackupList, error) {
	vpbs := &salvorv1.VolumePluginBackupList{}
	if err := c.List(ctx, vpbs, client.InNamespace(b.Namespace), client.MatchingLabels{salvorv1.BackupNameLabel: salvorv1.LabelValue(b.Name)}); err != nil {
		return nil, nil, fmt.Errorf("reading the VolumePluginBackups of backup %s: %w", b.Name, err)
	}
	taken := map[[2]string]bool{}
	for _, v := range vpbs.Items {
		if b.Annotations[salvorv1.SyncedAnnotation] == "" && v.Spec.Backup == b.Name && v.Status.SnapshotID != "" {
			taken[[2]string{v.Spec.Plugin, v.Status.SnapshotID}] = true
		}
	}
	return taken, vpbs, nil
}

// RecordProgress creates or updates a snapshot's VolumePluginBackup. A newer
// update wins, whoever wrote it (the server or a Kubernetes-aware plugin),
// and the bytes done never go backwards.
func RecordProgress(ctx context.Context, c client.Client, ns string, b *salvorv1.Backup, s VolumeSnapshot) error {
	name := progressName(b.Name, s.Status.ProviderSnapshotID)
	v := &salvorv1.VolumePluginBackup{}
	err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, v)
	if apierrors.IsNotFound(err) {
		v = &salvorv1.VolumePluginBackup{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{salvorv1.BackupNameLabel: salvorv1.LabelValue(b.Name),
				salvorv1.SnapshotLocationLabel: salvorv1.LabelValue(s.Spec.Location)}},
			Spec: salvorv1.VolumePluginBackupSpec{Volume: s.Spec.PersistentVolumeName, Backup: b.Name, Plugin: s.Spec.Provider},
		}
		if err := c.Create(ctx, v); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	} else if err != nil {
		return err
	}
	if v.Status.Updated != nil && s.Status.Updated != nil && v.Status.Updated.After(s.Status.Updated.Time) {
		return nil // the plugin wrote something newer
	}
	st := &v.Status
	st.SnapshotID = s.Status.ProviderSnapshotID
	st.Phase = s.Status.Phase
	if st.Phase == "" {
		st.Phase = string(itemoperation.PhaseNew)
	}
	st.Message = s.Status.Error
	if st.StartTimestamp == nil {
		st.StartTimestamp = s.Status.Created
	}
	st.Advance(s.Status.BytesDone, s.Status.TotalBytes)
	if s.Status.Phase == string(itemoperation.PhaseCompleted) || s.Status.Phase == string(itemoperation.PhaseFailed) {
		if s.Status.Phase == string(itemoperation.PhaseCompleted) {
			st.Done()
		}
		if st.CompletionTimestamp == nil {
			now := metav1.Now()
			st.CompletionTimestamp = &now
		}
	}
	st.Updated = s.Status.Updated
	return c.Status().Update(ctx, v)
}

// Drop ends the snapshots of a backup that failed or was
// cancelled: nothing will refer to them, so those still being taken are
// cancelled (which removes a partial copy) and all are deleted. Each
// record's status says so, for its VolumePluginBackup.
func Drop(ctx context.Context, snap *Snapshotter, snaps []VolumeSnapshot, reason string, log *slog.Logger) {
	if snap == nil {
		return
	}
	var wg sync.WaitGroup
	for i := range snaps {
		s := &snaps[i]
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := s.Status.ProviderSnapshotID
			if s.Status.Phase != string(itemoperation.PhaseCompleted) && s.Status.Phase != string(itemoperation.PhaseFailed) {
				if err := snap.VS.Cancel(ctx, id); err != nil {
					log.Warn("cancelling a failed backup's snapshot", "backup", s.Spec.BackupName, "snapshot", id, "error", err)
				}
			}
			if err := snap.VS.DeleteSnapshot(ctx, id); err != nil {
				log.Warn("deleting a failed backup's snapshot", "backup", s.Spec.BackupName, "snapshot", id, "error", err)
			}
			now := metav1.Now()
			s.Status.Phase, s.Status.Error, s.Status.Updated = string(itemoperation.PhaseFailed), reason+"; snapshot deleted", &now
		}()
	}
	wg.Wait()
}
