package cli

import (
	"github.com/spf13/cobra"

	"github.com/salvor-dev/salvor/internal/cli/plugin"
	"github.com/salvor-dev/salvor/internal/cli/runplugins"
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
	root.AddCommand(plugin.NewCommand(), runplugins.NewCommand())
	return root
}
