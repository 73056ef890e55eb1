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

// Kind is a host-side plugin interface T with how to reach a plugin of it:
// the kind it is asked for by, and a client for each version a plugin may
// be registered as (older ones behind their adapter). Get and All take one,
// so what a lookup returns is checked by the compiler.
type Kind[T Client] struct {
	kind    kind.Kind
	clients map[kind.Kind]func(c conn, name string) T
}

// The kinds the rest of Salvor calls plugins of.
var (
	BackupItemActions = Kind[BackupItemAction]{kind.BackupItemActionV2, map[kind.Kind]func(conn, string) BackupItemAction{
		kind.BackupItemAction: func(c conn, n string) BackupItemAction {
			return biaV1Adapter{biaV1Client{named{n}, pb.NewBackupItemActionClient(c)}}
		},
		kind.BackupItemActionV2: func(c conn, n string) BackupItemAction {
			return biaV2Client{named{n}, biav2.NewBackupItemActionClient(c)}
		},
	}}
	RestoreItemActions = Kind[RestoreItemAction]{kind.RestoreItemActionV2, map[kind.Kind]func(conn, string) RestoreItemAction{
		kind.RestoreItemAction: func(c conn, n string) RestoreItemAction {
			return riaV1Adapter{riaV1Client{named{n}, pb.NewRestoreItemActionClient(c)}}
		},
		kind.RestoreItemActionV2: func(c conn, n string) RestoreItemAction {
			return riaV2Client{named{n}, riav2.NewRestoreItemActionClient(c)}
		},
	}}
	DeleteItemActions = Kind[DeleteItemAction]{kind.DeleteItemAction, map[kind.Kind]func(conn, string) DeleteItemAction{
		kind.DeleteItemAction: func(c conn, n string) DeleteItemAction { return diaClient{named{n}, pb.NewDeleteItemActionClient(c)} },
	}}
	ObjectStores = Kind[ObjectStore]{kind.ObjectStore, map[kind.Kind]func(conn, string) ObjectStore{
		kind.ObjectStore: func(c conn, n string) ObjectStore { return objectStoreClient{named{n}, pb.NewObjectStoreClient(c)} },
	}}
	VolumeSnapshotters = Kind[VolumeSnapshotter]{kind.VolumeSnapshotterV2, map[kind.Kind]func(conn, string) VolumeSnapshotter{
		kind.VolumeSnapshotter: func(c conn, n string) VolumeSnapshotter {
			return vsV1Adapter{snapshotterClient[pb.VolumeSnapshotterClient]{named{n}, pb.NewVolumeSnapshotterClient(c)}}
		},
		kind.VolumeSnapshotterV2: func(c conn, n string) VolumeSnapshotter {
			return vsV2Client{snapshotterClient[vsv2.VolumeSnapshotterClient]{named{n}, vsv2.NewVolumeSnapshotterClient(c)}}
		},
	}}
)

// Client is what every plugin interface has.
type Client interface {
	Name() string
}

type initer interface {
	init(ctx context.Context, config map[string]string) error
}

// Get returns the plugin of kind k named name. ObjectStore and
// VolumeSnapshotter plugins are initialised with config first (on a process
// of their own for that config); other kinds ignore config.
func Get[T Client](ctx context.Context, m *Manager, k Kind[T], name string, config map[string]string) (T, error) {
	var zero T
	p, err := m.find(k.kind, name)
	if err != nil {
		return zero, err
	}
	client, ok := k.clients[p.Kind]
	if !ok {
		return zero, fmt.Errorf("salvor: a %s plugin cannot be called as a %s", p.Kind, k.kind)
	}
	proc := m.processFor(p, config)
	c := client(conn{proc}, name)
	if i, ok := any(c).(initer); ok {
		// The process is this plugin's with this config alone (processFor).
		if err := proc.initOnce(name, func() error { return i.init(ctx, config) }); err != nil {
			return zero, err
		}
	}
	return c, nil
}

// All returns every plugin of kind k, sorted by name. It is meant for the
// action kinds, which need no config.
func All[T Client](ctx context.Context, m *Manager, k Kind[T]) ([]T, error) {
	var out []T
	for _, n := range m.names(k.kind) {
		t, err := Get(ctx, m, k, n, nil)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}
