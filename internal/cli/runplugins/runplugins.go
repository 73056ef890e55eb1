package runplugins

import (
	"github.com/spf13/cobra"

	"github.com/salvor-dev/salvor/internal/csiplugin"
	"github.com/salvor-dev/salvor/internal/podvolumeplugin"
	"github.com/salvor-dev/salvor/pkg/objectstore/filesystem"
	"github.com/salvor-dev/salvor/pkg/objectstore/s3"
	"github.com/salvor-dev/salvor/pkg/plugin/sdk"
	"github.com/salvor-dev/salvor/pkg/snapshot/localvolume"
)

// Server returns the SDK server with every built-in plugin registered.
func Server() *sdk.Server {
	return sdk.NewServer().
		RegisterObjectStore(filesystem.Name, filesystem.New).
		RegisterObjectStore(s3.Name, s3.New).
		RegisterVolumeSnapshotterV2(localvolume.Name, localvolume.NewV2).
		RegisterBackupItemActionV2(csiplugin.Name, csiplugin.NewBackupAction).
		RegisterRestoreItemActionV2(csiplugin.Name, csiplugin.NewRestoreAction).
		RegisterDeleteItemAction(csiplugin.Name, csiplugin.NewDeleteAction).
		RegisterBackupItemActionV2(podvolumeplugin.Name, podvolumeplugin.NewBackupAction).
		RegisterRestoreItemActionV2(podvolumeplugin.Name, podvolumeplugin.NewRestoreAction)
}

// NewCommand returns `salvor run-plugins`.
func NewCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "run-plugins",
		Short: "Serve Salvor's built-in plugins (started by the server, not by hand)",
		Long: `Serves the plugins built into the salvor binary — the salvor.dev/filesystem
and salvor.dev/s3 object stores, the salvor.dev/local-volume snapshotter and
the salvor.dev/csi actions (CSI volume snapshots) and the salvor.dev/pod-volumes
action (file-system backup of pod volumes) —
over the plugin protocol. The server starts
this command itself, like any plugin binary; it speaks only to a plugin host
and refuses to run otherwise.`,
		Example: `  salvor plugin list --plugin-dir DIR   # lists them alongside DIR's plugins`,
		// The host passes its own flags (--log-level, --features, ...);
		// the SDK reads those it knows and ignores the rest.
		DisableFlagParsing: true,
		RunE: func(*cobra.Command, []string) error {
			Server().Serve()
			return nil
		},
	}
}
