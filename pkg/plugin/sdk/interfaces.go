package sdk

import (
	"context"
	"io"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
)

// The interfaces below are the ones of Velero's plugin designs, so plugin
// code written for Velero ports by changing imports. Each method may also be
// implemented in a context-taking form (see the ...WithContext interfaces);
// the server calls that form when it exists, passing a context that carries
// the host's deadline and is cancelled when the host gives up on the call.

// BackupItemAction (v1) runs for each item being backed up.
type BackupItemAction interface {
	// AppliesTo returns which items Execute is called for.
	AppliesTo() (ResourceSelector, error)
	// Execute may change the item and name additional items to back up.
	Execute(item runtime.Unstructured, backup *Backup) (runtime.Unstructured, []ResourceIdentifier, error)
}

// BackupItemActionV2 may start a long-running operation from Execute.
type BackupItemActionV2 interface {
	// Name is answered by the host with the registered name; it is never sent.
	Name() string
	AppliesTo() (ResourceSelector, error)
	// Execute returns the updated item, additional items, an operation ID
	// (empty when nothing runs on) and the items to back up again once the
	// operation has ended. Items to back up again are re-read, as Velero's
	// are, to update copies the backup already holds: an item the action
	// makes (a snapshot, say) belongs in the additional items too, so it
	// comes with the item, the CRD its resource needs and its line in the
	// resource list, whether or not the backup's listing comes across it.
	Execute(item runtime.Unstructured, backup *Backup) (runtime.Unstructured, []ResourceIdentifier, string, []ResourceIdentifier, error)
	// Progress reports on an operation Execute started. It must work from the
	// operation ID alone: the plugin's process may have been restarted since.
	Progress(operationID string, backup *Backup) (OperationProgress, error)
	// Cancel stops an operation.
	Cancel(operationID string, backup *Backup) error
}

// RestoreItemAction (v1) runs for each item being restored.
type RestoreItemAction interface {
	AppliesTo() (ResourceSelector, error)
	Execute(input *RestoreItemActionExecuteInput) (*RestoreItemActionExecuteOutput, error)
}

// RestoreItemActionV2 may start long-running operations and ask the host to
// wait until its additional items are ready.
type RestoreItemActionV2 interface {
	Name() string
	AppliesTo() (ResourceSelector, error)
	Execute(input *RestoreItemActionExecuteInput) (*RestoreItemActionExecuteOutput, error)
	Progress(operationID string, restore *Restore) (OperationProgress, error)
	Cancel(operationID string, restore *Restore) error
	AreAdditionalItemsReady(additionalItems []ResourceIdentifier, restore *Restore) (bool, error)
}

// DeleteItemAction runs for each item of a backup being deleted.
type DeleteItemAction interface {
	AppliesTo() (ResourceSelector, error)
	Execute(input *DeleteItemActionExecuteInput) error
}

// ObjectStore stores a location's files.
type ObjectStore interface {
	// Init is called with the location's config before any other method, and
	// again after the plugin's process was restarted.
	Init(config map[string]string) error
	PutObject(bucket, key string, body io.Reader) error
	ObjectExists(bucket, key string) (bool, error)
	GetObject(bucket, key string) (io.ReadCloser, error)
	// ListCommonPrefixes lists the prefixes under prefix up to the next delimiter.
	ListCommonPrefixes(bucket, prefix, delimiter string) ([]string, error)
	ListObjects(bucket, prefix string) ([]string, error)
	DeleteObject(bucket, key string) error
	CreateSignedURL(bucket, key string, ttl time.Duration) (string, error)
}

// VolumeSnapshotter (v1) snapshots volumes and creates volumes from snapshots.
type VolumeSnapshotter interface {
	Init(config map[string]string) error
	// CreateVolumeFromSnapshot returns the new volume's ID; iops is nil when unset.
	CreateVolumeFromSnapshot(snapshotID, volumeType, volumeAZ string, iops *int64) (volumeID string, err error)
	GetVolumeInfo(volumeID, volumeAZ string) (string, *int64, error)
	CreateSnapshot(volumeID, volumeAZ string, tags map[string]string) (snapshotID string, err error)
	DeleteSnapshot(snapshotID string) error
	GetVolumeID(pv runtime.Unstructured) (string, error)
	SetVolumeID(pv runtime.Unstructured, volumeID string) (runtime.Unstructured, error)
}

// VolumeSnapshotterV2 reports on snapshots (and volume creations) that run
// on after CreateSnapshot (CreateVolumeFromSnapshot) returned. The snapshot
// ID is the operation ID of a snapshot; the new volume ID is the operation ID
// of a volume creation.
type VolumeSnapshotterV2 interface {
	Name() string
	VolumeSnapshotter
	// Progress must work from the ID alone: the process may have been restarted.
	Progress(operationID string) (OperationProgress, error)
	Cancel(operationID string) error
}

// BackupItemActionWithContext lists the context-taking forms a v1
// BackupItemAction may implement.
type BackupItemActionWithContext interface {
	ExecuteWithContext(ctx context.Context, item runtime.Unstructured, backup *Backup) (runtime.Unstructured, []ResourceIdentifier, error)
}

// BackupItemActionV2WithContext lists the context-taking forms a
// BackupItemActionV2 may implement, each on its own.
type BackupItemActionV2WithContext interface {
	ExecuteWithContext(ctx context.Context, item runtime.Unstructured, backup *Backup) (runtime.Unstructured, []ResourceIdentifier, string, []ResourceIdentifier, error)
	ProgressWithContext(ctx context.Context, operationID string, backup *Backup) (OperationProgress, error)
	CancelWithContext(ctx context.Context, operationID string, backup *Backup) error
}

// RestoreItemActionWithContext lists the context-taking forms of a v1 RestoreItemAction.
type RestoreItemActionWithContext interface {
	ExecuteWithContext(ctx context.Context, input *RestoreItemActionExecuteInput) (*RestoreItemActionExecuteOutput, error)
}

// RestoreItemActionV2WithContext lists the context-taking forms of a RestoreItemActionV2.
type RestoreItemActionV2WithContext interface {
	ExecuteWithContext(ctx context.Context, input *RestoreItemActionExecuteInput) (*RestoreItemActionExecuteOutput, error)
	ProgressWithContext(ctx context.Context, operationID string, restore *Restore) (OperationProgress, error)
	CancelWithContext(ctx context.Context, operationID string, restore *Restore) error
	AreAdditionalItemsReadyWithContext(ctx context.Context, additionalItems []ResourceIdentifier, restore *Restore) (bool, error)
}

// DeleteItemActionWithContext lists the context-taking forms of a DeleteItemAction.
type DeleteItemActionWithContext interface {
	ExecuteWithContext(ctx context.Context, input *DeleteItemActionExecuteInput) error
}

// ObjectStoreWithContext lists the context-taking forms of an ObjectStore.
type ObjectStoreWithContext interface {
	PutObjectWithContext(ctx context.Context, bucket, key string, body io.Reader) error
	ObjectExistsWithContext(ctx context.Context, bucket, key string) (bool, error)
	GetObjectWithContext(ctx context.Context, bucket, key string) (io.ReadCloser, error)
	ListCommonPrefixesWithContext(ctx context.Context, bucket, prefix, delimiter string) ([]string, error)
	ListObjectsWithContext(ctx context.Context, bucket, prefix string) ([]string, error)
	DeleteObjectWithContext(ctx context.Context, bucket, key string) error
}

// VolumeSnapshotterWithContext lists the context-taking forms of a VolumeSnapshotter.
type VolumeSnapshotterWithContext interface {
	CreateVolumeFromSnapshotWithContext(ctx context.Context, snapshotID, volumeType, volumeAZ string, iops *int64) (string, error)
	GetVolumeInfoWithContext(ctx context.Context, volumeID, volumeAZ string) (string, *int64, error)
	CreateSnapshotWithContext(ctx context.Context, volumeID, volumeAZ string, tags map[string]string) (string, error)
	DeleteSnapshotWithContext(ctx context.Context, snapshotID string) error
}

// VolumeSnapshotterV2WithContext adds the context-taking forms of the v2 methods.
type VolumeSnapshotterV2WithContext interface {
	VolumeSnapshotterWithContext
	ProgressWithContext(ctx context.Context, operationID string) (OperationProgress, error)
	CancelWithContext(ctx context.Context, operationID string) error
}
