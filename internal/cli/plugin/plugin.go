package plugin

import "github.com/spf13/cobra"

// NewCommand returns `salvor plugin` and its verbs.
func NewCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "plugin",
		Short: "Work with plugin binaries",
	}
	cmd.AddCommand(newListCommand())
	return cmd
}
