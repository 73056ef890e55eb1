package plugin

import (
	"cmp"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/salvor-dev/salvor/internal/cli/kube"
	"github.com/salvor-dev/salvor/internal/cli/output"
	"github.com/salvor-dev/salvor/internal/cli/version"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// newGetCommand is `velero plugin get`: the plugins the running server
// has, where `list` starts the binaries of a directory on this machine.
func newGetCommand(k *kube.Options) *cobra.Command {
	var format output.Format
	timeout := 10 * time.Second
	cmd := &cobra.Command{
		Use:   "get",
		Short: "List the plugins the server runs",
		Long: `Asks the server that handles Salvor's namespace (with a ServerStatusRequest)
which plugins it runs, built in and from its plugin directory, and prints
each one's name and kind.`,
		Example: "  salvor plugin get\n  salvor plugin get -o json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := format.Validate(); err != nil {
				return err
			}
			status, err := version.AskServer(cmd.Context(), k, timeout)
			if err != nil {
				return err
			}
			plugins := slices.Clone(status.Plugins)
			slices.SortFunc(plugins, func(a, b salvorv1.PluginInfo) int {
				return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Kind, b.Kind))
			})
			if plugins == nil {
				plugins = []salvorv1.PluginInfo{}
			}
			if done, err := format.Structured(cmd.OutOrStdout(), plugins); done {
				return err
			}
			rows := make([][]string, 0, len(plugins))
			for _, p := range plugins {
				rows = append(rows, []string{p.Name, p.Kind})
			}
			return output.Table(cmd.OutOrStdout(), []string{"NAME", "KIND"}, rows)
		},
	}
	output.AddFlag(cmd.Flags(), &format)
	cmd.Flags().DurationVar(&timeout, "timeout", timeout, "how long to wait for the server's answer")
	return cmd
}
