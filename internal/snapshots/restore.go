package snapshots

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/plugin/host"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// Restorer recreates volumes with CreateVolumeFromSnapshot and waits
// while its Copies' reconciler follows each copy through Progress with the
// new volume's ID as the operation ID (a Salvor extension) and shows it in
// a VolumePluginRestore.
//
// Each snapshot is restored through its own location's snapshotter (a
// Velero backup may hold snapshots of several), found when a volume of it
// is first restored: a location that is missing fails only its volumes,
// and a restore that restores no volume needs none.
type Restorer struct {
	c       client.Client
	restore *salvorv1.Restore
	backup  *salvorv1.Backup
	snaps   map[string]VolumeSnapshot
	open    func(ctx context.Context, location string) (*Snapshotter, error)
	timeout time.Duration
	copies  *Copies

	// taken are the snapshots this cluster recorded the backup taking
	// (Taken): the only ones made into volumes unless the restore trusts
	// the backup's snapshots.
	taken map[[2]string]bool
	// authenticated: the backup's signed manifest proves a holder of the
	// location's key wrote it, snapshot IDs and all.
	authenticated bool

	mu          sync.Mutex
	snapshotter map[string]*Snapshotter
}

// NewRestorer is the Restorer of restore rs from backup b, whose snapshots
// are snaps: each made into a volume through the snapshotter open returns
// for its location (nil when the location is the default and there is
// none), within timeout, each copy followed by copies' CopyReconciler.
// taken and authenticated are what make a snapshot the bucket names
// trusted (see Taken).
func NewRestorer(c client.Client, rs *salvorv1.Restore, b *salvorv1.Backup, snaps []VolumeSnapshot, taken map[[2]string]bool, authenticated bool,
	open func(ctx context.Context, location string) (*Snapshotter, error), timeout time.Duration, copies *Copies) *Restorer {
	byPV := map[string]VolumeSnapshot{}
	for _, s := range snaps {
		byPV[s.Spec.PersistentVolumeName] = s
	}
	return &Restorer{c: c, restore: rs, backup: b, snaps: byPV, open: open, timeout: timeout, copies: copies, taken: taken, authenticated: authenticated,
		snapshotter: map[string]*Snapshotter{}}
}

// snapshotterOf returns the snapshotter of a snapshot's location.
func (v *Restorer) snapshotterOf(ctx context.Context, s VolumeSnapshot) (*Snapshotter, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if snap := v.snapshotter[s.Spec.Location]; snap != nil {
		return snap, nil
	}
	snap, err := v.open(ctx, s.Spec.Location)
	if err == nil && snap == nil {
		err = errors.New("the backup names no volume snapshot location for it and the cluster has no default one")
	}
	if err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", s.Status.ProviderSnapshotID, err)
	}
	v.snapshotter[s.Spec.Location] = snap
	return snap, nil
}

// RestoreVolume returns the PV to create, pointing at a volume made from
// pv's snapshot, or ok false when the backup holds no completed snapshot
// of pv.
func (v *Restorer) RestoreVolume(ctx context.Context, pv *unstructured.Unstructured) (*unstructured.Unstructured, bool, error) {
	s, ok := v.snaps[pv.GetName()]
	if !ok || s.Status.Phase != "Completed" {
		return nil, false, nil
	}
	if !v.restore.Spec.TrustBackupSnapshots && !v.authenticated && !v.taken[[2]string{s.Spec.Provider, s.Status.ProviderSnapshotID}] {
		why := "this cluster holds no record of backup " + v.backup.Name + " taking it"
		if from := v.backup.Annotations[salvorv1.SyncedAnnotation]; from != "" {
			why = "backup " + v.backup.Name + " was synced from location " + from + ", so only the location's files name it"
		}
		why += ", the backup is not authenticated"
		return nil, false, fmt.Errorf("snapshot %s (%s) not made into a volume: %s, and whoever can write to the bucket can name any snapshot there; "+
			"restore with --trust-backup-snapshots (spec.trustBackupSnapshots) if only you can write to it", s.Status.ProviderSnapshotID, s.Spec.Provider, why)
	}
	snap, err := v.snapshotterOf(ctx, s)
	if err != nil {
		return nil, false, err
	}
	// The VolumePluginRestore is named for the restore and the volume, and
	// records the new volume's ID as soon as there is one: a restore run
	// again after the server died picks up the copy it started (the
	// snapshotter resumes it) instead of starting a second one.
	sum := sha256.Sum256([]byte(v.restore.Name + "/" + pv.GetName()))
	vpr := &salvorv1.VolumePluginRestore{
		ObjectMeta: metav1.ObjectMeta{Name: salvorv1.SuffixedName(v.restore.Name, "-"+hex.EncodeToString(sum[:4]), 253), Namespace: v.restore.Namespace,
			OwnerReferences: salvorv1.OwnedByRestore(v.restore),
			Labels:          map[string]string{salvorv1.RestoreNameLabel: salvorv1.LabelValue(v.restore.Name)}},
		Spec: salvorv1.VolumePluginRestoreSpec{SnapshotID: s.Status.ProviderSnapshotID, Backup: v.backup.Name, Plugin: snap.Provider},
	}
	err = v.c.Create(ctx, vpr)
	if apierrors.IsAlreadyExists(err) {
		err = v.c.Get(ctx, client.ObjectKeyFromObject(vpr), vpr)
	}
	if err != nil {
		return nil, false, fmt.Errorf("creating the VolumePluginRestore: %w", err)
	}
	end := func(phase, message string) { endCopy(ctx, v.c, vpr, phase, message) }
	volumeID := vpr.Status.VolumeID
	if volumeID != "" && vpr.Status.Phase == "Completed" {
		updated, err := snap.VS.SetVolumeID(ctx, pv, volumeID)
		if err != nil {
			return nil, false, fmt.Errorf("SetVolumeID %s: %w", volumeID, err)
		}
		return updated, true, nil
	}
	if volumeID != "" {
		if _, err := snap.VS.Progress(ctx, volumeID); err != nil && !errors.Is(err, host.ErrNotSupported) {
			// The copy cannot be followed: start a new one.
			volumeID = ""
		}
	}
	if volumeID == "" {
		id, err := snap.VS.CreateVolumeFromSnapshot(ctx, s.Status.ProviderSnapshotID, s.Spec.VolumeType, s.Spec.VolumeAZ, s.Spec.VolumeIOPS)
		if err != nil {
			err = fmt.Errorf("CreateVolumeFromSnapshot of snapshot %s: %w", s.Status.ProviderSnapshotID, err)
			end("Failed", err.Error())
			return nil, false, err
		}
		now := metav1.Now()
		volumeID = id
		vpr.Status = salvorv1.VolumePluginRestoreStatus{VolumePluginStatus: salvorv1.VolumePluginStatus{Phase: "InProgress", StartTimestamp: &now, Updated: &now}, VolumeID: volumeID}
		if err := v.c.Status().Update(ctx, vpr); err != nil {
			return nil, false, fmt.Errorf("recording volume %s in the VolumePluginRestore: %w", volumeID, err)
		}
	}
	// The copy's progress is the CopyReconciler's to follow; the restore
	// waits for its answer.
	key := client.ObjectKeyFromObject(vpr)
	f := &copyFollow{vs: snap.VS, volumeID: volumeID, snapshotID: s.Status.ProviderSnapshotID, timeout: v.timeout, deadline: time.Now().Add(v.timeout)}
	done, err := v.copies.follow(ctx, key, f)
	if err == nil {
		select {
		case err = <-done:
			if err != nil {
				return nil, false, err
			}
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	if err != nil {
		v.copies.drop(key, f)
		select {
		case <-done:
			// The reconciler recorded how the copy ended as the restore
			// stopped: that record stands.
			return nil, false, err
		default:
		}
		_ = snap.VS.Cancel(context.WithoutCancel(ctx), volumeID)
		end("Canceled", fmt.Sprintf("the restore stopped (%v); the copy was cancelled", context.Cause(ctx)))
		return nil, false, err
	}
	updated, err := snap.VS.SetVolumeID(ctx, pv, volumeID)
	if err != nil {
		return nil, false, fmt.Errorf("SetVolumeID %s: %w", volumeID, err)
	}
	return updated, true, nil
}
