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
// has nothing to stop, and additional items are ready at once. What v1 has
// is called through the v2 client on the v1 service (see conn.service).

type biaV1Adapter struct{ BackupItemAction }

func (biaV1Adapter) Progress(context.Context, string, *api.Backup) (api.OperationProgress, error) {
	return api.OperationProgress{}, ErrNotSupported
}
func (biaV1Adapter) Cancel(context.Context, string, *api.Backup) error { return nil }

type riaV1Adapter struct{ RestoreItemAction }

func (riaV1Adapter) Progress(context.Context, string, *api.Restore) (api.OperationProgress, error) {
	return api.OperationProgress{}, ErrNotSupported
}
func (riaV1Adapter) Cancel(context.Context, string, *api.Restore) error { return nil }
func (riaV1Adapter) AreAdditionalItemsReady(context.Context, []api.ResourceIdentifier, *api.Restore) (bool, error) {
	return true, nil
}

type vsV1Adapter struct{ VolumeSnapshotter }

func (vsV1Adapter) Progress(context.Context, string) (api.OperationProgress, error) {
	return api.OperationProgress{}, ErrNotSupported
}
func (vsV1Adapter) Cancel(context.Context, string) error { return nil }

// Kind is a host-side plugin interface T with how to reach a plugin of it:
// the kind (its newest version) it is asked for by, its client, and for a
// kind with an older version, the adapter a plugin registered as that
// version is wrapped in. Get and All take one, so what a lookup returns is
// checked by the compiler.
type Kind[T Client] struct {
	kind   kind.Kind
	client func(c conn, name string) T
	older  func(T) T
}

// The kinds the rest of Salvor calls plugins of.
var (
	BackupItemActions = Kind[BackupItemAction]{kind.BackupItemActionV2,
		func(c conn, n string) BackupItemAction {
			return biaClient{named{n}, biav2.NewBackupItemActionClient(c)}
		},
		func(a BackupItemAction) BackupItemAction { return biaV1Adapter{a} }}
	RestoreItemActions = Kind[RestoreItemAction]{kind.RestoreItemActionV2,
		func(c conn, n string) RestoreItemAction {
			return riaClient{named{n}, riav2.NewRestoreItemActionClient(c)}
		},
		func(a RestoreItemAction) RestoreItemAction { return riaV1Adapter{a} }}
	DeleteItemActions = Kind[DeleteItemAction]{kind.DeleteItemAction,
		func(c conn, n string) DeleteItemAction { return diaClient{named{n}, pb.NewDeleteItemActionClient(c)} }, nil}
	ObjectStores = Kind[ObjectStore]{kind.ObjectStore,
		func(c conn, n string) ObjectStore { return objectStoreClient{named{n}, pb.NewObjectStoreClient(c)} }, nil}
	VolumeSnapshotters = Kind[VolumeSnapshotter]{kind.VolumeSnapshotterV2,
		func(c conn, n string) VolumeSnapshotter {
			return snapshotterClient{named{n}, vsv2.NewVolumeSnapshotterClient(c)}
		},
		func(s VolumeSnapshotter) VolumeSnapshotter { return vsV1Adapter{s} }}
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
	proc := m.processFor(p, config)
	cn := conn{p: proc}
	if p.Kind != k.kind {
		d, _ := kind.Lookup(p.Kind)
		if d.OfferedAs != k.kind || k.older == nil {
			return zero, fmt.Errorf("salvor: a %s plugin cannot be called as a %s", p.Kind, k.kind)
		}
		cn.service = d.Service
	}
	c := k.client(cn, name)
	if i, ok := any(c).(initer); ok {
		// The process is this plugin's with this config alone (processFor).
		if err := proc.initOnce(name, func() error { return i.init(ctx, config) }); err != nil {
			return zero, err
		}
	}
	if cn.service != "" {
		c = k.older(c)
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
