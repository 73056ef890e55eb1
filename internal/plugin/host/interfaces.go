package host

import (
	"context"
	"io"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/salvor-dev/salvor/pkg/plugin/api"
)

// The interfaces the rest of Salvor calls plugins through: context first,
// newest version only.

// BackupItemAction is a BackupItemAction v2 (or a v1 behind an adapter).
type BackupItemAction interface {
	Name() string
	AppliesTo(ctx context.Context) (api.ResourceSelector, error)
	Execute(ctx context.Context, item *unstructured.Unstructured, backup *api.Backup) (BackupResult, error)
	// ExecuteJSON is Execute for a caller that holds the item's JSON, as
	// the wire carries it; what names the item in errors. The item the
	// action returned comes back as JSON (empty when it returned none),
	// the result's Item is nil. A backup sends each item to its actions
	// this way: decoding and encoding it around every call cost more than
	// the call.
	ExecuteJSON(ctx context.Context, item []byte, what string, backup *api.Backup) (BackupResult, []byte, error)
	Progress(ctx context.Context, operationID string, backup *api.Backup) (api.OperationProgress, error)
	Cancel(ctx context.Context, operationID string, backup *api.Backup) error
}

// BackupResult is what a BackupItemAction's Execute returned.
type BackupResult struct {
	Item               *unstructured.Unstructured
	AdditionalItems    []api.ResourceIdentifier
	OperationID        string
	PostOperationItems []api.ResourceIdentifier
}

// RestoreInput is what a RestoreItemAction's Execute is given.
type RestoreInput struct {
	Item           *unstructured.Unstructured
	ItemFromBackup *unstructured.Unstructured
	Restore        *api.Restore
}

// RestoreResult is what a RestoreItemAction's Execute returned.
type RestoreResult struct {
	Item                        *unstructured.Unstructured
	AdditionalItems             []api.ResourceIdentifier
	SkipRestore                 bool
	OperationID                 string
	WaitForAdditionalItems      bool
	AdditionalItemsReadyTimeout time.Duration
}

// RestoreItemAction is a RestoreItemAction v2 (or a v1 behind an adapter).
type RestoreItemAction interface {
	Name() string
	AppliesTo(ctx context.Context) (api.ResourceSelector, error)
	Execute(ctx context.Context, in RestoreInput) (RestoreResult, error)
	Progress(ctx context.Context, operationID string, restore *api.Restore) (api.OperationProgress, error)
	Cancel(ctx context.Context, operationID string, restore *api.Restore) error
	AreAdditionalItemsReady(ctx context.Context, items []api.ResourceIdentifier, restore *api.Restore) (bool, error)
}

// DeleteItemAction runs for items of a backup being deleted.
type DeleteItemAction interface {
	Name() string
	AppliesTo(ctx context.Context) (api.ResourceSelector, error)
	Execute(ctx context.Context, item *unstructured.Unstructured, backup *api.Backup) error
}

// ObjectStore is an object store plugin, already initialised with its config.
type ObjectStore interface {
	Name() string
	PutObject(ctx context.Context, bucket, key string, body io.Reader) error
	ObjectExists(ctx context.Context, bucket, key string) (bool, error)
	// GetObject streams an object; the stream's deadline runs until Close.
	GetObject(ctx context.Context, bucket, key string) (io.ReadCloser, error)
	ListCommonPrefixes(ctx context.Context, bucket, prefix, delimiter string) ([]string, error)
	ListObjects(ctx context.Context, bucket, prefix string) ([]string, error)
	DeleteObject(ctx context.Context, bucket, key string) error
	CreateSignedURL(ctx context.Context, bucket, key string, ttl time.Duration) (string, error)
}

// VolumeSnapshotter is a VolumeSnapshotter v2 (or a v1 behind an adapter),
// already initialised with its config.
type VolumeSnapshotter interface {
	Name() string
	CreateVolumeFromSnapshot(ctx context.Context, snapshotID, volumeType, volumeAZ string, iops *int64) (string, error)
	GetVolumeInfo(ctx context.Context, volumeID, volumeAZ string) (string, *int64, error)
	CreateSnapshot(ctx context.Context, volumeID, volumeAZ string, tags map[string]string) (string, error)
	DeleteSnapshot(ctx context.Context, snapshotID string) error
	GetVolumeID(ctx context.Context, pv *unstructured.Unstructured) (string, error)
	SetVolumeID(ctx context.Context, pv *unstructured.Unstructured, volumeID string) (*unstructured.Unstructured, error)
	Progress(ctx context.Context, operationID string) (api.OperationProgress, error)
	Cancel(ctx context.Context, operationID string) error
}
