package plugintest

import (
	"context"
	"fmt"
	"reflect"

	"github.com/salvor-dev/salvor/internal/plugin/host"
)

// The host's types a plugin's test needs, under names a plugin author can
// import: the host itself is Salvor's implementation (internal/), free to
// change; these names are the promise.
type (
	// Manager runs the plugin binaries Start discovered.
	Manager = host.Manager
	// Options tunes the Manager: deadlines per kind or method, the logger,
	// restart limits.
	Options = host.Options
	// CallError is the error of a failed plugin call: it names the plugin,
	// kind, method and item, and carries the plugin's stack or stderr.
	CallError = host.CallError

	BackupItemAction  = host.BackupItemAction
	BackupResult      = host.BackupResult
	RestoreItemAction = host.RestoreItemAction
	RestoreInput      = host.RestoreInput
	RestoreResult     = host.RestoreResult
	DeleteItemAction  = host.DeleteItemAction
	ObjectStore       = host.ObjectStore
	VolumeSnapshotter = host.VolumeSnapshotter
)

// The causes a CallError may have, for errors.Is.
var (
	// ErrPluginHung: a call ran past its deadline plus the grace period;
	// the plugin's process was killed (in process: its server stopped).
	ErrPluginHung = host.ErrPluginHung
	// ErrPluginCrashed: the plugin's process died during the call.
	ErrPluginCrashed = host.ErrPluginCrashed
)

// Get returns the plugin of kind T (BackupItemAction, RestoreItemAction,
// DeleteItemAction, ObjectStore or VolumeSnapshotter) named name, called
// exactly as Salvor's server calls it; config is what an ObjectStore or
// VolumeSnapshotter is initialised with.
func Get[T host.Client](ctx context.Context, m *Manager, name string, config map[string]string) (T, error) {
	for _, k := range []any{host.BackupItemActions, host.RestoreItemActions, host.DeleteItemActions, host.ObjectStores, host.VolumeSnapshotters} {
		if k, ok := k.(host.Kind[T]); ok {
			return host.Get(ctx, m, k, name, config)
		}
	}
	var zero T
	return zero, fmt.Errorf("plugintest: %v is not a plugin interface: ask for BackupItemAction, RestoreItemAction, DeleteItemAction, ObjectStore or VolumeSnapshotter", reflect.TypeFor[T]())
}
