package host

import (
	"context"
	"fmt"

	"github.com/salvor-dev/salvor/pkg/plugin/api"
	"github.com/salvor-dev/salvor/pkg/plugin/kind"
	biav2 "github.com/salvor-dev/salvor/pkg/plugin/proto/backupitemaction/v2"
	pb "github.com/salvor-dev/salvor/pkg/plugin/proto/generated"
	riav2 "github.com/salvor-dev/salvor/pkg/plugin/proto/restoreitemaction/v2"
	vsv2 "github.com/salvor-dev/salvor/pkg/plugin/proto/volumesnapshotter/v2"
)

// The v1 → v2 adapters, as the seeds' Compatibility sections describe them:
// no operation is ever started, so Progress has nothing to report, Cancel
// has nothing to stop, and additional items are ready at once.

type biaV1Adapter struct{ biaV1Client }

func (biaV1Adapter) Progress(context.Context, string, *api.Backup) (api.OperationProgress, error) {
	return api.OperationProgress{}, ErrNotSupported
}
func (biaV1Adapter) Cancel(context.Context, string, *api.Backup) error { return nil }

type riaV1Adapter struct{ riaV1Client }

func (riaV1Adapter) Progress(context.Context, string, *api.Restore) (api.OperationProgress, error) {
	return api.OperationProgress{}, ErrNotSupported
}
func (riaV1Adapter) Cancel(context.Context, string, *api.Restore) error { return nil }
func (riaV1Adapter) AreAdditionalItemsReady(context.Context, []api.ResourceIdentifier, *api.Restore) (bool, error) {
	return true, nil
}

type vsV1Adapter struct {
	snapshotterClient[pb.VolumeSnapshotterClient]
}

func (vsV1Adapter) Progress(context.Context, string) (api.OperationProgress, error) {
	return api.OperationProgress{}, ErrNotSupported
}
func (vsV1Adapter) Cancel(context.Context, string) error { return nil }

// clientOf builds the host-side client of a plugin registered as kind k:
// one row per kind, older versions wrapped in their adapter.
var clientOf = map[kind.Kind]func(c conn, name string) any{
	kind.BackupItemAction: func(c conn, n string) any {
		return biaV1Adapter{biaV1Client{named{n}, pb.NewBackupItemActionClient(c)}}
	},
	kind.BackupItemActionV2: func(c conn, n string) any { return biaV2Client{named{n}, biav2.NewBackupItemActionClient(c)} },
	kind.RestoreItemAction: func(c conn, n string) any {
		return riaV1Adapter{riaV1Client{named{n}, pb.NewRestoreItemActionClient(c)}}
	},
	kind.RestoreItemActionV2: func(c conn, n string) any { return riaV2Client{named{n}, riav2.NewRestoreItemActionClient(c)} },
	kind.DeleteItemAction:    func(c conn, n string) any { return diaClient{named{n}, pb.NewDeleteItemActionClient(c)} },
	kind.ObjectStore:         func(c conn, n string) any { return objectStoreClient{named{n}, pb.NewObjectStoreClient(c)} },
	kind.VolumeSnapshotter: func(c conn, n string) any {
		return vsV1Adapter{snapshotterClient[pb.VolumeSnapshotterClient]{named{n}, pb.NewVolumeSnapshotterClient(c)}}
	},
	kind.VolumeSnapshotterV2: func(c conn, n string) any {
		return vsV2Client{snapshotterClient[vsv2.VolumeSnapshotterClient]{named{n}, vsv2.NewVolumeSnapshotterClient(c)}}
	},
}

var (
	_ BackupItemAction  = biaV1Adapter{}
	_ BackupItemAction  = biaV2Client{}
	_ RestoreItemAction = riaV1Adapter{}
	_ RestoreItemAction = riaV2Client{}
	_ DeleteItemAction  = diaClient{}
	_ ObjectStore       = objectStoreClient{}
	_ VolumeSnapshotter = vsV1Adapter{}
	_ VolumeSnapshotter = vsV2Client{}
)

// Client is what Get and All hand out: one of BackupItemAction,
// RestoreItemAction, DeleteItemAction, ObjectStore or VolumeSnapshotter.
// (Go cannot list interfaces with methods in a constraint, so the check that
// T is one of them happens in kindOf.)
type Client interface {
	Name() string
}

// kindOf is the kind a host-side interface is asked for by.
func kindOf[T Client]() kind.Kind {
	switch any((*T)(nil)).(type) {
	case *BackupItemAction:
		return kind.BackupItemActionV2
	case *RestoreItemAction:
		return kind.RestoreItemActionV2
	case *DeleteItemAction:
		return kind.DeleteItemAction
	case *ObjectStore:
		return kind.ObjectStore
	case *VolumeSnapshotter:
		return kind.VolumeSnapshotterV2
	default:
		return ""
	}
}

type initer interface {
	init(ctx context.Context, config map[string]string) error
}

// Get returns the plugin named name as T. ObjectStore and VolumeSnapshotter
// plugins are initialised with config first (on a process of their own for
// that config); other kinds ignore config.
func Get[T Client](ctx context.Context, m *Manager, name string, config map[string]string) (T, error) {
	var zero T
	k := kindOf[T]()
	if k == "" {
		return zero, fmt.Errorf("salvor: %T is not a plugin client interface", zero)
	}
	p, err := m.find(k, name)
	if err != nil {
		return zero, err
	}
	proc := m.processFor(p, config)
	c := clientOf[p.Kind](conn{proc}, name)
	if i, ok := c.(initer); ok {
		// The process is this plugin's with this config alone (processFor).
		if err := proc.initOnce(name, func() error { return i.init(ctx, config) }); err != nil {
			return zero, err
		}
	}
	t, ok := c.(T)
	if !ok {
		return zero, fmt.Errorf("salvor: %s client for %q does not implement the %s interface", p.Kind, name, kindOf[T]())
	}
	return t, nil
}

// All returns every plugin available as T, sorted by name. It is meant for
// the action kinds, which need no config.
func All[T Client](ctx context.Context, m *Manager) ([]T, error) {
	var out []T
	for _, n := range m.names(kindOf[T]()) {
		t, err := Get[T](ctx, m, n, nil)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}
