package backup

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/salvor-dev/salvor/internal/csi"
	"github.com/salvor-dev/salvor/internal/persistence"
	"github.com/salvor-dev/salvor/internal/resources"
	"github.com/salvor-dev/salvor/internal/snapshots"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
	"github.com/salvor-dev/salvor/pkg/plugin/api"
)

var (
	pvResource  = schema.GroupResource{Resource: "persistentvolumes"}
	pvcResource = schema.GroupResource{Resource: "persistentvolumeclaims"}
)

// afterWrite snapshots a persistent volume, and brings in what an item
// needs: a claim's volume, a custom resource's definition, a pod's claims
// and priority class, a service account's cluster role bindings.
func (r *run) afterWrite(ctx context.Context, res resources.Resource, it *item, what string) error {
	if res.Namespaced {
		if err := r.crdOf(ctx, res, what); err != nil {
			return err
		}
	}
	gr := res.GVR.GroupResource()
	if gr != pvcResource && gr != pvResource && gr != saResource && gr != podResource {
		return nil
	}
	item, err := it.object()
	if err != nil {
		r.rec.Error(it.namespace(), fmt.Sprintf("%s: decoding: %v", what, err))
		return nil
	}
	switch gr {
	case saResource:
		return r.rbacOf(ctx, item, what)
	case podResource:
		return r.podRelated(ctx, item, what)
	case pvcResource:
		r.mu.Lock()
		r.volumeGroups.note(item)
		r.mu.Unlock()
		pv, _, _ := unstructured.NestedString(item.Object, "spec", "volumeName")
		if id := (api.ResourceIdentifier{GroupResource: pvResource, Name: pv}); pv != "" && !r.filtersOut(id) {
			return r.backupAdditional(ctx, id, what)
		}
	case pvResource:
		plan, err := csi.PlanVolume(ctx, r.e.Dynamic, item, r.backup, r.policies)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			r.rec.Error("", fmt.Sprintf("%s: not snapshotted: %v", what, err))
			return nil
		}
		switch {
		case plan.Lost:
			r.rec.Warning("", fmt.Sprintf("%s: %s", what, plan.Skip))
		case plan.Skip != "":
			// Asked for: the volume's object is kept, its data is not.
			r.log.Info("volume not snapshotted, as asked", "volume", item.GetName(), "because", plan.Skip)
		case plan.Class != "":
			// The claim's CSI action snapshots it, through the snapshot API.
		case r.snapshotter == nil && plan.Driver != "":
			r.rec.Warning("", fmt.Sprintf("%s: not snapshotted, its data is not in the backup: %s, and no volume snapshot location serves it "+
				"(label a VolumeSnapshotClass %s=true, or snapshotVolumes false to say so)", what, plan.NoClass(), salvorv1.CSISnapshotClassLabel))
		case r.snapshotter == nil:
			r.rec.Warning("", fmt.Sprintf("%s: not snapshotted, its data is not in the backup: no volume snapshot location serves it "+
				"(salvor snapshot-location create ... --default, or snapshotVolumes false to say so)", what))
		default:
			r.snapshot(ctx, item, what)
		}
	}
	return nil
}

var crdResource = schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}

// crdOf backs up the CustomResourceDefinition of a custom resource whose
// items a namespace backup holds (Velero's rule), so that restoring the
// backup into a cluster without the CRD brings it: once per resource.
// Backups of every namespace list CRDs anyway; a backup with
// includeClusterResources false, or excluding CRDs, gets none.
func (r *run) crdOf(ctx context.Context, res resources.Resource, what string) error {
	if res.GVR.Group == "" || r.scope.listsCRDs() {
		return nil
	}
	if _, looked := r.crds.LoadOrStore(res.GVR.GroupResource(), true); looked {
		return nil
	}
	crd, ok := r.resources[crdResource]
	if !ok || r.scope.excludesCluster(crd) {
		return nil
	}
	name := res.GVR.Resource + "." + res.GVR.Group
	if _, err := r.e.Dynamic.Resource(crd.GVR).Get(ctx, name, metav1.GetOptions{}); err != nil {
		switch {
		case apierrors.IsNotFound(err): // a built-in resource, or an aggregated API's: no CRD to keep
		case ctx.Err() != nil:
			return ctx.Err()
		default:
			r.rec.Warning("", fmt.Sprintf("%s: its CustomResourceDefinition %s could not be read, so it is not in the backup: %v", what, name, err))
		}
		return nil
	}
	return r.backupAdditional(ctx, api.ResourceIdentifier{GroupResource: crdResource, Name: name}, what)
}

func (r *run) snapshot(ctx context.Context, pv *unstructured.Unstructured, what string) {
	s := r.snapshotter
	if s.Err != nil {
		r.rec.Error("", fmt.Sprintf("%s: not snapshotted, its data is not in the backup: %v", what, s.Err))
		return
	}
	volumeID, err := s.VS.GetVolumeID(ctx, pv)
	if err != nil {
		r.rec.Error("", fmt.Sprintf("%s: VolumeSnapshotter %s could not tell its volume ID: %v", what, s.Provider, err))
		return
	}
	if volumeID == "" {
		r.rec.Warning("", fmt.Sprintf("%s: not snapshotted, its data is not in the backup: VolumeSnapshotter %s does not handle this kind of volume", what, s.Provider))
		return
	}
	az := pv.GetLabels()["topology.kubernetes.io/zone"]
	if az == "" {
		az = pv.GetLabels()["failure-domain.beta.kubernetes.io/zone"]
	}
	// The volume's type and IOPS are what CreateVolumeFromSnapshot needs
	// to make a volume like it on restore.
	volumeType, iops, err := s.VS.GetVolumeInfo(ctx, volumeID, az)
	if err != nil {
		r.rec.Error("", fmt.Sprintf("%s: VolumeSnapshotter %s could not describe volume %s: %v", what, s.Provider, volumeID, err))
		return
	}
	snapshotID, err := s.VS.CreateSnapshot(ctx, volumeID, az, map[string]string{
		salvorv1.SnapshotBackupTag: r.backup.Name, salvorv1.VeleroSnapshotBackupTag: r.backup.Name, salvorv1.VeleroSnapshotPVTag: pv.GetName(),
	})
	if err != nil {
		r.rec.Error("", fmt.Sprintf("%s: VolumeSnapshotter %s could not snapshot volume %s: %v", what, s.Provider, volumeID, err))
		return
	}
	if err := r.store.Journal(ctx, r.backup.Name, persistence.JournalEntry{Kind: persistence.JournalSnapshot, Location: s.Location, ID: snapshotID, Item: "persistentvolume " + pv.GetName()}); err != nil {
		r.rec.Error("", fmt.Sprintf("%s: snapshot %s of volume %s could not be journaled: %v", what, snapshotID, volumeID, err))
	}
	now := metav1.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.snapshots = append(r.snapshots, snapshots.VolumeSnapshot{
		Spec: snapshots.VolumeSnapshotSpec{BackupName: r.backup.Name, BackupUID: string(r.backup.UID), Location: s.Location, Provider: s.Provider,
			PersistentVolumeName: pv.GetName(), ProviderVolumeID: volumeID, VolumeAZ: az, VolumeType: volumeType, VolumeIOPS: iops},
		Status: snapshots.VolumeSnapshotStatus{ProviderSnapshotID: snapshotID, Phase: "New", Created: &now},
	})
	r.log.Info("volume snapshot started", "volume", pv.GetName(), "snapshot", snapshotID)
}
