package cli

import (
	"github.com/spf13/cobra"

	"github.com/salvor-dev/salvor/internal/cli/backup"
	"github.com/salvor-dev/salvor/internal/cli/install"
	"github.com/salvor-dev/salvor/internal/cli/kube"
	"github.com/salvor-dev/salvor/internal/cli/location"
	"github.com/salvor-dev/salvor/internal/cli/plugin"
	"github.com/salvor-dev/salvor/internal/cli/restore"
	"github.com/salvor-dev/salvor/internal/cli/runplugins"
	"github.com/salvor-dev/salvor/internal/cli/schedule"
	"github.com/salvor-dev/salvor/internal/cli/server"
	"github.com/salvor-dev/salvor/internal/cli/snapshotlocation"
	"github.com/salvor-dev/salvor/internal/cli/version"
)

// NewRootCommand returns the salvor command with every subcommand.
func NewRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "salvor",
		Short: "Back up and restore Kubernetes objects and volumes",
		Long: `Salvor backs up a cluster's objects and volumes to object storage and
restores them, extended by plugins that speak Velero's plugin protocol.`,
		SilenceUsage: true,
	}
	k := &kube.Options{}
	k.AddFlags(root.PersistentFlags())
	root.AddCommand(
		backup.NewCommand(k),
		location.NewCommand(k),
		install.NewCommand(k),
		install.NewUninstallCommand(k),
		restore.NewCommand(k),
		schedule.NewCommand(k),
		snapshotlocation.NewCommand(k),
		plugin.NewCommand(),
		server.NewCommand(k),
		runplugins.NewCommand(),
		version.NewCommand(k),
	)
	strict(root)
	return root
}
