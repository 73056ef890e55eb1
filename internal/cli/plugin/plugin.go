package plugin

import (
	"github.com/spf13/cobra"

	"github.com/salvor-dev/salvor/internal/cli/kube"
)

// NewCommand returns `salvor plugin` and its verbs.
func NewCommand(k *kube.Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "plugin",
		Aliases: []string{"plugins"},
		Short:   "Work with plugins: those the server runs, and those a directory's binaries serve",
	}
	cmd.AddCommand(newGetCommand(k), newListCommand(), newAddCommand(k), newRemoveCommand(k))
	return cmd
}
