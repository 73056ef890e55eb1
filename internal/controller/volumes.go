package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/backup"
	"github.com/salvor-dev/salvor/internal/itemoperation"
	"github.com/salvor-dev/salvor/internal/operations"
	"github.com/salvor-dev/salvor/internal/plugin/host"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
	"github.com/salvor-dev/salvor/pkg/plugin/api"
)

// snapshotPlugin prefixes the "plugin" of a snapshot in the operations
// tracker, to tell it from a BackupItemAction's operation.
const snapshotPlugin = "snapshot:"

// Snapshotter returns the VolumeSnapshotter of the default (or only)
// VolumeSnapshotLocation, or nil when there is none.
func (l *Locations) Snapshotter(ctx context.Context, name string) (*backup.Snapshotter, error) {
	list := &salvorv1.VolumeSnapshotLocationList{}
	if err := l.Client.List(ctx, list, client.InNamespace(l.Namespace)); err != nil {
		return nil, err
	}
	var vsl *salvorv1.VolumeSnapshotLocation
	for i := range list.Items {
		v := &list.Items[i]
		if (name != "" && v.Name == name) || (name == "" && (v.Spec.Default || len(list.Items) == 1)) {
			vsl = v
		}
	}
	if vsl == nil {
		if name != "" {
			return nil, fmt.Errorf("volume snapshot location %q does not exist", name)
		}
		return nil, nil
	}
	return l.SnapshotterOf(ctx, vsl)
}

// SnapshotterOf opens the VolumeSnapshotter of a location: its plugin,
// initialised with its config.
func (l *Locations) SnapshotterOf(ctx context.Context, vsl *salvorv1.VolumeSnapshotLocation) (*backup.Snapshotter, error) {
	provider := vsl.Spec.Provider
	if !strings.Contains(provider, "/") {
		provider = "velero.io/" + provider
	}
	config, err := l.snapshotConfig(ctx, vsl)
	if err != nil {
		return nil, fmt.Errorf("volume snapshot location %s: %w", vsl.Name, err)
	}
	vs, err := host.Get(ctx, l.Plugins, host.VolumeSnapshotters, provider, config)
	if err != nil {
		return nil, fmt.Errorf("volume snapshot location %s: %w", vsl.Name, err)
	}
	return &backup.Snapshotter{Location: vsl.Name, Provider: provider, VS: vs}, nil
}

// snapshotConfig is what a VolumeSnapshotLocation's plugin is
// initialised with: its config and, when it names a credential, the file
// the server wrote it to (credentialsFile), as for a backup storage
// location.
func (l *Locations) snapshotConfig(ctx context.Context, vsl *salvorv1.VolumeSnapshotLocation) (map[string]string, error) {
	config := maps.Clone(vsl.Spec.Config)
	if vsl.Spec.Credential != nil && config == nil {
		config = map[string]string{}
	}
	if err := l.addCredential(ctx, config, vsl.Spec.Credential); err != nil {
		return nil, err
	}
	return config, nil
}

// snapshotLocation is the VolumeSnapshotLocation a backup spec names, ""
// for the default (validation lets through at most one name, repeated).
func snapshotLocation(spec salvorv1.BackupSpec) string {
	if len(spec.VolumeSnapshotLocations) > 0 {
		return spec.VolumeSnapshotLocations[0]
	}
	return ""
}

// vpbName makes a valid object name from a snapshot ID; the full ID is in
// the resource's status.
func vpbName(backupName, snapshotID string) string {
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

// snapshotRouter sends a snapshot's Progress and Cancel to its snapshotter
// and everything else to the BackupItemActions. A v1 snapshotter's
// snapshot is done when CreateSnapshot returned.
type snapshotRouter struct {
	actions backupPlugins
	snap    *backup.Snapshotter
}

func (s snapshotRouter) Progress(ctx context.Context, plugin, id string) (api.OperationProgress, error) {
	if !strings.HasPrefix(plugin, snapshotPlugin) {
		return s.actions.Progress(ctx, plugin, id)
	}
	if s.snap == nil {
		return api.OperationProgress{}, errors.New("no volume snapshot location to ask about the snapshot")
	}
	p, err := s.snap.VS.Progress(ctx, id)
	if errors.Is(err, host.ErrNotSupported) {
		return api.OperationProgress{Completed: true, Description: "snapshot taken (v1 snapshotter)"}, nil
	}
	return p, err
}

func (s snapshotRouter) Cancel(ctx context.Context, plugin, id string) error {
	if !strings.HasPrefix(plugin, snapshotPlugin) {
		return s.actions.Cancel(ctx, plugin, id)
	}
	if s.snap == nil {
		return nil
	}
	return s.snap.VS.Cancel(ctx, id)
}

func snapshotView(snaps []backup.VolumeSnapshot, statuses []itemoperation.Status) []operations.Operation {
	out := make([]operations.Operation, len(snaps))
	for i := range snaps {
		out[i] = operations.Operation{
			Plugin:      snapshotPlugin + snaps[i].Spec.Location,
			OperationID: snaps[i].Status.ProviderSnapshotID,
			Item:        "persistentvolume " + snaps[i].Spec.PersistentVolumeName,
			Status:      &statuses[i],
		}
	}
	return out
}

// syncSnapshots copies the tracker's view back into the snapshot records.
func syncSnapshots(snaps []backup.VolumeSnapshot, statuses []itemoperation.Status) {
	for i := range snaps {
		st := statuses[i]
		snaps[i].Status.Phase = string(st.Phase)
		snaps[i].Status.Error = st.Error
		snaps[i].Status.BytesDone, snaps[i].Status.TotalBytes = st.NCompleted, st.NTotal
		snaps[i].Status.Description = st.Description
		snaps[i].Status.Updated = st.Updated
	}
}

// takenSnapshots are the snapshots, by provider and ID, this cluster
// recorded backup b taking: each in a VolumePluginBackup written as it was
// taken. A backup synced from its location has none that count: its
// VolumePluginBackups were made from the location's files. The bucket's
// own list proves nothing — whoever can write there could name any
// snapshot the snapshotter reaches — so only these are deleted with the
// backup or, unless a restore trusts the backup's snapshots, made into
// volumes.
// It returns the backup's VolumePluginBackups too.
func takenSnapshots(ctx context.Context, c client.Client, b *salvorv1.Backup) (map[[2]string]bool, *salvorv1.VolumePluginBackupList, error) {
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

// upsertVPB creates or updates a snapshot's VolumePluginBackup. A newer
// update wins, whoever wrote it (the server or a Kubernetes-aware plugin),
// and the bytes done never go backwards.
func upsertVPB(ctx context.Context, c client.Client, ns string, b *salvorv1.Backup, s backup.VolumeSnapshot) error {
	name := vpbName(b.Name, s.Status.ProviderSnapshotID)
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

// dropSnapshots ends the snapshots of a backup that failed or was
// cancelled: nothing will refer to them, so those still being taken are
// cancelled (which removes a partial copy) and all are deleted. Each
// record's status says so, for its VolumePluginBackup.
func dropSnapshots(ctx context.Context, snap *backup.Snapshotter, snaps []backup.VolumeSnapshot, reason string, log *slog.Logger) {
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
