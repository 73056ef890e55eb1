package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/plugin/host"
	"github.com/salvor-dev/salvor/internal/snapshots"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
	"github.com/salvor-dev/salvor/pkg/plugin/api"
)

// Snapshotter returns the VolumeSnapshotter of the default (or only)
// VolumeSnapshotLocation, or nil when there is none.
func (l *Locations) Snapshotter(ctx context.Context, name string) (*snapshots.Snapshotter, error) {
	list := &salvorv1.VolumeSnapshotLocationList{}
	if err := l.Client.List(ctx, list, client.InNamespace(l.Namespace)); err != nil {
		return nil, err
	}
	var vsl *salvorv1.VolumeSnapshotLocation
	for i := range list.Items {
		v := &list.Items[i]
		if (name != "" && v.Name == name) || (name == "" && (v.Spec.Default || len(list.Items) == 1)) {
			vsl = v
		}
	}
	if vsl == nil {
		if name != "" {
			return nil, fmt.Errorf("volume snapshot location %q does not exist", name)
		}
		return nil, nil
	}
	return l.SnapshotterOf(ctx, vsl)
}

// SnapshotterOf opens the VolumeSnapshotter of a location: its plugin,
// initialised with its config.
func (l *Locations) SnapshotterOf(ctx context.Context, vsl *salvorv1.VolumeSnapshotLocation) (*snapshots.Snapshotter, error) {
	provider := vsl.Spec.Provider
	if !strings.Contains(provider, "/") {
		provider = "velero.io/" + provider
	}
	config, err := l.snapshotConfig(ctx, vsl)
	if err != nil {
		return nil, fmt.Errorf("volume snapshot location %s: %w", vsl.Name, err)
	}
	vs, err := host.Get(ctx, l.Plugins, host.VolumeSnapshotters, provider, config)
	if err != nil {
		return nil, fmt.Errorf("volume snapshot location %s: %w", vsl.Name, err)
	}
	return &snapshots.Snapshotter{Location: vsl.Name, Provider: provider, VS: vs}, nil
}

// snapshotConfig is what a VolumeSnapshotLocation's plugin is
// initialised with: its config and, when it names a credential, the file
// the server wrote it to (credentialsFile), as for a backup storage
// location.
func (l *Locations) snapshotConfig(ctx context.Context, vsl *salvorv1.VolumeSnapshotLocation) (map[string]string, error) {
	config := maps.Clone(vsl.Spec.Config)
	if vsl.Spec.Credential != nil && config == nil {
		config = map[string]string{}
	}
	if err := l.addCredential(ctx, config, vsl.Spec.Credential); err != nil {
		return nil, err
	}
	return config, nil
}

// snapshotLocation is the VolumeSnapshotLocation a backup spec names, ""
// for the default (validation lets through at most one name, repeated).
func snapshotLocation(spec salvorv1.BackupSpec) string {
	if len(spec.VolumeSnapshotLocations) > 0 {
		return spec.VolumeSnapshotLocations[0]
	}
	return ""
}

// snapshotRouter sends a snapshot's Progress and Cancel to its snapshotter
// and everything else to the BackupItemActions. A v1 snapshotter's
// snapshot is done when CreateSnapshot returned.
type snapshotRouter struct {
	actions backupPlugins
	snap    *snapshots.Snapshotter
}

func (s snapshotRouter) Progress(ctx context.Context, plugin, id string) (api.OperationProgress, error) {
	if !strings.HasPrefix(plugin, snapshots.OperationPrefix) {
		return s.actions.Progress(ctx, plugin, id)
	}
	if s.snap == nil {
		return api.OperationProgress{}, errors.New("no volume snapshot location to ask about the snapshot")
	}
	p, err := s.snap.VS.Progress(ctx, id)
	if errors.Is(err, host.ErrNotSupported) {
		return api.OperationProgress{Completed: true, Description: "snapshot taken (v1 snapshotter)"}, nil
	}
	return p, err
}

func (s snapshotRouter) Cancel(ctx context.Context, plugin, id string) error {
	if !strings.HasPrefix(plugin, snapshots.OperationPrefix) {
		return s.actions.Cancel(ctx, plugin, id)
	}
	if s.snap == nil {
		return nil
	}
	return s.snap.VS.Cancel(ctx, id)
}
