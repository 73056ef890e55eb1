package sdk

import (
	"context"
	"errors"
	"io"
	"log/slog"

	"k8s.io/apimachinery/pkg/runtime"
)

// An implementation may give any method in a context-taking form
// (ExecuteWithContext, ...) beside the plain one. Which form serves each
// method is decided once, when the factory makes the implementation: the
// result is a calls value whose methods all take a context, and a v1
// implementation is given its v2 kind's shape, so each gRPC method of either
// version has one thing to call.

// formed wraps a factory so that what it makes is put in its calls form.
func formed[T, C any](f Factory[T], form func(T) C) Factory[C] {
	return func(log *slog.Logger) (C, error) {
		impl, err := f(log)
		if err == nil && any(impl) == nil {
			err = errors.New("its factory returned no implementation")
		}
		if err != nil {
			var zero C
			return zero, err
		}
		return form(impl), nil
	}
}

// appliesTo is AppliesTo of every action kind.
type appliesTo func() (ResourceSelector, error)

func (f appliesTo) AppliesTo() (ResourceSelector, error) { return f() }

type backupCalls struct {
	appliesTo
	execute func(context.Context, runtime.Unstructured, *Backup) (runtime.Unstructured, []ResourceIdentifier, string, []ResourceIdentifier, error)
	operationCalls[Backup]
}

// operationCalls are Progress and Cancel of a v2 action whose operations
// belong to an O, a Backup or a Restore.
type operationCalls[O any] struct {
	progress func(context.Context, string, *O) (OperationProgress, error)
	cancel   func(context.Context, string, *O) error
}

func operationForms[O any](a interface {
	Progress(string, *O) (OperationProgress, error)
	Cancel(string, *O) error
}) operationCalls[O] {
	c := operationCalls[O]{
		progress: func(_ context.Context, id string, o *O) (OperationProgress, error) { return a.Progress(id, o) },
		cancel:   func(_ context.Context, id string, o *O) error { return a.Cancel(id, o) },
	}
	if f, ok := a.(interface {
		ProgressWithContext(context.Context, string, *O) (OperationProgress, error)
	}); ok {
		c.progress = f.ProgressWithContext
	}
	if f, ok := a.(interface {
		CancelWithContext(context.Context, string, *O) error
	}); ok {
		c.cancel = f.CancelWithContext
	}
	return c
}

func backupV1(a BackupItemAction) backupCalls {
	execute := func(_ context.Context, item runtime.Unstructured, b *Backup) (runtime.Unstructured, []ResourceIdentifier, error) {
		return a.Execute(item, b)
	}
	if c, ok := a.(interface {
		ExecuteWithContext(context.Context, runtime.Unstructured, *Backup) (runtime.Unstructured, []ResourceIdentifier, error)
	}); ok {
		execute = c.ExecuteWithContext
	}
	return backupCalls{appliesTo: a.AppliesTo, execute: func(ctx context.Context, item runtime.Unstructured, b *Backup) (runtime.Unstructured, []ResourceIdentifier, string, []ResourceIdentifier, error) {
		updated, additional, err := execute(ctx, item, b)
		return updated, additional, "", nil, err
	}}
}

func backupV2(a BackupItemActionV2) backupCalls {
	c := backupCalls{
		appliesTo: a.AppliesTo,
		execute: func(_ context.Context, item runtime.Unstructured, b *Backup) (runtime.Unstructured, []ResourceIdentifier, string, []ResourceIdentifier, error) {
			return a.Execute(item, b)
		},
		operationCalls: operationForms[Backup](a),
	}
	if f, ok := a.(interface {
		ExecuteWithContext(context.Context, runtime.Unstructured, *Backup) (runtime.Unstructured, []ResourceIdentifier, string, []ResourceIdentifier, error)
	}); ok {
		c.execute = f.ExecuteWithContext
	}
	return c
}

type restoreCalls struct {
	appliesTo
	execute func(context.Context, *RestoreItemActionExecuteInput) (*RestoreItemActionExecuteOutput, error)
	operationCalls[Restore]
	ready func(context.Context, []ResourceIdentifier, *Restore) (bool, error)
}

// restoreForm serves both versions' AppliesTo and Execute, which have the
// same signatures.
func restoreForm(a RestoreItemAction) restoreCalls {
	c := restoreCalls{appliesTo: a.AppliesTo, execute: func(_ context.Context, in *RestoreItemActionExecuteInput) (*RestoreItemActionExecuteOutput, error) {
		return a.Execute(in)
	}}
	if f, ok := a.(interface {
		ExecuteWithContext(context.Context, *RestoreItemActionExecuteInput) (*RestoreItemActionExecuteOutput, error)
	}); ok {
		c.execute = f.ExecuteWithContext
	}
	return c
}

// restoreV1 answers as a v1 action does: the output's v2 fields (an
// operation, waiting for additional items) are not sent, whatever the
// implementation set in them.
func restoreV1(a RestoreItemAction) restoreCalls {
	c := restoreForm(a)
	execute := c.execute
	c.execute = func(ctx context.Context, in *RestoreItemActionExecuteInput) (*RestoreItemActionExecuteOutput, error) {
		out, err := execute(ctx, in)
		if out != nil {
			v1 := *out
			v1.OperationID, v1.WaitForAdditionalItems, v1.AdditionalItemsReadyTimeout = "", false, 0
			out = &v1
		}
		return out, err
	}
	return c
}

func restoreV2(a RestoreItemActionV2) restoreCalls {
	c := restoreForm(a)
	c.operationCalls = operationForms[Restore](a)
	c.ready = func(_ context.Context, items []ResourceIdentifier, r *Restore) (bool, error) {
		return a.AreAdditionalItemsReady(items, r)
	}
	if f, ok := a.(interface {
		AreAdditionalItemsReadyWithContext(context.Context, []ResourceIdentifier, *Restore) (bool, error)
	}); ok {
		c.ready = f.AreAdditionalItemsReadyWithContext
	}
	return c
}

type deleteCalls struct {
	appliesTo
	execute func(context.Context, *DeleteItemActionExecuteInput) error
}

func deleteForm(a DeleteItemAction) deleteCalls {
	c := deleteCalls{appliesTo: a.AppliesTo, execute: func(_ context.Context, in *DeleteItemActionExecuteInput) error { return a.Execute(in) }}
	if f, ok := a.(interface {
		ExecuteWithContext(context.Context, *DeleteItemActionExecuteInput) error
	}); ok {
		c.execute = f.ExecuteWithContext
	}
	return c
}

// storeCalls keeps the methods that have no context-taking form (Init,
// CreateSignedURL) on the embedded implementation.
type storeCalls struct {
	ObjectStore
	put      func(ctx context.Context, bucket, key string, body io.Reader) error
	exists   func(ctx context.Context, bucket, key string) (bool, error)
	get      func(ctx context.Context, bucket, key string) (io.ReadCloser, error)
	prefixes func(ctx context.Context, bucket, prefix, delimiter string) ([]string, error)
	list     func(ctx context.Context, bucket, prefix string) ([]string, error)
	delete   func(ctx context.Context, bucket, key string) error
}

func storeForm(s ObjectStore) storeCalls {
	c := storeCalls{
		ObjectStore: s,
		put: func(_ context.Context, bucket, key string, body io.Reader) error {
			return s.PutObject(bucket, key, body)
		},
		exists: func(_ context.Context, bucket, key string) (bool, error) { return s.ObjectExists(bucket, key) },
		get:    func(_ context.Context, bucket, key string) (io.ReadCloser, error) { return s.GetObject(bucket, key) },
		prefixes: func(_ context.Context, bucket, prefix, delimiter string) ([]string, error) {
			return s.ListCommonPrefixes(bucket, prefix, delimiter)
		},
		list:   func(_ context.Context, bucket, prefix string) ([]string, error) { return s.ListObjects(bucket, prefix) },
		delete: func(_ context.Context, bucket, key string) error { return s.DeleteObject(bucket, key) },
	}
	if f, ok := s.(interface {
		PutObjectWithContext(context.Context, string, string, io.Reader) error
	}); ok {
		c.put = f.PutObjectWithContext
	}
	if f, ok := s.(interface {
		ObjectExistsWithContext(context.Context, string, string) (bool, error)
	}); ok {
		c.exists = f.ObjectExistsWithContext
	}
	if f, ok := s.(interface {
		GetObjectWithContext(context.Context, string, string) (io.ReadCloser, error)
	}); ok {
		c.get = f.GetObjectWithContext
	}
	if f, ok := s.(interface {
		ListCommonPrefixesWithContext(context.Context, string, string, string) ([]string, error)
	}); ok {
		c.prefixes = f.ListCommonPrefixesWithContext
	}
	if f, ok := s.(interface {
		ListObjectsWithContext(context.Context, string, string) ([]string, error)
	}); ok {
		c.list = f.ListObjectsWithContext
	}
	if f, ok := s.(interface {
		DeleteObjectWithContext(context.Context, string, string) error
	}); ok {
		c.delete = f.DeleteObjectWithContext
	}
	return c
}

// snapshotterCalls keeps Init, GetVolumeID and SetVolumeID, which have no
// context-taking form, on the embedded implementation. progress and cancel
// are nil for a v1 snapshotter, which serves no v2 methods.
type snapshotterCalls struct {
	VolumeSnapshotter
	createVolume   func(ctx context.Context, snapshotID, volumeType, volumeAZ string, iops *int64) (string, error)
	volumeInfo     func(ctx context.Context, volumeID, volumeAZ string) (string, *int64, error)
	createSnapshot func(ctx context.Context, volumeID, volumeAZ string, tags map[string]string) (string, error)
	deleteSnapshot func(ctx context.Context, snapshotID string) error
	progress       func(ctx context.Context, id string) (OperationProgress, error)
	cancel         func(ctx context.Context, id string) error
}

func snapshotterV1(s VolumeSnapshotter) snapshotterCalls {
	c := snapshotterCalls{
		VolumeSnapshotter: s,
		createVolume: func(_ context.Context, snapshotID, volumeType, volumeAZ string, iops *int64) (string, error) {
			return s.CreateVolumeFromSnapshot(snapshotID, volumeType, volumeAZ, iops)
		},
		volumeInfo: func(_ context.Context, volumeID, volumeAZ string) (string, *int64, error) {
			return s.GetVolumeInfo(volumeID, volumeAZ)
		},
		createSnapshot: func(_ context.Context, volumeID, volumeAZ string, tags map[string]string) (string, error) {
			return s.CreateSnapshot(volumeID, volumeAZ, tags)
		},
		deleteSnapshot: func(_ context.Context, snapshotID string) error { return s.DeleteSnapshot(snapshotID) },
	}
	if f, ok := s.(interface {
		CreateVolumeFromSnapshotWithContext(context.Context, string, string, string, *int64) (string, error)
	}); ok {
		c.createVolume = f.CreateVolumeFromSnapshotWithContext
	}
	if f, ok := s.(interface {
		GetVolumeInfoWithContext(context.Context, string, string) (string, *int64, error)
	}); ok {
		c.volumeInfo = f.GetVolumeInfoWithContext
	}
	if f, ok := s.(interface {
		CreateSnapshotWithContext(context.Context, string, string, map[string]string) (string, error)
	}); ok {
		c.createSnapshot = f.CreateSnapshotWithContext
	}
	if f, ok := s.(interface {
		DeleteSnapshotWithContext(context.Context, string) error
	}); ok {
		c.deleteSnapshot = f.DeleteSnapshotWithContext
	}
	return c
}

func snapshotterV2(s VolumeSnapshotterV2) snapshotterCalls {
	c := snapshotterV1(s)
	c.progress = func(_ context.Context, id string) (OperationProgress, error) { return s.Progress(id) }
	c.cancel = func(_ context.Context, id string) error { return s.Cancel(id) }
	if f, ok := s.(interface {
		ProgressWithContext(context.Context, string) (OperationProgress, error)
	}); ok {
		c.progress = f.ProgressWithContext
	}
	if f, ok := s.(interface {
		CancelWithContext(context.Context, string) error
	}); ok {
		c.cancel = f.CancelWithContext
	}
	return c
}
