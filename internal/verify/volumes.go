package verify

import (
	"context"

	"github.com/salvor-dev/salvor/internal/archive"
	"github.com/salvor-dev/salvor/internal/persistence"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// How a backup keeps a volume's data outside its objects.
const (
	MovedData      = "moved data"
	CSISnapshot    = "CSI snapshot"
	PluginSnapshot = "VolumeSnapshotter snapshot"
)

// Volume is a volume whose data a backup keeps outside its objects, as
// the backup records it: what checking that data needs.
type Volume struct {
	Kind string
	// Name is the volume as the backup holds it ("claim NS/NAME",
	// "persistentvolume NAME").
	Name string
	// Moved data: the claim and the DataUpload that moved it.
	Namespace, Claim, DataUpload string
	// CSI snapshot: its driver and snapshot handle.
	Driver, Handle string
	// VolumeSnapshotter snapshot: its location and ID.
	Location, SnapshotID string
}

// volumeOf is the volume an item of the tarball records, if any: a claim
// whose data a DataUpload moved, or a CSI VolumeSnapshot whose data was
// not moved.
func volumeOf(e archive.Entry) (Volume, bool) {
	obj := e.Object
	switch {
	case obj.GetKind() == "PersistentVolumeClaim" && obj.GetAnnotations()[salvorv1.DataUploadAnnotation] != "":
		return Volume{Kind: MovedData, Name: "claim " + obj.GetNamespace() + "/" + obj.GetName(),
			Namespace: obj.GetNamespace(), Claim: obj.GetName(), DataUpload: obj.GetAnnotations()[salvorv1.DataUploadAnnotation]}, true
	case obj.GetKind() == "VolumeSnapshot" && obj.GetAnnotations()[salvorv1.DataUploadAnnotation] != "":
		// Its data was moved (the claim says where): the storage-side
		// snapshot is released once the data is in the location.
		return Volume{}, false
	case obj.GetKind() == "VolumeSnapshot" && obj.GetAnnotations()[salvorv1.CSISnapshotHandleAnnotation] != "":
		// The handle and driver a restore makes its content from (Velero's
		// annotations, on Velero's backups too). A VolumeSnapshot without
		// them is an item like others, not a snapshot the backup took.
		a := obj.GetAnnotations()
		return Volume{Kind: CSISnapshot, Name: "volumesnapshot " + obj.GetNamespace() + "/" + obj.GetName(),
			Handle: a[salvorv1.CSISnapshotHandleAnnotation], Driver: a[salvorv1.CSIDriverAnnotation]}, true
	}
	return Volume{}, false
}

// pluginSnapshot is what checking reads of a record of the backup's
// volume snapshots file (Velero's shape).
type pluginSnapshot struct {
	Spec struct {
		PersistentVolumeName string `json:"persistentVolumeName"`
		Location             string `json:"location"`
	} `json:"spec"`
	Status struct {
		ProviderSnapshotID string `json:"providerSnapshotID"`
	} `json:"status"`
}

// pluginSnapshots lists the VolumeSnapshotter snapshots a backup records.
func pluginSnapshots(ctx context.Context, store *persistence.BackupStore, name string) ([]Volume, error) {
	var records []pluginSnapshot
	ok, err := store.GetVolumeSnapshots(ctx, name, &records)
	if err != nil || !ok {
		return nil, err
	}
	out := make([]Volume, 0, len(records))
	for _, s := range records {
		out = append(out, Volume{Kind: PluginSnapshot, Name: "persistentvolume " + s.Spec.PersistentVolumeName,
			Location: s.Spec.Location, SnapshotID: s.Status.ProviderSnapshotID})
	}
	return out, nil
}

// Volume records what checking a volume's data found; a missing one
// fails the verification.
func (r *Report) Volume(v Volume, result, detail string) {
	r.VolumeResults = append(r.VolumeResults, salvorv1.VerifiedVolume{Name: v.Name, Kind: v.Kind, Result: result, Detail: detail})
	if result == salvorv1.ObjectMissing {
		r.fail("%s (%s): its data is missing%s", v.Name, v.Kind, prefixed(detail))
	}
}
