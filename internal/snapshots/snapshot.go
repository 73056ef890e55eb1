package snapshots

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/salvor-dev/salvor/internal/plugin/host"
)

// Snapshotter is the VolumeSnapshotter a backup snapshots volumes with.
type Snapshotter struct {
	// Location is the VolumeSnapshotLocation's name; Provider its plugin.
	Location, Provider string
	VS                 host.VolumeSnapshotter
	// Err is why the location's plugin could not be opened (VS is nil):
	// each volume it would snapshot is an error of the backup naming the
	// volume, and a backup with none to snapshot is not failed by it.
	Err error
}

// VolumeSnapshot is one record of a backup's volume snapshots file
// (<name>-volumesnapshots.json.gz), in Velero's JSON shape.
type VolumeSnapshot struct {
	Spec   VolumeSnapshotSpec   `json:"spec"`
	Status VolumeSnapshotStatus `json:"status"`
}

// VolumeSnapshotSpec says which volume was snapshotted where.
type VolumeSnapshotSpec struct {
	BackupName           string `json:"backupName"`
	BackupUID            string `json:"backupUID"`
	Location             string `json:"location"`
	Provider             string `json:"provider,omitempty"`
	PersistentVolumeName string `json:"persistentVolumeName"`
	ProviderVolumeID     string `json:"providerVolumeID"`
	VolumeType           string `json:"volumeType,omitempty"`
	VolumeAZ             string `json:"volumeAZ,omitempty"`
	VolumeIOPS           *int64 `json:"volumeIOPS,omitempty"`
}

// VolumeSnapshotStatus is the snapshot's ID and phase.
type VolumeSnapshotStatus struct {
	ProviderSnapshotID string `json:"providerSnapshotID,omitempty"`
	// Phase is New, InProgress, Completed or Failed.
	Phase       string       `json:"phase,omitempty"`
	Error       string       `json:"error,omitempty"`
	TotalBytes  int64        `json:"totalBytes,omitempty"`
	BytesDone   int64        `json:"bytesDone,omitempty"`
	Description string       `json:"description,omitempty"`
	Created     *metav1.Time `json:"created,omitempty"`
	Updated     *metav1.Time `json:"updated,omitempty"`
}
